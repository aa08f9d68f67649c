// The `run` command's options, in the sections its help lists them under. The rest of the option
// table, and how to add an option, are in `OptionTable.swift`.
import BotsiJournal
import BotsiRestore
import Foundation

extension RunCommand {
    static let positionals: Positionals<RunSettings>? = Positionals(
        "INPUT ...",
        help: "a .csv, .txt, .tsv, .jsonl, .ndjson or .json file (optionally .gz), or - for stdin; several allowed",
        job: "inputs"
    ) { $0.options.inputs = $1 }

    static let options: [Option<RunSettings>] =
        [
            jobOptions, inputOptions, journalOptions, apiOptions, paceOptions, timeWindowOptions, shardingOptions,
            outputOptions,
        ].flatMap { $0 }

    private static let jobOptions: [Option<RunSettings>] = section(
        "Job",
        [
            .value(
                "--job", .path("FILE"), job: .notInJobFiles(because: "a job file does not name another"),
                help: "take options from a job file (jobs/*.json); options given here win"
            ) { $0.job = $1 }
        ])

    private static let inputOptions: [Option<RunSettings>] = section(
        "Input",
        [
            .value(
                "--format", .names(RunOptions.formatNames), job: "format",
                help: "input format, when the file name does not tell"
            ) { $0.options.format = $1 },
            .value(
                "--profile-column", .column(), job: "profileColumn",
                help: "column holding the profile id (default profileId, also written Profile ID or "
                    + "profile_id: case, spaces, _ and - are ignored; with --no-header a 1-based position, default 1)"
            ) { $0.options.profileColumn = $1 },
            .value(
                "--transaction-column", .column(), job: "transactionColumn",
                help: "column holding the original transaction id (default originalTransactionId, matched the same "
                    + "way; with --no-header a 1-based position, default 2)"
            ) { $0.options.transactionColumn = $1 },
            .value(
                "--delimiter", .delimiter(), job: "delimiter",
                help: "CSV delimiter: , ; | tab or another punctuation character (default: detected from the "
                    + "first line)"
            ) { $0.options.delimiter = $1 },
            .value(
                "--encoding", .encoding(), job: "encoding",
                help: "input encoding (default: UTF-8, or what a byte-order mark says)"
            ) { $0.options.encoding = $1 },
            .flag(
                "--no-header", job: "noHeader",
                help: "the CSV's first line is a row; the column options then take 1-based positions"
            ) { $0.options.noHeader = true },
            .value(
                "--bundle-id", .text("ID"), job: "bundleId",
                help: "reject signed transactions and receipts of another app"
            ) { $0.options.bundleId = $1 },
            .value(
                "--environment", .names(RunOptions.environmentNames), job: "environment",
                help: "reject signed transactions from the other environment"
            ) { $0.options.environment = $1 },
        ])

    private static let journalOptions: [Option<RunSettings>] = section(
        "Journal",
        [
            .value(
                "--journal", .path(), job: "journal", default: "botsi-restore.sqlite", help: "SQLite journal"
            ) { $0.options.journalPath = $1 },
            .flag(
                "--retry-failed", job: "retryFailed",
                help: "also resend the journal's failed, profile_not_found and server-rejected rows"
            ) { $0.options.retryFailed = true },
            .value(
                "--refresh-older-than", .duration(), job: "refreshOlderThan",
                help:
                    "also resend restored and nothing_to_restore rows whose last definitive answer is older than DUR "
                    + "(e.g. 7d); a resend without one changes nothing"
            ) { $0.options.refreshOlderThan = $1 },
            .value(
                "--answered-before", ReportCommand.instantKind,
                job: .notInJobFiles(
                    because: "it continues one stopped run: the command that run's advice gives carries it"),
                help:
                    "with --retry-failed or --refresh-older-than: only rows last answered before TIME; the advice "
                    + "after a stopped selection run adds it, so that the rows that run did get to are not sent again"
            ) { $0.options.answeredBefore = Timestamp.string($1) },
            .value(
                "--on-conflict", .choice(ConflictHandling.allCases), job: "onConflict", default: "send",
                help: "a new pair whose transaction another profile already claims: send it (restores link the "
                    + "profiles) or hold it as `held`, not sent (see report --conflicts)"
            ) { $0.options.onConflict = $1 },
            .flag(
                "--release-held", job: "releaseHeld",
                help: "also send the journal's held rows (after reviewing report --conflicts)"
            ) { $0.options.releaseHeld = true },
            .value(
                "--forget-input", .path(),
                job: .notInJobFiles(
                    because: "forgetting is decided once, for one input that is not coming back: kept in a job "
                        + "file, it would forget the next night's unfinished read of the same path"),
                repeatable: true,
                help:
                    "stop naming PATH as an input earlier runs did not finish (its file is gone for good: a rotated "
                    + "export); the rows read from it stay in the journal"
            ) { $0.options.forgetInputs.append($1) },
            .flag(
                "--dry-run", short: "n",
                job: .notInJobFiles(
                    because: "a rehearsal is asked for where the job starts (run --job FILE -n), "
                        + "so no job file is left rehearsing by mistake"),
                help:
                    "make every check the run makes (key, base URL, CA file, journal, lock, inputs), exit as it "
                    + "would, list what it would send; send and write nothing"
            ) { $0.options.dryRun = true },
        ])

    private static let apiOptions: [Option<RunSettings>] = section(
        "API",
        [
            .value(
                "--base-url", .text("URL"), job: "baseURL", default: "https://api.botsi.com",
                help: "Botsi's API; http:// only for loopback hosts"
            ) { $0.options.baseURL = $1 },
            .value(
                "--key-env", .text("NAME"), job: "keyEnv", default: "BOTSI_SECRET_KEY",
                help: "environment variable holding the key (the key itself is never an option)"
            ) { $0.options.keyEnvironmentVariable = $1 },
            .value(
                "--key-file", .path(), job: "keyFile",
                help: "read the key from PATH instead: a file of yours, mode 0600 or 0400 "
                    + "(e.g. a systemd credential: --key-file %d/botsi-key)"
            ) { $0.options.keyFile = $1 },
            .value(
                "--proxy", .text("URL"), job: "proxy",
                help: "proxy for an https:// base URL (CONNECT; the key stays inside TLS), instead of "
                    + "HTTPS_PROXY; never with a password (use HTTPS_PROXY)"
            ) { $0.options.proxy = $1 },
            .flag(
                "--no-proxy", job: "noProxy", help: "never a proxy; plain http:// never uses one anyway"
            ) { $0.options.noProxy = true },
            .value(
                "--cacert", .path("FILE"), job: "cacert", help: "CA bundle for a private certificate authority"
            ) { $0.options.caCertificatePath = $1 },
            .flag(
                "--insecure-skip-tls-verify",
                job: .notInJobFiles(
                    because: "turning certificate checks off is typed each time, never kept in a file that runs "
                        + "every night"),
                help: "do not verify the server's certificate (never in production)"
            ) { $0.options.insecureSkipTLSVerify = true },
        ])

    private static let paceOptions: [Option<RunSettings>] = section(
        "Pace and retries",
        [
            .value(
                "--concurrency", short: "j", .wholeNumber(1...4096), job: "concurrency", default: "8",
                help: "requests in flight at most"
            ) { $0.options.concurrency = $1 },
            .value(
                "--max-attempts", .wholeNumber(1...100), job: "maxAttempts", default: "6",
                help: "attempts per row per run"
            ) { $0.options.maxAttempts = $1 },
            .value(
                "--timeout", .duration(minimum: 0.001), job: "timeout", default: "30s", help: "per request"
            ) { $0.options.timeout = $1 },
            .value(
                "--connect-timeout", .duration(minimum: 0.001), job: "connectTimeout", default: "10s",
                help: "to open a connection"
            ) { $0.options.connectTimeout = $1 },
            .value(
                "--backoff-base", .duration(), job: "backoffBase", default: "500ms",
                help: "the first retry waits up to this, doubling each time"
            ) { $0.options.backoffBase = $1 },
            .value("--backoff-cap", .duration(), job: "backoffCap", default: "30s", help: "longest backoff") {
                $0.options.backoffCap = $1
            },
            .value(
                "--retry-after-cap", .duration(), job: "retryAfterCap", default: "120s",
                help: "longest wait a Retry-After can impose"
            ) { $0.options.retryAfterCap = $1 },
            .value(
                "--rate", .positiveNumber(meaning: "a number of requests per second"), job: "rate",
                help: "requests per second at most, evenly spaced (Apple allows ~50/s per app)"
            ) { $0.options.rate = $1 },
            .value(
                "--headroom", .headroom, job: "headroom", default: "0",
                help: "leave PCT% of the limit unused (for the app's live traffic): of a stated, --rate or "
                    + "--job-rate limit; of the rate found when probing; of what a server says remains"
            ) { $0.options.headroom = $1 },
            .flag(
                "--no-adaptive", job: .negatedKey("adaptive"),
                help: "do not slow down on 429/503 (adaptive throttling is on by default)"
            ) { $0.options.adaptive = false },
            .value(
                "--max-failure-rate", .percent, job: "maxFailureRate", default: "50",
                help: "stop (exit 69) when more than PCT% of the rows sent failed or ran out of attempts, "
                    + "once --min-sample rows were sent"
            ) { $0.options.maxFailureRate = $1 },
            .value(
                "--min-sample", .wholeNumber(1...Int(Int32.max)), job: "minSample", default: "1000",
                help: "rows sent before --max-failure-rate applies"
            ) { $0.options.minSample = $1 },
            .value(
                "--seed", .seed,
                job: .notInJobFiles(because: "it repeats the backoff jitter for tests; scheduled runs draw their own"),
                help: "random seed for the backoff jitter, for tests"
            ) { $0.options.seed = $1 },
        ])

    private static let timeWindowOptions: [Option<RunSettings>] = section(
        "Time window",
        [
            .value(
                "--max-duration", .duration(minimum: 0.001), job: "maxDuration",
                help: "stop dispatching after DUR (e.g. 6h), drain, exit 75; a rerun continues"
            ) { $0.maxDuration = $1 },
            .value("--stop-at", ClockTime.kind, job: "stopAt", help: "the same at the next local HH:MM") {
                $0.stopAt = $1
            },
        ])

    private static let shardingOptions: [Option<RunSettings>] = section(
        "Sharding",
        [
            .value(
                "--shard", Shard.kind, job: "shard",
                help: "only rows whose profileId hashes to shard I of N (0 <= I < N); auto/N reads I from "
                    + "JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch; "
                    + "auto alone also takes N from AWS_BATCH_JOB_ARRAY_SIZE)"
            ) {
                $0.shard = $1
                if case .fixed(let index, let count) = $1 {
                    $0.options.shardIndex = index
                    $0.options.shardCount = count
                }
            },
            .value(
                "--job-rate", .positiveNumber(meaning: "a number of requests per second"), job: "jobRate",
                help: "requests per second for the whole job, all its shards together (the app's budget, stated "
                    + "once): each shard paces at most at its share, N/s ÷ the shard count"
            ) { $0.options.jobRate = $1 },
        ])

    private static let outputOptions: [Option<RunSettings>] = section(
        "Output",
        [
            .flag("--quiet", short: "q", job: "quiet", help: "no progress, only the summary and errors") {
                $0.quiet = true
            },
            .value(
                "--log-interval", .duration(minimum: 0.1), job: "logInterval", default: "30s",
                help: "progress log line period when stderr is not a terminal"
            ) { $0.logInterval = $1 },
            .value(
                "--log-format", .choice([LogFormat.text, .json]), job: "logFormat", default: "text",
                help: "json: progress, stop, error and summary as one JSON object a line"
            ) { $0.logFormat = $1 },
            .value(
                "--metrics-file", .path(), job: "metricsFile",
                help: "write Prometheus metrics to PATH (mode 0644, for node_exporter's textfile collector) "
                    + "every --log-interval and at the end"
            ) { $0.metricsFile = $1 },
            .value(
                "--metrics-push", .text("URL"), job: "metricsPush",
                help: "push the metrics to this Prometheus Pushgateway at the end (job=\"botsi-restore\", "
                    + "journal=<file name>); a failed push is only a warning"
            ) { $0.metricsPush = $1 },
        ])
}

extension ValueKind where Value == Double {
    /// `--headroom`: at least 0 and below 100, written 20 or 20% (all of a limit left unused would
    /// send nothing). A bare number between 0 and 1 is refused: `0.2` read as a fifth would leave
    /// a hundredth of what was meant; `0.2%` says it.
    static let headroom = Self(
        placeholder: "PCT",
        expected: "a percentage from 0 to below 100, such as 20 or 20% (write 0.5% for half a per cent)",
        example: "20%",
        fromText: { headroom($0) },
        fromJSON: { json in json.number.flatMap { headroom(plainNumber: $0) } ?? json.string.flatMap { headroom($0) } })

    private static func headroom(_ text: String) -> Double? {
        let percentSign = text.hasSuffix("%")
        // `plainNumber` takes no sign: nothing below 0 comes this far.
        guard let number = plainNumber(percentSign ? String(text.dropLast()) : text) else { return nil }
        return percentSign ? (number < 100 ? number : nil) : headroom(plainNumber: number)
    }

    private static func headroom(plainNumber number: Double) -> Double? {
        number == 0 || (number >= 1 && number < 100) ? number : nil
    }
}
