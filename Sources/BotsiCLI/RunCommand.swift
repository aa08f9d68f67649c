import BotsiRestore
import Dispatch
import Foundation

enum RunCommand {
    static let spec = CommandSpec(
        name: "run",
        options: [
            .value("--job"),
            .flag("--help"), .value("--journal"), .value("--base-url"), .value("--key-env"), .value("--concurrency"),
            .value("--max-attempts"), .value("--timeout"), .value("--connect-timeout"), .value("--format"),
            .value("--profile-column"), .value("--transaction-column"), .value("--delimiter"), .value("--encoding"),
            .flag("--no-header"), .value("--bundle-id"), .value("--environment"), .flag("--retry-failed"),
            .value("--refresh-older-than"), .flag("--dry-run"), .value("--backoff-base"), .value("--backoff-cap"),
            .value("--retry-after-cap"), .value("--cacert"), .flag("--insecure-skip-tls-verify"), .flag("--quiet"),
            .value("--log-interval"), .value("--log-format"), .value("--seed"), .value("--rate"),
            .flag("--no-adaptive"),
            .value("--max-duration"),
            .value("--stop-at"), .value("--max-failure-rate"), .value("--min-sample"), .value("--shard"),
        ],
        takesPositionals: true)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(JobFile.expand(arguments, spec: spec), spec: spec)
        if parsed.has("--help") {
            Output.out(Help.run)
            return ExitCode.success
        }
        let options = try runOptions(parsed)
        // No core dumps from a process that holds the key in memory.
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &noCore)
        let apiKey = options.dryRun ? "" : try APIKey.load(variable: options.keyEnvironmentVariable)
        let logInterval = try parsed.seconds("--log-interval", minimum: 0.1) ?? 30
        let formatName = parsed.value("--log-format") ?? "text"
        guard let logFormat = LogFormat(rawValue: formatName) else {
            throw UsageError(message: "option '--log-format' must be text or json, not '\(formatName)'")
        }
        return execute(
            options: options, apiKey: apiKey, quiet: parsed.has("--quiet"), logInterval: logInterval,
            logFormat: logFormat)
    }

    static func runOptions(_ parsed: ParsedArguments) throws(UsageError) -> RunOptions {
        var options = RunOptions()
        options.inputs = parsed.positionals
        guard !options.inputs.isEmpty else {
            throw UsageError(message: "no input: name one or more .csv/.jsonl files, or - for stdin")
        }
        if options.inputs.filter({ $0 == "-" }).count > 1 {
            throw UsageError(message: "stdin (-) can be read only once")
        }
        try inputOptions(parsed, into: &options)
        options.journalPath = parsed.value("--journal") ?? options.journalPath
        options.baseURL = parsed.value("--base-url") ?? options.baseURL
        options.keyEnvironmentVariable = parsed.value("--key-env") ?? options.keyEnvironmentVariable
        options.concurrency = try parsed.int("--concurrency", in: 1...4096) ?? options.concurrency
        options.maxAttempts = try parsed.int("--max-attempts", in: 1...100) ?? options.maxAttempts
        options.timeout = try parsed.seconds("--timeout", minimum: 0.001) ?? options.timeout
        options.connectTimeout = try parsed.seconds("--connect-timeout", minimum: 0.001) ?? options.connectTimeout
        options.backoffBase = try parsed.seconds("--backoff-base") ?? options.backoffBase
        options.backoffCap = try parsed.seconds("--backoff-cap") ?? options.backoffCap
        options.retryAfterCap = try parsed.seconds("--retry-after-cap") ?? options.retryAfterCap
        options.retryFailed = parsed.has("--retry-failed")
        options.refreshOlderThan = try parsed.seconds("--refresh-older-than")
        options.dryRun = parsed.has("--dry-run")
        options.caCertificatePath = parsed.value("--cacert")
        options.insecureSkipTLSVerify = parsed.has("--insecure-skip-tls-verify")
        if let rate = parsed.value("--rate") {
            guard let value = Double(rate), value > 0, value.isFinite else {
                throw UsageError(
                    message: "option '--rate' needs a number of requests per second above 0, not '\(rate)'")
            }
            options.rate = value
        }
        options.adaptive = !parsed.has("--no-adaptive")
        options.deadline = try deadline(parsed, now: Date())
        if let text = parsed.value("--max-failure-rate") {
            guard let value = Double(text.hasSuffix("%") ? String(text.dropLast()) : text), (0...100).contains(value)
            else {
                throw UsageError(message: "option '--max-failure-rate' needs a percentage from 0 to 100, not '\(text)'")
            }
            options.maxFailureRate = value
        }
        options.minSample = try parsed.int("--min-sample", in: 1...Int(Int32.max)) ?? options.minSample
        if let shard = parsed.value("--shard") {
            let parts = shard.split(separator: "/")
            guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
                (0..<count).contains(index)
            else {
                throw UsageError(
                    message:
                        "option '--shard' needs I/N with 0 <= I < N (e.g. 0/4, as JOB_COMPLETION_INDEX counts), not '\(shard)'"
                )
            }
            options.shardIndex = index
            options.shardCount = count
        }
        if let seed = parsed.value("--seed") {
            guard let number = UInt64(seed) else { throw UsageError(message: "option '--seed' needs a number") }
            options.seed = number
        }
        return options
    }

    /// The options that say how the inputs are read.
    static func inputOptions(_ parsed: ParsedArguments, into options: inout RunOptions) throws(UsageError) {
        func oneOf(_ option: String, _ names: [String]) throws(UsageError) -> String? {
            guard let value = parsed.value(option) else { return nil }
            guard names.contains(value) else {
                throw UsageError(
                    message: "option '\(option)' must be \(names.joined(separator: ", ")), not '\(value)'")
            }
            return value
        }
        options.format = try oneOf("--format", RunOptions.formatNames)
        options.environment = try oneOf("--environment", RunOptions.environmentNames)
        options.bundleId = parsed.value("--bundle-id")
        if let delimiter = parsed.value("--delimiter") {
            guard RunOptions.delimiterByte(delimiter) != nil else {
                throw UsageError(
                    message:
                        "option '--delimiter' takes one punctuation character such as ';' or '|', or 'tab', not '\(delimiter)'"
                )
            }
            options.delimiter = delimiter
        }
        if let encoding = parsed.value("--encoding") {
            guard let name = RunOptions.encodingName(encoding) else {
                throw UsageError(
                    message:
                        "option '--encoding' must be \(RunOptions.encodingNames.joined(separator: ", ")), not '\(encoding)'"
                )
            }
            options.encoding = name
        }
        options.noHeader = parsed.has("--no-header")
        options.profileColumn = parsed.value("--profile-column")
        options.transactionColumn = parsed.value("--transaction-column")
        guard options.noHeader else { return }
        // Without a header the columns are 1-based positions.
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
    static func deadline(_ parsed: ParsedArguments, now: Date) throws(UsageError) -> Date? {
        var deadline = try parsed.seconds("--max-duration", minimum: 0.001).map { now.addingTimeInterval($0) }
        if let text = parsed.value("--stop-at") {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour),
                (0..<60).contains(minute)
            else {
                throw UsageError(message: "option '--stop-at' needs a local time HH:MM such as 06:30, not '\(text)'")
            }
            let calendar = Calendar.current
            let stopAt =
                calendar.nextDate(
                    after: now, matching: DateComponents(hour: hour, minute: minute, second: 0),
                    matchingPolicy: .nextTime) ?? now
            deadline = min(deadline ?? stopAt, stopAt)
        }
        return deadline
    }

    /// Runs with signal handling and progress output; shared by `run` and `demo`.
    static func execute(
        options: RunOptions, apiKey: String, quiet: Bool, logInterval: Double, logFormat: LogFormat = .text
    ) -> Int32 {
        let printer = ProgressPrinter(
            isTerminal: Output.stderrIsTerminal && logFormat == .text, quiet: quiet, logInterval: logInterval,
            format: logFormat)
        var onProgress: (@Sendable (RunProgress) -> Void)?
        if !quiet { onProgress = { @Sendable progress in printer.show(progress) } }
        let runner = Runner(
            options: options, apiKey: apiKey, toolVersion: CLI.version, progressInterval: printer.tickInterval,
            onProgress: onProgress)
        let signals = SignalWatcher { signal, count in
            if count == 1 {
                printer.event(
                    "stopping",
                    message: "stopping — letting in-flight requests finish; send the signal again to exit at once")
                runner.requestStop(signal: signal)
            } else {
                // The journal stays consistent: SQLite rolls back the unfinished batch, whose rows
                // stay in flight and are sent again next time.
                _exit(signal == SIGINT ? ExitCode.interrupted : ExitCode.terminated)
            }
        }
        defer { signals.cancel() }
        do {
            let summary = try runner.run()
            printer.finish()
            printer.summary(summary, journalPath: options.journalPath)
            return summary.exitCode
        } catch {
            printer.event("error", message: "botsi-restore run: \(error.message)", exitCode: error.exitCode)
            return error.exitCode
        }
    }
}

/// SIGINT/SIGTERM through Dispatch, counting how many arrived.
final class SignalWatcher {
    private let sources: [DispatchSourceSignal]
    private let queue = DispatchQueue(label: "botsi-restore.signals")

    init(handler: @escaping @Sendable (Int32, Int) -> Void) {
        let counter = Counter()
        let queue = self.queue
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number, counter.increment()) }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }

    private final class Counter: @unchecked Sendable {
        // Only touched on the signal queue.
        private var value = 0
        func increment() -> Int {
            value += 1
            return value
        }
    }
}
