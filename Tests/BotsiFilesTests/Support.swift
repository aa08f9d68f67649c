import BotsiBasics
import Foundation
import Synchronization
import Testing

@testable import BotsiFiles

/// The permission bits of what `path` names, links not followed.
func permissions(_ path: String) -> mode_t? {
    var status = stat()
    return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
}

/// Notices the module posted, collected from the first call of `collectNotices()` on (the handler
/// is process-wide: tests look only for notices that name their own files).
private let collected = Mutex<[String]>([])
private let collecting: Bool = {
    Notices.install { notice in collected.withLock { $0.append(notice.message) } }
    return true
}()

func collectNotices() { _ = collecting }

func noticesNaming(_ path: String) -> [String] {
    collected.withLock { $0.filter { $0.contains(path) } }
}

enum Root {
    static var isRoot: Bool { geteuid() == 0 }
    static let otherUser: uid_t = 65534
}

extension Trait where Self == ConditionTrait {
    static var needsRoot: Self {
        .enabled(if: Root.isRoot, "needs root to chown files to another user or make devices (CI runs as root)")
    }
}

/// Asserts `body` throws a `FileError` of `kind` whose message contains `phrase`.
func expectRefusal(
    _ phrase: String, kind: FileError.Kind = .refused, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected a refusal containing '\(phrase)'", sourceLocation: sourceLocation)
    } catch let error as FileError {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(phrase), "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
