import BotsiBasics
import BotsiFiles
import BotsiJournal
import BotsiRestore
import BotsiSimulator
import Dispatch
import Foundation

/// What `simulate`'s options fill in.
struct SimulateSettings {
    var options: SimulatorOptions = {
        var options = SimulatorOptions()
        options.port = 8080
        return options
    }()
    var scenario: String?
    /// Replace the simulator's default key once one is given.
    var keys: [String] = []
}

enum SimulateCommand: Command {
    static let name = "simulate"
    static let summary = "serve a local Botsi restore API for rehearsals"
    static let synopsis = "[options]"
    static let discussion = """
        Serves POST /v2/purchases/apple-store/restore (on loopback unless --host says otherwise), behaving
        as Botsi documents, for rehearsals and tests. GET /__simulator/stats returns counts (?pairs=1 with
        an accepted key lists every pair). Stops on SIGINT/SIGTERM.
        """
    static let epilogue = """
        Exit status: 0 stopped by SIGINT/SIGTERM; 64 usage (an option, a scenario file); 69 cannot listen
        (the port is in use: pick another with --port, or 0 for a free one). See docs/simulator.md for
        scenario files, faults and stats.
        """

    static func initialSettings() -> SimulateSettings { SimulateSettings() }

    static func run(_ settings: SimulateSettings) throws -> Int32 {
        var options = settings.options
        if !settings.keys.isEmpty { options.keys = settings.keys }
        if let path = settings.scenario {
            do {
                options.scenario = try SimulatorScenario.load(path: path)
            } catch {
                throw UsageError(message: "cannot use scenario \(path): \(error)")
            }
        }
        do {
            try options.validate()
        } catch {
            throw UsageError(message: error.message)
        }
        if let warning = options.exposureWarning { Output.error("botsi-restore simulate: \(warning)") }
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
}

enum DemoCommand: Command {
    static let name = "demo"
    static let summary = "run the bundled sample against the simulator"
    static let synopsis = "[options]"
    static let discussion = """
        Starts the simulator on a free port with some faults and latency, runs the bundled sample
        through the real run path with a throw-away journal, and shows the progress and summary.
        """

    /// `--keep-journal PATH`, or nil for a throw-away journal.
    static func initialSettings() -> String? { nil }

    static func run(_ keepJournal: String?) throws -> Int32 {
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

        // A fresh directory only we can enter: a name taken from the pid could be prepared by anyone.
        // A kept journal has its page beside it and needs none (nothing is left behind in TMPDIR).
        let journal: String
        let page: String
        if let keepJournal {
            journal = keepJournal
            page = HTMLReportAdvice.pagePath(forJournal: keepJournal)
        } else {
            do {
                let directory = try Files.makePrivateDirectory(prefix: "botsi-restore-demo")
                journal = directory + "/demo.sqlite"
                page = directory + "/demo.html"
            } catch {
                Output.error("botsi-restore demo: \(error.description)")
                return ExitCode.cannotCreate
            }
        }
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
        if [ExitCode.temporaryFailure, ExitCode.interrupted, ExitCode.terminated].contains(code) {
            // The command the summary gives to go on sends to this simulator, which ends with the demo.
            Output.error(
                "\ndemo: the simulator at \(simulator.baseURL) stops with the demo, so the command above finds nothing "
                    + "there; run the demo again"
                    + (keepJournal == nil
                        ? " (with --keep-journal PATH its journal is kept, and the demo after goes on from it)"
                        : " with the same --keep-journal: it sends only what is left"))
        }
        if let retried = try? retriedAndRestored(journal: journal), retried > 0 {
            Output.error("\ndemo: \(retried) rows met a fault, were retried, and still ended restored.")
        }
        let command = Installation.commandName
        Output.error("demo: see every row with:  \(command) report --journal \(journal) --format csv")
        Output.error("demo: the rejected rows:   \(command) report --journal \(journal) --status rejected")
        writePage(journal: journal, page: page, command: command)
        // Rows left pending by the demo's faults are expected; the demo itself succeeded.
        return code == ExitCode.success || code == ExitCode.temporaryFailure ? ExitCode.success : code
    }

    /// The run as a page (beside a kept journal, else in the demo's directory), and where it is.
    static func writePage(journal: String, page: String, command: String) {
        var settings = ReportSettings()
        settings.journal = journal
        settings.html = true
        settings.output = page
        guard (try? ReportCommand.html(settings)) == ExitCode.success else { return }
        Output.error("demo: the run as a page:   \(page)  (open it in a browser; it loads nothing from anywhere)")
        let remake = HTMLReportAdvice.command(journalPath: journal, output: page)
        Output.error("demo: made by:             " + command + remake.dropFirst("botsi-restore".count))
    }

    static func retriedAndRestored(journal path: String) throws -> Int {
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        var count = 0
        try journal.forEachReportRecord(ReportFilter(statuses: [ItemStatus.restored.rawValue])) { record in
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
