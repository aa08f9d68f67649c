import BotsiAPI
import BotsiBasics
import BotsiFiles
import BotsiRestore
import Dispatch
import Foundation
import Synchronization

/// What `run`'s options fill in: the runner's options and how this process reports.
struct RunSettings: Equatable {
    var options = RunOptions()
    var job: String?
    var quiet = false
    var logInterval: Double = 30
    var logFormat = LogFormat.text
    var maxDuration: Double?
    var stopAt: ClockTime?
    /// `--metrics-file`, `--metrics-push`: Prometheus metrics (see MetricsReporter).
    var metricsFile: String?
    var metricsPush: String?
    /// `--shard`, resolved (for `auto`, from the environment) when the run starts.
    var shard: ShardSpec?
}

enum RunCommand: Command {
    static let name = "run"
    static let summary = "restore every pair in the inputs and what the journal owes"
    static let synopsis = "[INPUT ...] [options]"
    static let jobFileOption: String? = "--job"
    static let discussion = """
        Sends every (profileId, originalTransactionId) pair of the inputs to
        POST {base-url}/v2/purchases/apple-store/restore and journals each outcome. First, oldest first,
        it sends the rows the journal owes: those earlier runs left pending (and, with the options below,
        failed or aged ones). With no INPUT it sends only those; it exits 0 saying so when none is owed.
        """
    static let epilogue = """
        Exit status: 0 every row final; 64 usage; 65 input unusable, or every row read (or every row
        of one input) rejected; 66 input, job file or journal missing; 69 TLS failure or failure
        threshold; 71 a local resource ran out (memory, descriptors, a thread); 73 journal unusable;
        75 rows remain pending, the time window ended, or the journal is in use; 77 key refused; 78
        App Store connection not set up in Botsi; 129/130/143 stopped by SIGHUP/SIGINT/SIGTERM.
        """

    static func initialSettings() -> RunSettings { RunSettings() }

    static func run(_ settings: RunSettings) throws -> Int32 {
        let options: RunOptions
        let apiKey: String
        do {
            options = try runOptions(settings, now: Date())
            // From here on the process holds the key: no core dump, no ptrace, no /proc/<pid>/environ for others.
            protectProcessHoldingTheKey()
            // A dry run checks the key as the real run would (it sends nothing with it).
            apiKey = try loadKey(options.keySource)
        } catch {
            guard settings.logFormat == .json else { throw error }
            // A job that logs JSON gets its likeliest failure, a key not set, as JSON like the rest.
            ProgressPrinter.writeJSON([
                "event": "error", "message": "botsi-restore run: \(error.message)", "exitCode": Int(ExitCode.usage),
            ])
            return ExitCode.usage
        }
        return execute(
            options: options, apiKey: apiKey, quiet: settings.quiet, logInterval: settings.logInterval,
            logFormat: settings.logFormat, metricsFile: settings.metricsFile, metricsPush: settings.metricsPush)
    }

    static func loadKey(_ source: APIKeySource) throws(UsageError) -> String {
        do {
            return try source.load()
        } catch {
            throw UsageError(message: error.message)
        }
    }

    /// The runner's options once the inputs are checked and the time window is turned into a
    /// deadline.
    static func runOptions(_ settings: RunSettings, now: Date) throws(UsageError) -> RunOptions {
        var options = settings.options
        // No input files: the run sends what the journal owes (and says so when nothing is).
        if options.inputs.filter({ $0 == "-" }).count > 1 {
            throw UsageError(message: "stdin (-) can be read only once")
        }
        // A --key-env other than the default contradicts --key-file.
        if options.keyFile != nil && options.keyEnvironmentVariable != RunOptions().keyEnvironmentVariable {
            throw UsageError(message: "give the key with --key-env or with --key-file, not both")
        }
        if options.answeredBefore != nil && !options.retryFailed && options.refreshOlderThan == nil {
            throw UsageError(
                message: "--answered-before narrows --retry-failed or --refresh-older-than; give one of them with it")
        }
        if options.proxy != nil && options.noProxy {
            throw UsageError(message: "--proxy and --no-proxy contradict each other; give one")
        }
        try checkColumnPositions(options)
        try checkMetricsOptions(settings)
        if let shard = settings.shard {
            do {
                (options.shardIndex, options.shardCount) = try shard.resolve(
                    environment: ProcessInfo.processInfo.environment)
            } catch {
                throw UsageError(message: error.message)
            }
        }
        options.advisesAbsolutePaths = settings.job != nil
        options.deadline = deadline(maxDuration: settings.maxDuration, stopAt: settings.stopAt, now: now)
        options.maxDuration = settings.maxDuration
        options.stopAt = settings.stopAt.map { $0.text }
        return options
    }

    /// A metrics file that could never be written, or would replace the journal or an input, is
    /// refused before the run, not warned about after it.
    static func checkMetricsOptions(_ settings: RunSettings) throws(UsageError) {
        if let file = settings.metricsFile {
            let protected = MetricsReporter.protectedFiles(
                journal: settings.options.journalPath, inputs: settings.options.inputs)
            do {
                _ = try OutputFile.checkTarget(file, role: "metrics file", protecting: protected)
            } catch {
                throw UsageError(message: error.message)
            }
        }
        if let push = settings.metricsPush, !(push.hasPrefix("http://") || push.hasPrefix("https://")) {
            throw UsageError(
                message:
                    "--metrics-push takes the Pushgateway's http:// or https:// URL (e.g. http://pushgateway:9091), "
                    + "not '\(push)'")
        }
    }

    /// Without a header the column options are 1-based positions, and two different ones.
    static func checkColumnPositions(_ options: RunOptions) throws(UsageError) {
        guard options.noHeader else { return }
        var positions: [Int] = []
        for (option, value, fallback) in [
            ("--profile-column", options.profileColumn, 1), ("--transaction-column", options.transactionColumn, 2),
        ] {
            guard let value else {
                positions.append(fallback)
                continue
            }
            guard let position = Int(value), position >= 1 else {
                throw UsageError(
                    message:
                        "with --no-header, option '\(option)' takes a 1-based column position such as 1 or 2, not '\(value)'"
                )
            }
            positions.append(position)
        }
        guard positions[0] != positions[1] else {
            throw UsageError(
                message: "with --no-header, --profile-column and --transaction-column must name different columns")
        }
    }

    /// The earlier of --max-duration from now and the next local --stop-at HH:MM.
    static func deadline(maxDuration: Double?, stopAt: ClockTime?, now: Date) -> Date? {
        var deadline = maxDuration.map { now.addingTimeInterval($0) }
        if let stopAt {
            let next =
                Calendar.current.nextDate(
                    after: now, matching: DateComponents(hour: stopAt.hour, minute: stopAt.minute, second: 0),
                    matchingPolicy: .nextTime) ?? now
            deadline = min(deadline ?? next, next)
        }
        return deadline
    }

    /// Runs with signal handling and progress output; shared by `run` and `demo`.
    static func execute(
        options: RunOptions, apiKey: String, quiet: Bool, logInterval: Double, logFormat: LogFormat = .text,
        metricsFile: String? = nil, metricsPush: String? = nil
    ) -> Int32 {
        let printer = ProgressPrinter(
            isTerminal: Output.stderrIsTerminal && logFormat == .text, quiet: quiet, logInterval: logInterval,
            format: logFormat)
        let metrics = MetricsReporter(
            file: metricsFile, pushURL: metricsPush, options: options, interval: logInterval
        ) { @Sendable warning in printer.event("warning", message: warning) }
        var onProgress: (@Sendable (RunProgress) -> Void)?
        if !quiet || metrics != nil {
            onProgress = { @Sendable progress in
                if !quiet { printer.show(progress) }
                metrics?.progress(progress)
            }
        }
        // The route to the server, TLS warnings, a capped Retry-After, a journal made private: said as
        // they happen, through the printer (in the log format) until the run ends.
        let outer = Notices.install { notice in
            guard notice.kind == .warning || !quiet else { return }
            printer.event(notice.kind == .warning ? "warning" : "notice", message: notice.message)
        }
        defer { Notices.install(outer) }
        var options = options
        if let refused = fitToDescriptorLimit(&options, printer: printer) {
            metrics?.finish(summary: nil, exitCode: refused)
            return refused
        }
        if options.onConflict == .hold && options.shardCount > 1 && !options.dryRun {
            Notices.post(Notice(.warning, "botsi-restore: \(RunCommand.holdAcrossShards)"))
        }
        // A dry run lists on stdout, as CSV, each request it would make (the summary stays on stderr).
        let listing = options.dryRun ? WouldSendListing() : nil
        var onWouldSend: (@Sendable (WouldSend) -> Void)?
        if let listing { onWouldSend = { listing.add($0) } }
        let runner = Runner(
            options: options, apiKey: apiKey, toolVersion: CLI.version, progressInterval: printer.tickInterval,
            onProgress: onProgress, onWouldSend: onWouldSend)
        let signals = SignalWatcher { signal, count in
            if count == 1 {
                printer.event(
                    "stopping",
                    message: "stopping — letting in-flight requests finish; send the signal again to exit at once")
                runner.requestStop(signal: signal)
            } else {
                // The journal stays consistent: SQLite rolls back the unfinished batch, whose rows
                // stay in flight and are sent again next time.
                _exit(ExitCode.stopped(by: signal))
            }
        }
        defer { signals.cancel() }
        do {
            let summary = try runner.run()
            listing?.finish(listed: true)
            printer.finish()
            printer.summary(
                summary,
                journalPath: options.advisesAbsolutePaths
                    ? RunAdvice.realPath(options.journalPath) : options.journalPath)
            metrics?.finish(summary: summary, exitCode: summary.exitCode)
            return summary.exitCode
        } catch {
            listing?.finish(listed: false)
            printer.event("error", message: "botsi-restore run: \(error.message)", exitCode: error.exitCode)
            metrics?.finish(summary: nil, exitCode: error.exitCode)
            return error.exitCode
        }
    }
}

extension RunCommand {
    /// Shards split the input by profileId, so the claims of one transaction meet in different
    /// journals, and each shard's check sees its own.
    static let holdAcrossShards =
        "--on-conflict hold sees this shard's journal only: shards split the rows by profileId, so a "
        + "transaction that profiles on other shards claim too is sent there as well; after the job, merge "
        + "the shards and check 'report --conflicts' (or find conflicts first with one unsharded --dry-run)"

    /// Fits `--concurrency` to the descriptor limit (ulimit -n), saying so once; past the limit
    /// every connection would fail like a server that refuses. Returns 71 (said) when not even one
    /// connection fits beside what a run holds.
    static func fitToDescriptorLimit(_ options: inout RunOptions, printer: ProgressPrinter) -> Int32? {
        let inputs = options.inputs.count
        switch DescriptorBudget.fit(concurrency: options.concurrency, inputs: inputs) {
        case .fits:
            return nil
        case .lowered(let concurrency, let limit):
            let wanted = DescriptorBudget.needed(concurrency: options.concurrency, inputs: inputs)
            // A warning: the run does not do what was asked, which --quiet must not hide.
            Notices.post(
                Notice(
                    .warning,
                    "botsi-restore: this process may open at most \(limit) files (ulimit -n), enough for "
                        + "\(concurrency) requests at a time: sending at most \(concurrency) instead of --concurrency "
                        + "\(options.concurrency) (for that many, raise it to ulimit -n \(wanted))"))
            options.concurrencyAsked = options.concurrency
            options.concurrency = concurrency
            return nil
        case .tooLow(let limit, let needed):
            printer.event(
                "error",
                message: "botsi-restore run: this process may open at most \(limit) files (ulimit -n), fewer than a "
                    + "run needs (\(needed): the journal and its files, the inputs, the client and one connection); "
                    + "nothing was sent — raise the limit (ulimit -n \(needed) or more) and run again",
                exitCode: ExitCode.osError)
            return ExitCode.osError
        }
    }
}

/// SIGHUP/SIGINT/SIGTERM through Dispatch, counting how many arrived. Signals within `sameStop` of the
/// first are that one stop asked again, not a second: a stop often arrives twice at once (a TERM
/// to the process group beside the cron wrapper's forward of its own, systemd's TERM to the whole
/// control group beside a wrapper's), and a second signal means "exit at once", without the drain.
final class SignalWatcher {
    static let sameStop: UInt64 = 500_000_000
    private let sources: [DispatchSourceSignal]
    private let queue = DispatchQueue(label: "botsi-restore.signals")

    init(handler: @escaping @Sendable (Int32, Int) -> Void) {
        let counter = Counter()
        let queue = self.queue
        // A closed stderr or stdout (`| head`, `| tee` killed by the same Ctrl-C, a logger stopped
        // first) must not kill the run before it drains and journals: the write fails instead.
        signal(SIGPIPE, SIG_IGN)
        // SIGHUP too: a closed terminal or ssh session must not end the run as a kill -9 does.
        sources = [SIGHUP, SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { if let count = counter.count() { handler(number, count) } }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }

    /// Signals counted as they arrive (on one serial queue); nil for the first one's repeats.
    private final class Counter: Sendable {
        private let value = Atomic(0)
        private let firstAt = Atomic<UInt64>(0)

        func count() -> Int? {
            let now = DispatchTime.now().uptimeNanoseconds
            let first = firstAt.load(ordering: .relaxed)
            if first != 0 && now &- first < SignalWatcher.sameStop { return nil }
            if first == 0 { firstAt.store(max(now, 1), ordering: .relaxed) }
            return value.add(1, ordering: .relaxed).newValue
        }
    }
}

/// What a dry run would send, written to stdout as CSV as the run decides it: the rows come from
/// the run's executor, the end from the command's thread after the run returned.
final class WouldSendListing: Sendable {
    private struct State {
        let writer: WouldSendWriter
        var headed = false

        mutating func head() {
            guard !headed else { return }
            writer.header()
            headed = true
        }
    }

    private let state: Mutex<State>

    init() {
        let writer = WouldSendWriter(format: .csv, sink: .chunks { Output.raw(Data($0)) })
        state = Mutex(State(writer: writer))
    }

    func add(_ row: WouldSend) {
        state.withLock { state in
            state.head()
            state.writer.write(row)
        }
    }

    /// `listed`: the dry run got as far as listing. One that could not start (a journal in use, a
    /// key refused) printed the listing's header before its error; now nothing on stdout.
    func finish(listed: Bool) {
        state.withLock { state in
            if listed { state.head() }
            if state.headed { state.writer.finish() }
        }
    }
}
