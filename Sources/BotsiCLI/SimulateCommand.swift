import BotsiJournal
import BotsiRestore
import BotsiSimulator
import Dispatch
import Foundation

enum SimulateCommand {
    static let spec = CommandSpec(
        name: "simulate",
        options: [
            .flag("--help"), .value("--host"), .value("--port"), .value("--latency"), .value("--jitter"),
            .value("--fault-rate"), .value("--faults"), .value("--retry-after"), .value("--seed"),
            .value("--scenario"), .value("--mode"), .value("--limit-rate"), .value("--key", repeatable: true),
            .value("--stall"),
        ],
        takesPositionals: false)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.simulate)
            return ExitCode.success
        }
        let options = try simulatorOptions(parsed)
        let simulator = Simulator(options: options)
        let port: Int
        do {
            port = try simulator.start()
        } catch {
            Output.error("botsi-restore simulate: cannot listen on \(options.host):\(options.port): \(error)")
            return ExitCode.unavailable
        }
        Output.out("simulator listening on http://\(options.host):\(port)")
        Output.out("  restore: POST http://\(options.host):\(port)/v2/purchases/apple-store/restore")
        Output.out("  stats:   GET  http://\(options.host):\(port)/__simulator/stats")
        let stopped = DispatchSemaphore(value: 0)
        let signals = SignalWatcher { _, _ in stopped.signal() }
        stopped.wait()
        signals.cancel()
        simulator.stop()
        let stats = simulator.stats()
        Output.error("simulator stopped after \(stats.requests) restore requests (max \(stats.maxInFlight) in flight)")
        return ExitCode.success
    }

    static func simulatorOptions(_ parsed: ParsedArguments) throws(UsageError) -> SimulatorOptions {
        var options = SimulatorOptions()
        options.port = 8080
        options.host = parsed.value("--host") ?? options.host
        options.port = try parsed.int("--port", in: 0...65535) ?? options.port
        options.latencyMilliseconds = try number(parsed, "--latency", 0...600_000) ?? 0
        options.jitterMilliseconds = try number(parsed, "--jitter", 0...600_000) ?? 0
        options.faultRate = try number(parsed, "--fault-rate", 0...1) ?? 0
        if let list = parsed.value("--faults") {
            options.faults = try list.split(separator: ",").map { (name) throws(UsageError) -> SimulatorFault in
                let trimmed = name.trimmingCharacters(in: .whitespaces)
                guard let fault = SimulatorFault(rawValue: trimmed) else {
                    let known = SimulatorFault.allCases.map(\.rawValue).joined(separator: ",")
                    throw UsageError(message: "unknown fault '\(trimmed)'; choose from \(known)")
                }
                return fault
            }
        }
        options.retryAfterSeconds = try parsed.int("--retry-after", in: 0...86400) ?? options.retryAfterSeconds
        if let stall = try parsed.seconds("--stall") { options.stallSeconds = stall }
        if let seed = parsed.value("--seed") {
            guard let value = UInt64(seed) else { throw UsageError(message: "option '--seed' needs a number") }
            options.seed = value
        }
        if let path = parsed.value("--scenario") {
            do {
                options.scenario = try SimulatorScenario.load(path: path)
            } catch {
                throw UsageError(message: "cannot use scenario \(path): \(error)")
            }
        }
        if let mode = parsed.value("--mode") {
            guard let value = SimulatorMode(rawValue: mode) else {
                throw UsageError(message: "option '--mode' must be normal or no-ios-settings")
            }
            options.mode = value
        }
        options.limitRate = try number(parsed, "--limit-rate", 0.1...1_000_000)
        let keys = parsed.all("--key")
        if !keys.isEmpty { options.keys = keys }
        return options
    }

    private static func number(
        _ parsed: ParsedArguments, _ name: String, _ range: ClosedRange<Double>
    ) throws(UsageError) -> Double? {
        guard let text = parsed.value(name) else { return nil }
        guard let value = Double(text), range.contains(value) else {
            throw UsageError(message: "option '\(name)' needs a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

enum DemoCommand {
    static let spec = CommandSpec(
        name: "demo", options: [.flag("--help"), .value("--keep-journal")], takesPositionals: false)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.demo)
            return ExitCode.success
        }
        guard let sample = samplePath() else {
            Output.error(
                "botsi-restore demo: cannot find demo.csv (in share/botsi-restore beside the binary's bin/, or samples/); reinstall the package or run the demo from the repository root"
            )
            return ExitCode.noInput
        }
        let key = "demo-key-\(UInt32.random(in: 0...UInt32.max))"
        var simulatorOptions = SimulatorOptions()
        simulatorOptions.latencyMilliseconds = 20
        simulatorOptions.jitterMilliseconds = 40
        simulatorOptions.faultRate = 0.15
        simulatorOptions.faults = [.internalError, .badGateway, .unavailable, .reset, .truncated]
        // 429s come the way a real upstream sends them: above a rate, so adaptive throttling shows.
        simulatorOptions.limitRate = 150
        simulatorOptions.retryAfterSeconds = 1
        simulatorOptions.seed = 7
        simulatorOptions.keys = [key]
        let simulator = Simulator(options: simulatorOptions)
        do {
            _ = try simulator.start()
        } catch {
            Output.error("botsi-restore demo: cannot start the simulator: \(error)")
            return ExitCode.unavailable
        }
        defer { simulator.stop() }

        let directory = NSTemporaryDirectory() + "botsi-restore-demo-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let journal = parsed.value("--keep-journal") ?? directory + "/demo.sqlite"
        Output.error(
            "demo: simulator on \(simulator.baseURL) (20–60 ms latency, 15% faults: 5xx, resets, truncated replies; 429 above 150 requests/s)"
        )
        Output.error(
            "demo: botsi-restore run \(sample) --journal \(journal) --base-url \(simulator.baseURL) --concurrency 16\n")

        var options = RunOptions()
        options.inputs = [sample]
        options.journalPath = journal
        options.baseURL = simulator.baseURL
        options.concurrency = 16
        options.backoffBase = 0.05
        options.backoffCap = 1
        options.retryAfterCap = 1
        options.timeout = 5
        let code = RunCommand.execute(options: options, apiKey: key, quiet: false, logInterval: 1)
        if let retried = try? retriedAndRestored(journal: journal), retried > 0 {
            Output.error("\ndemo: \(retried) rows met a fault, were retried, and still ended restored.")
        }
        let command = Installation.commandName
        Output.error("demo: see every row with:  \(command) report --journal \(journal) --format csv")
        Output.error("demo: the rejected rows:   \(command) report --journal \(journal) --status rejected")
        // Rows left pending by the demo's faults are expected; the demo itself succeeded.
        return code == ExitCode.success || code == ExitCode.temporaryFailure ? ExitCode.success : code
    }

    static func retriedAndRestored(journal path: String) throws -> Int {
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        var count = 0
        try journal.forEachReportRecord(ReportFilter(statuses: ["restored"])) { record in
            if record.attempts > 1 { count += 1 }
        }
        return count
    }

    /// samples/demo.csv in the working directory, the copy a package installs, or the checkout
    /// this binary was built from.
    static func samplePath() -> String? {
        let fromWorkingDirectory = FileManager.default.currentDirectoryPath + "/samples/demo.csv"
        if FileManager.default.fileExists(atPath: fromWorkingDirectory) { return "samples/demo.csv" }
        if let installed = Installation.sharedFile("demo.csv") { return installed }
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples/demo.csv").path
        return FileManager.default.fileExists(atPath: checkout) ? checkout : nil
    }
}
