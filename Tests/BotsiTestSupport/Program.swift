import Dispatch
import Foundation
import Synchronization

/// What a program left behind when it ended.
public struct ProgramResult: Sendable {
    public let command: String
    public let status: Int32
    public let outputBytes: Data
    public let errorBytes: Data

    public var output: String { String(decoding: outputBytes, as: UTF8.self) }
    public var error: String { String(decoding: errorBytes, as: UTF8.self) }

    /// Itself when the program exited 0; otherwise an error naming it, its status and its stderr.
    @discardableResult
    public func requireSuccess() throws -> ProgramResult {
        guard status == 0 else { throw TestSupportError("\(command) exited with \(status): \(error)") }
        return self
    }
}

/// What went wrong in a test helper (a tool that failed, a socket that would not bind), as a sentence.
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a program to its end (a tool a test needs: gzip, sqlite3, openssl, mount), reading both
/// pipes while it runs so a full pipe cannot stall it. Its stdin is the file `input`, or empty.
/// Programs that run beside a test (servers, the binary under test) are started by their tests.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: String? = nil
) throws -> ProgramResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    if let input {
        guard let handle = FileHandle(forReadingAtPath: input) else { throw TestSupportError("cannot read \(input)") }
        process.standardInput = handle
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let errorData = PipeDrain(error.fileHandleForReading)
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProgramResult(
        command: ([executable] + arguments).joined(separator: " "), status: process.terminationStatus,
        outputBytes: outputData, errorBytes: errorData.wait())
}

/// The sqlite3 shell, for edits and reads the journal API rightly does not offer.
public enum SQLiteTool {
    /// Runs `sql` on the database at `path` and returns what it printed; throws when sqlite3 fails.
    @discardableResult
    public static func execute(_ path: String, _ sql: String) throws -> String {
        try runProgram("/usr/bin/sqlite3", [path, sql]).requireSuccess().output
    }
}

/// Reads a pipe to its end on another thread.
private final class PipeDrain: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let data = Mutex<Data>(Data())

    init(_ handle: FileHandle) {
        DispatchQueue.global().async { [self] in
            let bytes = handle.readDataToEndOfFile()
            data.withLock { $0 = bytes }
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data.withLock { $0 }
    }
}
