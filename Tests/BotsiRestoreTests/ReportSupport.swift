import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// Result of running a program to its end.
struct ProgramResult {
    let status: Int32
    let output: String
    let error: String
}

/// Runs a program, reading both pipes while it runs so a full pipe cannot stall it.
func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    directory: String? = nil
) throws -> ProgramResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let errorData = ReadAll(error.fileHandleForReading)
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProgramResult(
        status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
        error: String(decoding: errorData.wait(), as: UTF8.self))
}

/// Drains a pipe on another thread.
final class ReadAll: Sendable {
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
