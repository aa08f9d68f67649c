import BotsiBasics
import BotsiJournal
import Foundation

/// One line per run for `botsi-restore runs`: start, duration, inputs, counts, exit code.
public struct RunLine: Sendable, Equatable {
    public var id: Int64
    public var startedAt: String
    public var endedAt: String?
    public var durationSeconds: Double?
    /// `finished`, `stopped`, `running`, or `killed` (no end recorded, nobody holds the lock).
    public var state: String
    public var exitCode: Int?
    public var inputs: [String]
    /// Rows this run sent, by the status they ended in (keyed by the status's journal text, as
    /// `runs --format jsonl` prints it).
    public var statuses: [String: Int]
    public var rejectedInput: Int
    public var requests: Int
    public var retries: Int
    public var host: String
    /// For a run that never wrote its summary (killed, or still running): its rows are counted
    /// from the journal as they stand, or, without those, from its attempts so far.
    public var countsFromAttempts: Bool

    /// What runs without a recorded summary (killed, or running) are counted by. A killed run as
    /// its summary would have counted it (`Journal.unendedRunCounts`, a walk of its own attempts),
    /// whatever later runs did to its rows; the running run by the counts the journal keeps
    /// (`run_counts`, and `run_attempts` for its requests): its attempts are not walked.
    public struct Unrecorded: Sendable {
        /// The rows each worked on by their status at its end (or now, while it runs).
        public var rows: [Int64: [ItemStatus: Int]] = [:]
        /// The input rows each was the last to find rejected.
        public var rejections: [Int64: Int] = [:]
        /// Requests on record, and the resends among them (second and later attempts of a row).
        public var requests: [Int64: Int] = [:]
        public var retries: [Int64: Int] = [:]

        public init() {}

        /// Read from the journal for those of `runs` without a summary; `holder`, the journal's
        /// lock holder: with one, the latest run is running (as `make` tells it).
        public init(_ journal: Journal, runs: [RunRecord], holder: LockHolder?) throws(JournalError) {
            for run in runs where run.counts.statuses == nil {
                rejections[run.id] = try journal.rejectionCount(runID: run.id)
                if run.id == runs.last?.id, run.endedAt == nil, holder != nil {
                    for count in try journal.liveRunRowCounts(runID: run.id) {
                        rows[run.id, default: [:]][count.status, default: 0] += count.count
                    }
                    continue
                }
                let counts = try journal.unendedRunCounts(runID: run.id)
                rows[run.id] = [:]
                for count in counts.rows {
                    rows[run.id, default: [:]][count.status, default: 0] += count.count
                }
                requests[run.id] = counts.requests
                retries[run.id] = counts.retries
            }
        }
    }

    public static func make(
        runs: [RunRecord], attemptOutcomes: [Int64: [AttemptOutcome: Int]],
        unrecorded: Unrecorded = Unrecorded(), holder: LockHolder?, now: Date
    ) -> [RunLine] {
        runs.map { run in
            let isLatest = run.id == runs.last?.id
            var state = run.state.rawValue
            if run.endedAt == nil { state = isLatest && holder != nil ? "running" : "killed" }
            let start = Timestamp.date(run.startedAt)
            let end =
                run.endedAt.flatMap(Timestamp.date) ?? (run.endedAt == nil && isLatest && holder != nil ? now : nil)
            let outcomes = attemptOutcomes[run.id] ?? [:]
            // Without a summary, the rows are counted from the attempts that gave them a status
            // (`retry` and `kept` left the row as it was).
            var fromAttempts: [ItemStatus: Int] = [:]
            for (outcome, count) in outcomes {
                if let status = outcome.status { fromAttempts[status, default: 0] += count }
            }
            var statuses = run.counts.statuses ?? unrecorded.rows[run.id] ?? fromAttempts
            // A killed run's rows in flight are pending: the next run's start makes them so.
            if state == "killed", let inFlight = statuses.removeValue(forKey: .inFlight) {
                statuses[.pending, default: 0] += inFlight
            }
            return RunLine(
                id: run.id, startedAt: run.startedAt, endedAt: run.endedAt,
                durationSeconds: start.flatMap { start in end.map { max($0.timeIntervalSince(start), 0) } },
                state: state, exitCode: run.exitCode, inputs: inputPaths(run),
                statuses: Dictionary(uniqueKeysWithValues: statuses.map { ($0.key.rawValue, $0.value) }),
                rejectedInput: run.counts.rejectedByReason?.values.reduce(0, +) ?? unrecorded.rejections[run.id] ?? 0,
                requests: run.counts.requests ?? unrecorded.requests[run.id] ?? outcomes.values.reduce(0, +),
                retries: run.counts.retries ?? unrecorded.retries[run.id] ?? outcomes[.retry] ?? 0, host: run.host,
                countsFromAttempts: run.counts.statuses == nil)
        }
    }

    /// Rows that ended in `status`.
    public func count(_ status: ItemStatus) -> Int { statuses[status.rawValue] ?? 0 }

    static func inputPaths(_ run: RunRecord) -> [String] {
        if !run.inputs.isEmpty { return run.inputs.map(\.path) }
        return RecordedOptions(run.options).inputs ?? []
    }
}

public enum RunsFormat: String, Sendable, CaseIterable {
    case table, jsonl
}

public enum RunsWriter {
    static let tableColumns = [
        "run", "started", "duration", "state", "exit", "restored", "nothing", "notFound", "failed", "pending",
        "rejected", "requests", "inputs",
    ]

    public static func write(_ lines: [RunLine], format: RunsFormat, to write: @escaping (String) -> Void) {
        switch format {
        case .jsonl:
            for line in lines { write(json(line) + "\n") }
        case .table:
            let table = TextTable(columns: tableColumns, maxWidth: 60, write: write)
            for line in lines {
                let count = { (status: ItemStatus) in String(line.count(status)) }
                table.add([
                    String(line.id), line.startedAt, line.durationSeconds.map { Basics.duration($0) } ?? "?",
                    line.state, line.exitCode.map(String.init) ?? "-", count(.restored), count(.nothingToRestore),
                    count(.profileNotFound), String(line.count(.failed) + line.count(.rejected)),
                    count(.pending), String(line.rejectedInput), String(line.requests),
                    line.inputs.joined(separator: " "),
                ])
            }
            table.finish()
        }
    }

    static func json(_ line: RunLine) -> String {
        var object: [String: Any] = [
            "run": line.id, "startedAt": line.startedAt, "state": line.state, "inputs": line.inputs,
            "statuses": line.statuses, "rejectedInput": line.rejectedInput, "requests": line.requests,
            "retries": line.retries, "host": line.host, "countsFromAttempts": line.countsFromAttempts,
        ]
        object["endedAt"] = line.endedAt ?? NSNull()
        object["durationSeconds"] = line.durationSeconds ?? NSNull()
        object["exitCode"] = line.exitCode ?? NSNull()
        // Inside JSON strings the visible escapes are JSON escapes: input names keep no raw bidi override.
        return VisibleText.escaped(StatusReport.json(object))
    }
}

extension RunLine {
    /// A run with no rows yet, for callers that fill in the rest (a test's model of a page).
    public init(id: Int64, startedAt: String, state: String) {
        self.init(
            id: id, startedAt: startedAt, endedAt: nil, durationSeconds: nil, state: state, exitCode: nil, inputs: [],
            statuses: [:], rejectedInput: 0, requests: 0, retries: 0, host: "", countsFromAttempts: false)
    }
}
