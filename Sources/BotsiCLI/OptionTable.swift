// The option table: every option of every command, declared once. Parsing, `--help`, job files
// (with their unknown-key suggestions), the completion scripts and the man page all come from
// here: `run`'s options are in `RunOptionTable.swift`, every other command's in this file, and the
// machinery that reads them in `Options/`.
//
// How to add an option (say `run --metrics-file PATH`):
// 1. Give the settings a place for it: a field of `RunOptions` (what the runner takes) or of
//    `RunSettings` (what only this process uses), with its default.
// 2. Add one entry to the command's table (`RunOptionTable.swift` for `run`), in the section help
//    should list it under:
//        .value("--metrics-file", .path(), job: "metricsFile", help: "write Prometheus metrics there") {
//            $0.options.metricsFile = $1
//        },
//    `.flag(...)` for an option without a value. Pick the value kind (`ValueKind.swift`: path, text,
//    wholeNumber, number, duration, percent, choice, …; add one there if none fits), a short name
//    only for an option used all the time, `default:` as one would type it when there is a
//    default, and for `run` a `job:` key, or `.notInJobFiles(because:)` saying why not.
// 3. Run `bash scripts/docs.sh` and commit docs/botsi-restore.1 (ManPageTests fails until then).
//    `swift test --filter BotsiCLITests` checks that it parses by each of its names, changes the
//    settings, shows in help and the manual, that its default is the one in force, and that its
//    job key means what the flag means (or that it says why it has none). Help, completions and
//    the manual need no other edit.
import BotsiJournal
import BotsiRestore
import BotsiSimulator
import Foundation

/// Settings of a command that reads a journal.
protocol JournalReading: SendableMetatype {
    var journal: String { get set }
}

extension Option where Settings: JournalReading {
    static var journalToRead: Self {
        .value("--journal", .path(), default: "botsi-restore.sqlite", help: "journal to read") { $0.journal = $1 }
    }
}

/// Settings of a command that reads one journal or several: the shards of one job.
protocol JournalsReading: JournalReading {
    /// Every `--journal` given, in order; empty for the default journal alone.
    var journals: [String] { get set }
}

extension JournalsReading {
    var allJournals: [String] { journals.isEmpty ? [journal] : journals }
}

extension Option where Settings: JournalsReading {
    /// No `default:` shown: a repeated option has no one value to default to (the help says it).
    static func journalsToRead(_ help: String) -> Self {
        .value("--journal", .path(), repeatable: true, help: help) {
            $0.journals.append($1)
            $0.journal = $0.journals[0]
        }
    }
}

/// `report --format`: the row formats, and the page.
enum ReportFormatChoice: String, CaseIterable, Sendable {
    case jsonl, csv, table, html
}

extension ReportCommand {
    static let options: [Option<ReportSettings>] =
        section(
            "Rows",
            [
                .journalsToRead(
                    "journal to read (default botsi-restore.sqlite); with --format html, several for the shards of "
                        + "one job (totals and a row each)"),
                .value(
                    "--run", .text("ID|latest"),
                    help: "only rows that run sent or rejected; with --format html, the run the charts show"
                ) { $0.run = $1 },
                .value(
                    "--status", .choice(ItemStatus.allCases, placeholder: "STATUS"), repeatable: true,
                    help: "only rows with this status: "
                        + ItemStatus.allCases.map(\.rawValue).joined(separator: ", ")
                ) { $0.statuses.append($1.rawValue) },
                .value("--code", .text("CODE"), repeatable: true, help: "only rows with this code") {
                    $0.codes.append($1)
                },
                .value(
                    "--since", sinceKind,
                    help:
                        "only rows updated since TIME (ISO-8601, or a date: from its start in UTC) or within a duration "
                        + "(e.g. 24h)"
                ) { $0.since = $1 },
                .value(
                    "--format", .choice(ReportFormatChoice.allCases), default: "jsonl",
                    help: "table aligns columns for a terminal; CSV cells starting with = + - @ tab or CR are "
                        + "prefixed with '; html is one self-contained page: verdict, charts over time, "
                        + "distributions, what needs a person, run history"
                ) {
                    $0.html = $1 == .html
                    $0.format = ReportFormat(rawValue: $1.rawValue) ?? .jsonl
                },
                .value(
                    "--output", short: "o", .path("FILE"),
                    help: "write there (mode 0600) instead of stdout; - is stdout"
                ) {
                    $0.output = $1
                },
                .value(
                    "--columns", .text("LIST"),
                    help: "only these columns, in this order (comma-separated, e.g. profileId,status,code); "
                        + "docs/reports.md lists each report's columns"
                ) {
                    $0.columns = $1.split(separator: ",", omittingEmptySubsequences: false).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                },
            ])
        + section(
            "Changes between two runs (the nightly audit)",
            [
                .flag(
                    "--changes",
                    help: "rows whose status or profile snapshot differs between two runs, with before/after "
                        + "columns and a change: " + ChangeKind.allCases.map(\.rawValue).joined(separator: ", ")
                        + "; --run names the later run (default latest)"
                ) { $0.changes = true },
                .value(
                    "--since-run", .text("ID"),
                    help:
                        "the earlier run (default the run before --run; in a merged journal, before each shard's latest run)"
                ) {
                    $0.sinceRun = $1
                },
            ])
        + section(
            "Transactions claimed by several profiles",
            [
                .flag(
                    "--conflicts",
                    help: "every original transaction that two or more profiles claim, a row per claim in journal "
                        + "order: claim 1 is the one --on-conflict hold sends; with profiles, sources and outcomes"
                ) { $0.conflicts = true }
            ])

    /// An ISO-8601 time, a date (its start in UTC, as the journal's times are), or a duration back
    /// from now.
    static let sinceKind = ValueKind<Date>(
        placeholder: "TIME", expected: "an ISO-8601 time, a date such as 2026-12-01, or a duration such as 24h",
        example: "2026-01-01T00:00:00Z"
    ) { text in
        if let duration = parseDuration(text) { return Date().addingTimeInterval(-duration) }
        return parseInstant(text)
    }

    /// An ISO-8601 time or a date (its start in UTC): an instant, never relative to now.
    static let instantKind = ValueKind<Date>(
        placeholder: "TIME",
        expected: "an ISO-8601 time such as 2026-12-06T04:58:33.375Z, or a date such as 2026-12-01",
        example: "2026-12-06T04:58:33.375Z"
    ) { parseInstant($0) }

    private static func parseInstant(_ text: String) -> Date? {
        // The formatters roll 2026-02-30 into March: the date part is taken only as it reads.
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        day.timeZone = TimeZone(identifier: "UTC")
        let datePart = String(text.prefix(10))
        guard let date = day.date(from: datePart), day.string(from: date) == datePart else { return nil }
        return text.count == 10 ? date : Timestamp.date(text)
    }
}

extension StatusCommand {
    static let options: [Option<StatusSettings>] = [
        .journalsToRead(
            "journal to read (default botsi-restore.sqlite); several for the shards of one job: each one's status, "
                + "then the totals"),
        .value("--format", .choice(StatusSettings.Format.allCases), default: "text", help: "output format") {
            $0.format = $1
        },
    ]
}

extension UpgradeCommand {
    static let options: [Option<UpgradeSettings>] = [.journalToRead]
}

extension RunsCommand {
    static let options: [Option<RunsSettings>] = [
        .journalToRead,
        .value("--format", .choice(RunsFormat.allCases), default: "table", help: "output format") { $0.format = $1 },
    ]
}

extension MergeCommand {
    static let positionals: Positionals<[String]>? = Positionals(
        "OUT SHARD ...", help: "the new journal, then the shard journals to combine into it"
    ) { $0 = $1 }
    static let options: [Option<[String]>] = []
}

extension SimulateCommand {
    static let options: [Option<SimulateSettings>] =
        [serverOptions, faultOptions, rateLimitOptions, limitOptions].flatMap { $0 }

    private static let serverOptions: [Option<SimulateSettings>] = section(
        "Server",
        [
            .value(
                "--host", .text("ADDRESS"), default: "127.0.0.1",
                help: "address to listen on; any other than loopback is reachable by others (warned)"
            ) { $0.options.host = $1 },
            .value("--port", .wholeNumber(0...65535), default: "8080", help: "0 picks a free port") {
                $0.options.port = $1
            },
            .value(
                "--key", .text("KEY"), repeatable: true, help: "an accepted key (default \(Simulator.defaultKey))"
            ) { $0.keys.append($1) },
            .value("--scenario", .path("FILE"), help: "profiles and transactions (JSON; see docs/simulator.md)") {
                $0.scenario = $1
            },
            .value(
                "--mode", .choice([SimulatorMode.normal, .noIOSSettings]), default: "normal",
                help: "no-ios-settings answers every restore as an app whose App Store connection is not set up"
            ) { $0.options.mode = $1 },
        ])

    private static let faultOptions: [Option<SimulateSettings>] = section(
        "Latency and faults",
        [
            .value(
                "--latency", .number(0...600_000, placeholder: "MS"), default: "0", help: "fixed latency per reply"
            ) { $0.options.latencyMilliseconds = $1 },
            .value(
                "--jitter", .number(0...600_000, placeholder: "MS"), default: "0", help: "extra uniform latency 0..MS"
            ) { $0.options.jitterMilliseconds = $1 },
            .value(
                "--fault-rate", .number(0...1, placeholder: "P"), default: "0",
                help: "probability of a fault per request"
            ) { $0.options.faultRate = $1 },
            .value(
                "--faults", faultsKind, default: "all",
                help: "the faults to draw from, a comma list of "
                    + SimulatorFault.allCases.map(\.rawValue).joined(separator: ",") + " (see docs/simulator.md)"
            ) { $0.options.faults = $1 },
            .value(
                "--stall", .duration(), default: "300s", help: "how long a stall fault holds the reply before closing"
            ) { $0.options.stallSeconds = $1 },
            .value("--seed", .seed, default: "1", help: "makes faults and jitter reproducible") {
                $0.options.seed = $1
            },
            .flag(
                "--forget",
                help: "keep no profile, purchase or per-pair count: every restore is answered as the first of its "
                    + "pair (about 2.6 KB a pair otherwise; for runs of millions of rows)"
            ) { $0.options.forget = true },
        ])

    private static let rateLimitOptions: [Option<SimulateSettings>] = section(
        "Rate limit",
        [
            .value(
                "--limit-rate", .number(0.001...1_000_000),
                help: "admit N restore requests/s: at most N × window in any window, 429 for the rest"
            ) { $0.options.limitRate = $1 },
            .value(
                "--limit-window", .wholeSeconds(1...86_400), default: "1s",
                help: "the limiter's window, whole seconds (N × window must be whole)"
            ) { $0.options.limitWindowSeconds = $1 },
            .value(
                "--limit-kind", .choice(RateLimiterKind.allCases), default: "sliding",
                help: "sliding: at most N × window in any window; fixed: per window, back to back; bucket: "
                    + "a token bucket holding one window of burst"
            ) { $0.options.limitKind = $1 },
            .value(
                "--live-rate", .number(0.001...1_000_000),
                help: "the app's own traffic: spend N of the limit per second itself, at random (Poisson) "
                    + "times; the stats count how many of those live requests the limiter refused"
            ) { $0.options.liveRate = $1 },
            .value(
                "--rate-limit-headers", .choice(RateLimitHeaderStyle.allCases),
                help: "describe the limiter on its replies: RateLimit + RateLimit-Policy, RateLimit-Limit/-Remaining/"
                    + "-Reset, or X-RateLimit-* (reset as UNIX time)"
            ) { $0.options.rateLimitHeaders = $1 },
            .value(
                "--retry-after", .wholeNumber(0...86400, placeholder: "SECONDS"), default: "1",
                help: "the wait sent with 429 and 503"
            ) { $0.options.retryAfterSeconds = $1 },
            .value(
                "--retry-after-format", .choice(RetryAfterFormat.allCases), default: "seconds",
                help: "how Retry-After is written (unix-ms is Apple's form)"
            ) { $0.options.retryAfterFormat = $1 },
        ])

    private static let limitOptions: [Option<SimulateSettings>] = section(
        "Limits",
        [
            .value(
                "--idle-timeout", .duration(), default: "60s",
                help: "close connections idle (or slow to send a request) this long"
            ) { $0.options.idleTimeoutSeconds = $1 },
            .value(
                "--max-connections", .wholeNumber(1...1_000_000), default: "1024",
                help: "connections open at once; more wait in the backlog"
            ) { $0.options.maxConnections = $1 },
        ])

    /// "429,500,reset" or "all".
    static let faultsKind = ValueKind<[SimulatorFault]>(
        placeholder: "LIST",
        expected: "a comma list of " + SimulatorFault.allCases.map(\.rawValue).joined(separator: ",") + ", or all",
        example: "429,reset"
    ) { text in
        if text == "all" { return SimulatorFault.allCases }
        let faults = text.split(separator: ",").map {
            SimulatorFault(rawValue: $0.trimmingCharacters(in: .whitespaces))
        }
        return faults.isEmpty || faults.contains(nil) ? nil : faults.compactMap { $0 }
    }
}

extension DemoCommand {
    static let options: [Option<String?>] = [
        .value("--keep-journal", .path(), help: "keep the demo's journal there, for report and status") { $0 = $1 }
    ]
}
