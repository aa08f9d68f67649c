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
            .value("--profile-column"), .value("--transaction-column"), .flag("--retry-failed"),
            .value("--refresh-older-than"), .flag("--dry-run"), .value("--backoff-base"), .value("--backoff-cap"),
            .value("--retry-after-cap"), .value("--cacert"), .flag("--insecure-skip-tls-verify"), .flag("--quiet"),
            .value("--log-interval"), .value("--seed"),
        ],
        takesPositionals: true)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(JobFile.expand(arguments, spec: spec), spec: spec)
        if parsed.has("--help") {
            Output.out(Help.run)
            return ExitCode.success
        }
        let options = try runOptions(parsed)
        let apiKey = options.dryRun ? "" : try APIKey.load(variable: options.keyEnvironmentVariable)
        let logInterval = try parsed.seconds("--log-interval", minimum: 0.1) ?? 30
        return execute(options: options, apiKey: apiKey, quiet: parsed.has("--quiet"), logInterval: logInterval)
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
        if let format = parsed.value("--format") {
            guard format == "csv" || format == "jsonl" else {
                throw UsageError(message: "option '--format' must be csv or jsonl, not '\(format)'")
            }
            options.format = format
        }
        options.profileColumn = parsed.value("--profile-column")
        options.transactionColumn = parsed.value("--transaction-column")
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
        if let seed = parsed.value("--seed") {
            guard let number = UInt64(seed) else { throw UsageError(message: "option '--seed' needs a number") }
            options.seed = number
        }
        return options
    }

    /// Runs with signal handling and progress output; shared by `run` and `demo`.
    static func execute(options: RunOptions, apiKey: String, quiet: Bool, logInterval: Double) -> Int32 {
        let printer = ProgressPrinter(
            isTerminal: Output.stderrIsTerminal, quiet: quiet, logInterval: logInterval)
        var onProgress: (@Sendable (RunProgress) -> Void)?
        if !quiet { onProgress = { @Sendable progress in printer.show(progress) } }
        let runner = Runner(
            options: options, apiKey: apiKey, toolVersion: CLI.version, progressInterval: printer.tickInterval,
            onProgress: onProgress)
        let signals = SignalWatcher { signal, count in
            if count == 1 {
                Output.error(
                    "\nbotsi-restore: stopping — letting in-flight requests finish; send the signal again to exit at once"
                )
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
            Output.error(summary.render(journalPath: options.journalPath))
            return summary.exitCode
        } catch {
            Output.error("botsi-restore run: \(error.message)")
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
