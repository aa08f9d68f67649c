import BotsiBasics
import BotsiJournal
import Foundation

/// A run's figures for Prometheus: while it runs (from its progress) and at its end (from its
/// summary), with what the journal adds (owed rows, requests by reply, the last success).
/// Holds no secret: nothing here comes from the key or the request headers.
public struct RunMetrics: Sendable, Equatable {
    /// The journal's file name: the `journal` label, which tells one job's series from another's.
    public var journal: String
    /// Rows this run worked on, by status.
    public var rowsByStatus: [ItemStatus: Int] = [:]
    public var rowsOwed = 0
    public var requests: [JournalMetricsFacts.AttemptCount] = []
    public var retries = 0
    public var throttleEvents = 0
    /// The send-rate limit in force (adaptive throttling, else `--rate` or this shard's share of
    /// `--job-rate`: `rateOption`, `RunOptions.rateCap`); nil when there is none.
    public var sendRateLimit: Double?
    public var concurrencyLimit: Int?
    public var durationSeconds: Double = 0
    /// nil while the run is still going.
    public var exitCode: Int32?
    public var lastSuccessAt: Date?

    public init(journal: String) { self.journal = journal }

    /// Every status a row can hold, so a series exists (at 0) before its first row.
    static let statuses = ItemStatus.allCases

    /// A run going on, from its latest progress.
    public init(journal: String, progress: RunProgress, rateOption: Double?) {
        self.journal = journal
        rowsByStatus = progress.statuses
        retries = progress.retries
        throttleEvents = progress.throttleEvents
        sendRateLimit = progress.throttledRate ?? rateOption
        concurrencyLimit = progress.concurrencyLimit
        durationSeconds = progress.elapsed
    }

    /// A run that ended, from its summary.
    public init(journal: String, summary: RunSummary, rateOption: Double?) {
        self.journal = journal
        rowsByStatus = summary.statuses
        retries = summary.retries
        throttleEvents = summary.throttleEvents
        sendRateLimit = summary.finalThrottledRate ?? rateOption
        durationSeconds = summary.durationSeconds
        exitCode = summary.exitCode
    }

    /// Whether a finished run counts as a success for `botsi_restore_last_success_timestamp_seconds`:
    /// it exited 0, or 75 because its time window ended after it finished rows (a backlog spread
    /// over nights is healthy). No other stop does.
    public static func isSuccess(exitCode: Int, counts: RunCounts) -> Bool {
        if exitCode == Int(ExitCode.success) { return true }
        guard exitCode == Int(ExitCode.temporaryFailure),
            counts.stopCause == .windowEnd
        else { return false }
        return (counts.statuses ?? [:]).filter { $0.key.isFinal }.values.reduce(0, +) > 0
    }

    /// Adds what the journal knows; `facts` from `Journal.metricsFacts(isSuccess: RunMetrics.isSuccess)`.
    public mutating func add(_ facts: JournalMetricsFacts) {
        rowsOwed = facts.owedRows
        requests = facts.attempts
        lastSuccessAt = facts.lastSuccessAt
    }

    /// Prometheus text exposition format 0.0.4.
    public func exposition() -> String {
        var text = ""
        let journalLabel = "journal=\"\(Self.escape(journal))\""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples {
                let labels = [journalLabel, sample.labels].filter { !$0.isEmpty }.joined(separator: ",")
                text += "\(name){\(labels)} \(sample.value)\n"
            }
        }
        func one(_ name: String, _ type: String, _ help: String, _ value: String) {
            family(name, type, help, [("", value)])
        }
        let statuses = Self.statuses
        family(
            "botsi_restore_rows", "gauge", "Rows the latest run worked on, by their status now.",
            statuses.map { ("status=\"\(Self.escape($0.rawValue))\"", String(rowsByStatus[$0] ?? 0)) })
        one(
            "botsi_restore_rows_owed", "gauge",
            "Rows the journal owes (pending or left in flight): the next run sends them.",
            String(rowsOwed))
        family(
            "botsi_restore_requests_total", "counter",
            "Requests the latest run sent, by outcome and HTTP status (none: no HTTP reply).",
            requests.map {
                (
                    "outcome=\"\(Self.escape($0.outcome))\",code=\"\($0.httpStatus.map(String.init) ?? "none")\"",
                    String($0.count)
                )
            })
        one(
            "botsi_restore_retries_total", "counter", "Requests the latest run sent again after a transient failure.",
            String(retries))
        one(
            "botsi_restore_throttle_events_total", "counter",
            "Times the latest run slowed down on 429 or 503 replies.", String(throttleEvents))
        if let sendRateLimit {
            one(
                "botsi_restore_send_rate_limit_requests_per_second", "gauge",
                "The send-rate limit in force (throttling, --rate or this shard's share of --job-rate); absent when unlimited.",
                Self.number(sendRateLimit))
        }
        if let concurrencyLimit {
            one(
                "botsi_restore_concurrency_limit", "gauge", "Requests allowed in flight at once now.",
                String(concurrencyLimit))
        }
        one(
            "botsi_restore_run_duration_seconds", "gauge", "How long the latest run has run.",
            Self.number(durationSeconds))
        one("botsi_restore_running", "gauge", "1 while the run is going, 0 once it ended.", exitCode == nil ? "1" : "0")
        if let exitCode {
            one(
                "botsi_restore_exit_code", "gauge",
                "The latest run's exit status (0 done, 75 rows remain; see docs/exit-codes.md).",
                String(exitCode))
        }
        one(
            "botsi_restore_last_success_timestamp_seconds", "gauge",
            "When the last successful run ended (exit 0, or 75 at the end of its time window after progress); 0 if none.",
            Self.number(lastSuccessAt?.timeIntervalSince1970 ?? 0))
        return text
    }

    /// Label values escape backslash, double quote and line feed.
    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value > 0 ? "+Inf" : "-Inf") }
        return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
