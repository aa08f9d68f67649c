import BotsiJournal
import BotsiRestore
import BotsiSimulator

/// Runs a job in-process through the real `Runner` against `baseURL`, with quick retries: the one
/// set of defaults the library tests run with. Tests of the binary use `botsi(...)` in EndToEndTests.
public func runJob(
    _ inputs: [String], journal: String, baseURL: String, key: String = Simulator.defaultKey,
    configure: (inout RunOptions) -> Void = { _ in }
) throws -> RunSummary {
    var options = RunOptions()
    options.inputs = inputs
    options.journalPath = journal
    options.baseURL = baseURL
    options.concurrency = 8
    options.backoffBase = 0.01
    options.backoffCap = 0.05
    options.retryAfterCap = 0.05
    // Generous: sanitizer builds run many times slower; tests that need a timeout set their own.
    options.timeout = 30
    options.seed = 11
    configure(&options)
    return try Runner(options: options, apiKey: key, toolVersion: "test").run()
}

/// A workspace and a started simulator, runs against it, and what the tests look at afterwards.
public struct Harness {
    public let scratch = Workspace()
    public let simulator: Simulator

    public init(configure: (inout SimulatorOptions) -> Void = { _ in }) throws {
        simulator = try startSimulator(configure)
    }

    public var journalPath: String { scratch.journal }

    public func run(
        _ inputs: [String], key: String = Simulator.defaultKey, configure: (inout RunOptions) -> Void = { _ in }
    ) throws -> RunSummary {
        try runJob(inputs, journal: journalPath, baseURL: simulator.baseURL, key: key, configure: configure)
    }

    public func records(_ filter: ReportFilter = ReportFilter()) throws -> [ReportRecord] {
        let journal = try Journal(path: journalPath, create: false, readOnly: true)
        defer { journal.close() }
        var records: [ReportRecord] = []
        try journal.forEachReportRecord(filter) { records.append($0) }
        return records
    }

    public func record(_ profile: String, _ transaction: String) throws -> ReportRecord? {
        try records().first { $0.profileId == profile && $0.originalTransactionId == transaction }
    }

    public func requests(_ profile: String, _ transaction: String) -> Int {
        simulator.stats().pairs.first { $0.profileId == profile && $0.originalTransactionId == transaction }?
            .requests ?? 0
    }
}
