import BotsiRestore
import BotsiTestSupport
import Foundation
import Glibc
import Testing

@Suite struct APIKeySourceTests {
    static let key = "sk_test_51HqLyjWDarjtT1zdp7dc"

    private func load(_ source: APIKeySource, _ environment: [String: String] = [:]) -> Result<String, APIKeyError> {
        Result { () throws(APIKeyError) in try source.load(environment: environment) }
    }

    private func refusal(_ source: APIKeySource, _ environment: [String: String] = [:]) -> String {
        guard case .failure(let error) = load(source, environment) else { return "" }
        return error.message
    }

    @Test func theEnvironmentVariableIsReadAndTrimmed() throws {
        #expect(try load(.environment(variable: "K"), ["K": " \(Self.key)\n"]).get() == Self.key)
        #expect(refusal(.environment(variable: "K")).contains("export it as K"))
        #expect(refusal(.environment(variable: "K"), ["K": " \n"]).contains("is empty"))
    }

    /// The reproduction: `--key-env PATH` sent the PATH to the server as the key.
    @Test(arguments: [
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "/root", "/home/ops", "~/keys", "bin:/usr/bin",
    ])
    func aPathIsNotAKey(value: String) {
        let message = refusal(.environment(variable: "PATH"), ["PATH": value])
        #expect(message.contains("holds a path or a list of paths, not an API key"), "\(message)")
        #expect(message.contains("--key-env BOTSI_SECRET_KEY"))
        #expect(!message.contains(value), "the value itself is never shown")
    }

    @Test(arguments: [0o600, 0o400] as [mode_t])
    func aPrivateKeyFileOwnedByTheUserIsReadOnce(mode: mode_t) throws {
        let directory = Workspace()
        let path = directory.write("key", Self.key + "\n", mode: mode)
        #expect(try load(.file(path: path)).get() == Self.key)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o700, 0o4600] as [mode_t])
    func aKeyFileOthersCouldReadOrChangeIsRefused(mode: mode_t) {
        let directory = Workspace()
        let path = directory.write("key", Self.key, mode: 0o600)
        chmod(path, mode)
        let message = refusal(.file(path: path))
        #expect(message.contains("has mode \(String(mode, radix: 8))") && message.contains("chmod 600"), "\(message)")
        #expect(!message.contains(Self.key))
    }

    @Test func aSymbolicLinkADirectoryAndAFIFOAreRefusedWithoutHanging() throws {
        let directory = Workspace()
        let target = directory.write("real-key", Self.key, mode: 0o600)
        symlink(target, directory.file("link"))
        #expect(refusal(.file(path: directory.file("link"))).contains("is a symbolic link"))
        #expect(refusal(.file(path: directory.path)).contains("is not a regular file"))
        mkfifo(directory.file("fifo"), 0o600)
        #expect(refusal(.file(path: directory.file("fifo"))).contains("is not a regular file"))
        #expect(refusal(.file(path: directory.file("missing"))).contains("does not exist"))
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give the file to another user"))
    func aKeyFileOwnedByAnotherUserIsRefused() {
        let directory = Workspace()
        let path = directory.write("key", Self.key, mode: 0o600)
        chown(path, 65534, 65534)
        let message = refusal(.file(path: path))
        #expect(message.contains("belongs to uid 65534"), "\(message)")
        #expect(!message.contains(Self.key))
    }

    @Test func aKeyFileHoldsOneLineOfKeyAndNothingElse() {
        let directory = Workspace()
        let cases: [(String, String)] = [
            ("", "is empty"), ("\n\n", "is empty"), ("\(Self.key)\nsecond line\n", "more than one line"),
            ("/root/.botsi-key\n", "holds a path"), (String(repeating: "k", count: 5000), "larger than 4096 bytes"),
        ]
        for (index, (content, expected)) in cases.enumerated() {
            let path = directory.write("key-\(index)", content, mode: 0o600)
            #expect(refusal(.file(path: path)).contains(expected), "\(content.prefix(20).debugDescription)")
        }
        let invalid = directory.file("binary")
        _ = FileManager.default.createFile(
            atPath: invalid, contents: Data([0xFF, 0xFE, 0x00]), attributes: [.posixPermissions: 0o600])
        #expect(refusal(.file(path: invalid)).contains("is not UTF-8 text"))
    }

    /// The limit is inclusive, and a key without a final newline is read to its last byte.
    @Test func aKeyFileOfExactly4096BytesIsReadWhole() throws {
        let directory = Workspace()
        let longest = String(repeating: "k", count: 4096)
        #expect(try load(.file(path: directory.write("key", longest, mode: 0o600))).get() == longest)
        #expect(refusal(.file(path: directory.write("over", longest + "k", mode: 0o600))).contains("larger than 4096"))
    }

    /// A file can hold more than its size says: procfs reports 0 for a process's environ. The read itself
    /// stops past 4096 bytes, so the size check is not the only bound.
    @Test func aKeyFileLargerThanItsReportedSizeIsStillRefusedPast4096Bytes() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        child.environment = ["K": String(repeating: "k", count: 5000)]
        try child.run()
        defer {
            // SIGKILL: SIGTERM may be ignored, as the test process passes on what it ignores.
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        let path = "/proc/\(child.processIdentifier)/environ"
        // `run()` returns once the child is spawned, maybe before its exec: until then its environ
        // reads empty (CI saw "is empty" on a loaded machine). Wait until it holds the 5000 bytes.
        let deadline = Date().addingTimeInterval(10)
        while (FileManager.default.contents(atPath: path)?.count ?? 0) <= 4096 && Date() < deadline {
            usleep(10_000)
        }
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_size == 0, "procfs reports no size")
        #expect(refusal(.file(path: path)).contains("larger than 4096 bytes"), "\(refusal(.file(path: path)))")
    }
}
