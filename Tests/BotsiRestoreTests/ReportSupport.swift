import BotsiJournal
import BotsiRestore
import BotsiSimulator
import Dispatch
import Foundation
import Synchronization
import Testing

/// A temporary directory for one test, removed when the test ends.
final class OpsDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "botsi-ops-tests-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ text: String, mode: Int16 = 0o600) -> String {
        try! text.write(toFile: file(name), atomically: false, encoding: .utf8)
        chmod(file(name), mode_t(mode))
        return file(name)
    }

    @discardableResult
    func csv(_ name: String, _ rows: [(String, String)]) -> String {
        write(name, "profileId,originalTransactionId\n" + rows.map { "\($0.0),\($0.1)\n" }.joined())
    }
}

/// Runs a job through the real `Runner` against `baseURL`, with quick retries.
func runJob(
    _ inputs: [String], journal: String, baseURL: String, configure: (inout RunOptions) -> Void = { _ in }
) throws -> RunSummary {
    var options = RunOptions()
    options.inputs = inputs
    options.journalPath = journal
    options.baseURL = baseURL
    options.concurrency = 4
    options.backoffBase = 0.01
    options.backoffCap = 0.05
    options.retryAfterCap = 0.05
    options.timeout = 5
    options.seed = 3
    configure(&options)
    return try Runner(options: options, apiKey: Simulator.defaultKey, toolVersion: "test").run()
}

/// A started simulator that stops when released.
final class RunningSimulator {
    let simulator: Simulator
    var baseURL: String { simulator.baseURL }

    init(configure: (inout SimulatorOptions) -> Void = { _ in }) throws {
        var options = SimulatorOptions()
        configure(&options)
        simulator = Simulator(options: options)
        _ = try simulator.start()
    }

    deinit { simulator.stop() }
}

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

/// The built `botsi-restore` executable, next to the test bundle (swift build builds both).
func botsiRestoreBinary() throws -> String {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidates = [directory, directory.deletingLastPathComponent()].map {
        $0.appendingPathComponent("botsi-restore").path
    }
    let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    return try #require(found, "build the executable first (swift build); looked at \(candidates)")
}
