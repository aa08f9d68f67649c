import Foundation

/// What a run did, for the summary on stderr, the journal's `runs.counts` and the exit status.
public struct RunSummary: Sendable, Codable, Equatable {
    /// Rows this run sent, by the status they ended in (pending included).
    public var statuses: [String: Int] = [:]
    /// The same rows by "status/code" (e.g. "pending/http_503", "restored/").
    public var codes: [String: Int] = [:]
    /// Rows refused by the input checks, by reason.
    public var rejectedByReason: [String: Int] = [:]
    /// Rows whose final outcome was already on record, by status.
    public var alreadyFinished: [String: Int] = [:]
    public var rowsRead = 0
    public var duplicates = 0
    public var newRows = 0
    /// Dry run only: rows a real run would send.
    public var wouldSend = 0
    /// Rows admitted but never sent because the run stopped first; they stay pending.
    public var notSent = 0
    /// Rows a killed run had left in flight, returned to pending at start.
    public var recoveredInFlight = 0
    public var requests = 0
    public var retries = 0
    public var retryBudgetExhausted = 0
    public var durationSeconds: Double = 0
    public var exitCode: Int32 = 0
    public var stopMessage: String?
    public var dryRun = false
    /// Whether the run read all of its input before it ended.
    public var inputComplete = false
    /// Rows skipped because they belong to another shard.
    public var otherShards = 0
    /// One sentence per input that held no row (empty, blank, header only); a 0-byte one
    /// starts with "warning: ", since a failed export looks the same.
    public var inputNotes: [String] = []
    /// Adaptive throttling: how many times the run slowed down, how low it went, where it ended.
    public var throttleEvents = 0
    public var lowestThrottledRate: Double?
    public var finalThrottledRate: Double?

    public init() {}

    public var sent: Int { statuses.values.reduce(0, +) }
    public var pending: Int { (statuses["pending"] ?? 0) + notSent }
    public var rejectedRows: Int { rejectedByReason.values.reduce(0, +) }
    public var requestsPerSecond: Double { durationSeconds > 0 ? Double(requests) / durationSeconds : 0 }

    mutating func count(status: String, code: String?) {
        statuses[status, default: 0] += 1
        codes["\(status)/\(code ?? "")", default: 0] += 1
    }

    /// Several lines for a person: what happened and, when rows remain, what to do.
    public func render(journalPath: String) -> String {
        var lines: [String] = []
        let head = dryRun ? "dry run (nothing sent)" : "run finished"
        lines.append(
            "\(head) in \(Self.duration(durationSeconds)): \(rowsRead) rows read, \(requests) requests"
                + (durationSeconds > 0 && requests > 0 ? String(format: " (%.0f/s)", requestsPerSecond) : "")
                + ", \(retries) retries")
        lines += inputNotes
        if dryRun {
            lines.append("  would send: \(wouldSend) (\(newRows) new, \(wouldSend - newRows) pending or to resend)")
        }
        for (key, value) in codes.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            let code = parts.count > 1 && !parts[1].isEmpty ? " (\(parts[1]))" : ""
            lines.append("  \(parts[0])\(code): \(value)")
        }
        if notSent > 0 { lines.append("  pending (not sent, run stopped): \(notSent)") }
        for (reason, value) in rejectedByReason.sorted(by: { $0.key < $1.key }) {
            lines.append("  rejected by input checks (\(reason)): \(value)")
        }
        for (status, value) in alreadyFinished.sorted(by: { $0.key < $1.key }) {
            lines.append("  already \(status) in the journal, skipped: \(value)")
        }
        if duplicates > 0 { lines.append("  duplicates (same pair again, sent once): \(duplicates)") }
        if recoveredInFlight > 0 {
            lines.append("  rows left in flight by an earlier run, sent again: \(recoveredInFlight)")
        }
        if retryBudgetExhausted > 0 {
            lines.append(
                "  retries refused because the retry budget ran out: \(retryBudgetExhausted) (the service was failing most requests)"
            )
        }
        if otherShards > 0 { lines.append("  rows of other shards, skipped: \(otherShards)") }
        if throttleEvents > 0 {
            let lowest = String(format: "%.1f", lowestThrottledRate ?? 0)
            let final = finalThrottledRate.map { String(format: "%.1f/s", $0) } ?? "unthrottled"
            lines.append(
                "  throttled \(throttleEvents) times by 429/503 replies: slowed to \(lowest) requests/s at the lowest, \(final) at the end"
            )
        }
        if let stopMessage { lines.append("stopped: \(stopMessage)") }
        if stopMessage != nil && !dryRun && !inputComplete {
            lines.append("input not read yet when the run stopped is read by the next run")
        }
        if pending > 0 && !dryRun {
            lines.append(
                "\(pending) rows remain pending: run the same command again to continue (finished rows are not resent); see them with: botsi-restore report --journal \(journalPath) --status pending"
            )
        }
        if rejectedRows > 0 {
            lines.append(
                "see rejected rows with: botsi-restore report --journal \(journalPath) --status rejected")
        }
        return lines.joined(separator: "\n")
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds)
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", (whole % 3600) / 60))m"
    }
}

/// A moment of a run, for the progress line and the periodic log line.
public struct RunProgress: Sendable {
    public var elapsed: Double
    public var rowsRead: Int
    public var bytesRead: Int64
    public var totalBytes: Int64?
    public var finished: Int
    public var inFlight: Int
    public var waitingToRetry: Int
    public var requests: Int
    public var retries: Int
    public var statuses: [String: Int]
    public var rejected: Int
    public var skipped: Int
    public var duplicates: Int
    /// Requests per second over the last few seconds.
    public var recentRate: Double
    public var stopping: String?
    /// The adaptive send-rate limit while throttled.
    public var throttledRate: Double?
    public var concurrencyLimit: Int
}
