import Foundation

/// A temporary directory for one test, removed when the test lets go of it: the one such helper
/// every test target uses.
public final class Workspace: Sendable {
    public let path: String

    public init() {
        path = NSTemporaryDirectory() + "botsi-tests-\(UUID().uuidString)"
        mkdir(path, 0o755)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }

    /// Where a test's journal goes unless it names another.
    public var journal: String { file("journal.sqlite") }

    /// Writes `text` to `name`, private to the owner unless `mode` says otherwise (tests write
    /// keys too, which the tool refuses when others may read them).
    @discardableResult
    public func write(_ name: String, _ text: String, mode: mode_t = 0o600) -> String {
        write(name, Array(text.utf8), mode: mode)
    }

    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8], mode: mode_t = 0o600) -> String {
        let path = file(name)
        precondition(
            FileManager.default.createFile(atPath: path, contents: Data(bytes)), "cannot write the test file \(path)")
        chmod(path, mode)
        return path
    }

    /// A CSV input of `(profileId, originalTransactionId)` rows with the usual header.
    @discardableResult
    public func csv(_ name: String = "in.csv", rows: [(String, String)]) -> String {
        write(name, "profileId,originalTransactionId\n" + rows.map { "\($0.0),\($0.1)\n" }.joined())
    }

    public func bytes(_ name: String) -> Data? { FileManager.default.contents(atPath: file(name)) }

    public func text(_ name: String) -> String? { bytes(name).map { String(decoding: $0, as: UTF8.self) } }

    /// The names in the directory, for tests that check what was (not) left behind.
    public var names: Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []) }
}
