import Foundation

/// Item counts for one (status, code) pair.
public struct StatusCodeCount: Sendable, Equatable {
    public var status: String
    public var code: String?
    public var count: Int

    public init(status: String, code: String?, count: Int) {
        self.status = status
        self.code = code
        self.count = count
    }
}

/// What one run has sent so far, read from its attempts (so it is known while the run writes).
public struct RunActivity: Sendable, Equatable {
    public var requests = 0
    /// Attempts by outcome: a status, or `retry` for an attempt that was retried.
    public var outcomes: [String: Int] = [:]
    public var firstAttemptAt: String?
    public var lastAttemptAt: String?
    /// Attempts that started within the recent window the caller asked about.
    public var recentRequests = 0

    public init() {}
}

/// Everything `status` shows, read in one transaction so the numbers agree with each other.
public struct JournalSnapshot: Sendable, Equatable {
    /// The newest run (by id), nil for a journal no run has used yet.
    public var latestRun: RunRecord?
    public var runCount = 0
    public var items: [StatusCodeCount] = []
    /// Rows the input checks refused, by reason, over all runs.
    public var rejections: [String: Int] = [:]
    /// The latest run's attempts.
    public var activity = RunActivity()

    public init() {}

    public func itemCount(status: String) -> Int {
        items.filter { $0.status == status }.reduce(0) { $0 + $1.count }
    }
}

extension Journal {
    /// Reads the journal's state for `status`. `recentSince` bounds the window that
    /// `activity.recentRequests` counts. Works on a journal a live run is writing: a read
    /// transaction sees whole committed batches only.
    public func snapshot(recentSince: Date) throws(JournalError) -> JournalSnapshot {
        try wrap { () throws(SQLiteError) in
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            var snapshot = JournalSnapshot()
            snapshot.runCount = Int(try connection.scalarInt("SELECT count(*) FROM runs") ?? 0)
            snapshot.latestRun = try runRecords(where: "id = (SELECT max(id) FROM runs)").first
            let items = try connection.prepare(
                "SELECT status, code, count(*) FROM items GROUP BY status, code ORDER BY status, code")
            while try items.step() {
                snapshot.items.append(
                    StatusCodeCount(status: items.text(0) ?? "", code: items.text(1), count: Int(items.int(2))))
            }
            let rejections = try connection.prepare("SELECT reason, count(*) FROM rejections GROUP BY reason")
            while try rejections.step() {
                snapshot.rejections[rejections.text(0) ?? "", default: 0] += Int(rejections.int(1))
            }
            if let run = snapshot.latestRun {
                snapshot.activity = try activity(runID: run.id, recentSince: recentSince)
            }
            return snapshot
        }
    }

    /// Attempts by outcome for each run, for `runs` on runs that never wrote their counts
    /// (still running, or killed).
    public func attemptOutcomesByRun() throws(JournalError) -> [Int64: [String: Int]] {
        try wrap { () throws(SQLiteError) in
            let statement = try connection.prepare(
                "SELECT run_id, outcome, count(*) FROM attempts GROUP BY run_id, outcome")
            var result: [Int64: [String: Int]] = [:]
            while try statement.step() {
                result[statement.int(0), default: [:]][statement.text(1) ?? "", default: 0] += Int(statement.int(2))
            }
            return result
        }
    }

    private func activity(runID: Int64, recentSince: Date) throws(SQLiteError) -> RunActivity {
        var activity = RunActivity()
        let outcomes = try connection.prepare(
            "SELECT outcome, count(*), min(started_at), max(started_at) FROM attempts WHERE run_id = ? GROUP BY outcome"
        )
        try outcomes.reset(.int(runID))
        while try outcomes.step() {
            let count = Int(outcomes.int(1))
            activity.outcomes[outcomes.text(0) ?? "", default: 0] += count
            activity.requests += count
            if let first = outcomes.text(2), first < (activity.firstAttemptAt ?? "~") {
                activity.firstAttemptAt = first
            }
            if let last = outcomes.text(3), last > (activity.lastAttemptAt ?? "") { activity.lastAttemptAt = last }
        }
        let recent = try connection.prepare("SELECT count(*) FROM attempts WHERE run_id = ? AND started_at >= ?")
        try recent.reset(.int(runID), .text(Timestamp.string(recentSince)))
        if try recent.step() { activity.recentRequests = Int(recent.int(0)) }
        return activity
    }

    func runRecords(where condition: String) throws(SQLiteError) -> [RunRecord] {
        let statement = try connection.prepare(
            """
            SELECT id, started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs, counts,
                progress
            FROM runs WHERE \(condition) ORDER BY id
            """)
        var runs: [RunRecord] = []
        while try statement.step() {
            runs.append(
                RunRecord(
                    id: statement.int(0), startedAt: statement.text(1) ?? "", endedAt: statement.text(2),
                    state: statement.text(3) ?? "", exitCode: statement.optionalInt(4).map(Int.init),
                    toolVersion: statement.text(5) ?? "", host: statement.text(6) ?? "",
                    pid: Int(statement.int(7)), options: statement.text(8) ?? "", inputs: statement.text(9) ?? "",
                    counts: statement.text(10) ?? "", progress: statement.text(11) ?? "{}"))
        }
        return runs
    }
}
