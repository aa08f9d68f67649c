import BotsiTestSupport
import Dispatch
import Foundation
import Testing

/// Where the built `botsi-restore` executable and the package sit.
enum Locations {
    /// The package root: the first folder above this file that holds Package.swift.
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
            url.deleteLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath
    }()

    /// On Linux the test bundle is an executable in the same build folder as `botsi-restore`;
    /// fall back to the package's `.build/debug`.
    static let binary: String? = {
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent().path + "/botsi-restore")
        }
        candidates.append(
            URL(fileURLWithPath: Bundle.main.bundlePath).deletingLastPathComponent().path + "/botsi-restore")
        candidates.append(packageRoot + "/.build/debug/botsi-restore")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}

/// What a finished child left behind.
struct Finished {
    /// The exit status, or the signal number when `killedBySignal`.
    let status: Int32
    let killedBySignal: Bool
    /// True when the child outlived its allowed time and the test killed it.
    let timedOut: Bool
    let stdout: String
    let stderr: String
}

/// A `botsi-restore` child process (or, with `executable`, another program a test drives, such as a
/// shell). stdout and stderr go to files in the workspace, so a chatty child can never block on a
/// full pipe; every wait is bounded and ends in SIGKILL.
final class Child: Sendable {
    let process: Process
    let stdoutPath: String
    let stderrPath: String
    /// The child's stdin while the test holds it open (`holdStdin`); `closeStdin` ends it.
    private let heldStdin: FileHandle?
    private let exited = DispatchSemaphore(value: 0)

    /// The environment children get: the test's own, without any key that happens to be set.
    static func environment(key: String?, variable: String = "BOTSI_SECRET_KEY") -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["BOTSI_SECRET_KEY"] = nil
        if let key { environment[variable] = key }
        return environment
    }

    /// `executable` runs another program (a script, `setpriv`) in place of `botsi-restore`;
    /// `launcher` runs the binary through another program, e.g. `setpriv --reuid=65534 --`.
    init(
        _ arguments: [String], key: String?, in workspace: Workspace, workingDirectory: String? = nil,
        stdin: Data? = nil, holdStdin: Bool = false, environment: [String: String]? = nil, executable: String? = nil,
        asSecondUser: Bool = false, launcher: [String] = []
    ) throws {
        let binary =
            try executable ?? #require(Locations.binary, "botsi-restore is not built; run swift build --build-tests")
        let tag = UUID().uuidString.prefix(8)
        stdoutPath = workspace.file("child-\(tag).stdout")
        stderrPath = workspace.file("child-\(tag).stderr")
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process = Process()
        if asSecondUser {
            process.executableURL = URL(fileURLWithPath: SecondUser.setpriv)
            process.arguments = SecondUser.arguments + [binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: launcher.first ?? binary)
            process.arguments = launcher.isEmpty ? arguments : launcher.dropFirst() + [binary] + arguments
        }
        process.environment = environment ?? Self.environment(key: key)
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory ?? workspace.path)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        if holdStdin {
            let pipe = Pipe()
            process.standardInput = pipe
            heldStdin = pipe.fileHandleForWriting
            try process.run()
        } else if let stdin {
            heldStdin = nil
            let pipe = Pipe()
            process.standardInput = pipe
            try process.run()
            // Fed from another thread: the child may not read it all before the pipe fills.
            let writer = pipe.fileHandleForWriting
            DispatchQueue.global().async {
                // A child that stops reading early closes its end: no crash here (SIGPIPE ignored).
                try? writer.write(contentsOf: stdin)
                try? writer.close()
            }
        } else {
            heldStdin = nil
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }
    }

    /// Writes a little to a held stdin (less than a pipe holds) and keeps it open.
    func writeStdin(_ data: Data) {
        heldStdin?.write(data)
    }

    /// Writes to a held stdin, blocking while the pipe is full; false once the child closed its
    /// end (ignore SIGPIPE first).
    func tryWriteStdin(_ data: Data) -> Bool {
        guard let heldStdin else { return false }
        return (try? heldStdin.write(contentsOf: data)) != nil
    }

    /// Writes `data` to a held stdin and closes it, so the child reads to its end.
    func closeStdin(after data: Data) {
        guard let heldStdin else { return }
        // From another thread: the child may not read it all before the pipe fills. A child that
        // exited first (a stop) makes the write fail, which is no failure of the test.
        DispatchQueue.global().async {
            try? heldStdin.write(contentsOf: data)
            try? heldStdin.close()
        }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the exit; past `timeout` seconds the child is killed and the result says so.
    func wait(timeout: Double = 90) -> Finished {
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 10)
        } else {
            // Keep the semaphore signalled for a later wait.
            exited.signal()
        }
        process.waitUntilExit()
        return Finished(
            status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: Self.read(stdoutPath), stderr: Self.read(stderrPath))
    }

    /// Waits up to `timeout` seconds without killing; true when the child has exited.
    func hasExited(within timeout: Double) -> Bool {
        guard exited.wait(timeout: .now() + timeout) == .success else { return false }
        exited.signal()
        return true
    }

    var stderrSoFar: String { Self.read(stderrPath) }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}

/// Runs `botsi-restore` to the end (bounded by `timeout`).
func botsi(
    _ arguments: [String], key: String?, in workspace: Workspace, workingDirectory: String? = nil,
    stdin: Data? = nil, environment: [String: String]? = nil, timeout: Double = 90, asSecondUser: Bool = false
) throws -> Finished {
    let child = try Child(
        arguments, key: key, in: workspace, workingDirectory: workingDirectory, stdin: stdin, environment: environment,
        asSecondUser: asSecondUser)
    let finished = child.wait(timeout: timeout)
    #expect(
        !finished.timedOut, "botsi-restore \(arguments.joined(separator: " ")) ran past \(timeout) s and was killed")
    return finished
}

/// Polls `condition` for at most `timeout` seconds (`waitUntil` under the name these tests use).
func eventually(timeout: Double, _ condition: () -> Bool) -> Bool {
    waitUntil(seconds: timeout, condition)
}
