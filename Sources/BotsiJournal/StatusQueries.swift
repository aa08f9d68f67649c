import Foundation

/// Item counts for one (status, code) pair.
public struct StatusCodeCount: Sendable, Equatable {
    public var status: ItemStatus
    public var code: String?
    public var count: Int

    public init(status: ItemStatus, code: String?, count: Int) {
        self.status = status
        self.code = code
        self.count = count
    }
}

/// What one run has sent so far, read from its attempts (so it is known while the run writes).
public struct RunActivity: Sendable, Equatable {
    public var requests = 0
    /// Attempts by outcome: a status, `retry` for an attempt that was retried, or `kept`.
    public var outcomes: [AttemptOutcome: Int] = [:]
    /// When the last attempt started: where the time of a killed run, which wrote no end, stops.
    public var lastAttemptAt: String?
    /// Attempts that started within the recent window the caller asked about.
    public var recentRequests = 0
    /// For a killed run (no count of its own on record, nobody holding the lock): the second and
    /// later attempts of a row among its attempts, the resends its summary would count as
    /// retries. Nil for a live run, whose attempts `status` does not walk.
    public var retries: Int?

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
    /// The long window the next run's pacing starts from, if a run recorded one.
    public var longWindow: RecordedLongWindow?
    /// The inputs no run has read to their end (`Journal.unreadInputs`).
    public var unreadInputs: [UnreadInput] = []
    /// `unreadInputs` whose file is there, to be read again, and those whose file is gone, named
    /// apart: asked of the file system once, when the snapshot is read.
    public var readableInputs: [UnreadInput] = []
    public var goneInputs: [UnreadInput] = []
    /// The run that last read standard input and stopped before its end (`Journal.unreadStandardInput`).
    public var standardInputUnreadBy: RunRecord?
    /// For a journal made by `merge`: the shard journals it copies, each once, by the absolute
    /// path `merge` recorded (or the name it was given, from an older merge).
    public var mergedFrom: [String] = []
    /// For a journal made by `merge`: each shard's latest run, by the shard's `mergedFrom` path
    /// (the journal's latest run is one shard's; another may have ended otherwise).
    public var shardLatestRuns: [String: RunRecord] = [:]

    public init() {}

    public func itemCount(status: ItemStatus) -> Int {
        items.filter { $0.status == status }.reduce(0) { $0 + $1.count }
    }
}

extension Journal {
    /// Refused input rows by reason, the most first (then by reason), inside the caller's read
    /// transaction: from `rejection_counts` at once, or, on a journal of 0.2.0 no run has opened
    /// since (a reader does not write it), by counting `rejections`.
    func rejectionCountsByReason() throws(JournalError) -> [(reason: String, count: Int)] {
        try wrap { () throws(SQLiteError) in
            let counted = try connection.hasTable("rejection_counts")
            let rows = try connection.prepare(
                counted
                    ? "SELECT reason, rows AS n FROM rejection_counts WHERE rows != 0 ORDER BY n DESC, reason"
                    : "SELECT reason, count(*) AS n FROM rejections GROUP BY reason ORDER BY n DESC, reason")
            var counts: [(reason: String, count: Int)] = []
            while try rows.step() { counts.append((rows.text(0) ?? "", Int(rows.int(1)))) }
            return counts
        }
    }

    /// Reads the journal's state for `status`. `recentSince` bounds the window that
    /// `activity.recentRequests` counts. Works on a journal a live run is writing: a read
    /// transaction sees whole committed batches only. `runLockHeld`: whether a live run held the
    /// journal's lock when the caller looked; a latest run without an end and without a holder
    /// (killed) has its resends counted by a walk of its own attempts, a live one never does.
    public func snapshot(recentSince: Date, runLockHeld: Bool = false) throws(JournalError) -> JournalSnapshot {
        try beginRead()
        defer { endRead() }
        var snapshot = JournalSnapshot()
        snapshot.runCount = Int(
            try wrap { () throws(SQLiteError) in try connection.scalarInt("SELECT count(*) FROM runs") } ?? 0)
        snapshot.latestRun = try runRecords(where: "id = (SELECT max(id) FROM runs)").first
        snapshot.longWindow = try lastLongWindow()
        let history = try inputHistory(before: .max)
        snapshot.unreadInputs = history.unread
        for input in history.unread {
            if input.exists { snapshot.readableInputs.append(input) } else { snapshot.goneInputs.append(input) }
        }
        if let run = history.standardInputUnreadBy {
            snapshot.standardInputUnreadBy = try runRecords(where: "id = \(run)").first
        }
        // Kept as the rows change (`run_counts`): read at once, however large the journal.
        let items = try wrap { () throws(SQLiteError) in
            try connection.prepare(
                """
                SELECT status, code, sum(rows) FROM run_counts GROUP BY status, code HAVING sum(rows) != 0
                ORDER BY status, code
                """)
        }
        var byName: [(ItemStatus, String?, Int)] = []
        while try wrap({ () throws(SQLiteError) in try items.step() }) {
            let code = items.int(0)
            guard let status = ItemStatus(journalCode: code) else {
                throw JournalError.unknownValue(
                    path: path, table: "run_counts", column: "status", row: 0, value: "\(code)")
            }
            let text = items.text(1) ?? ""
            byName.append((status, text.isEmpty ? nil : text, Int(items.int(2))))
        }
        // In the order of status names, as every version printed them.
        for (status, code, count) in byName.sorted(by: { ($0.0.rawValue, $0.1 ?? "") < ($1.0.rawValue, $1.1 ?? "") }) {
            snapshot.items.append(StatusCodeCount(status: status, code: code, count: count))
        }
        for (reason, count) in try rejectionCountsByReason() { snapshot.rejections[reason, default: 0] += count }
        if let run = snapshot.latestRun {
            snapshot.activity = try activity(runID: run.id, recentSince: recentSince)
            // A first attempt answered "retry" is not a retry: only a row's later attempts are. A
            // killed run's are counted from its own attempts; a live run's attempts are not walked
            // (`status` gives its attempts answered "retry" so far, from `run_attempts`).
            if run.counts.retries == nil, run.endedAt == nil, !runLockHeld {
                snapshot.activity.retries = try killedRunResends(runID: run.id)
            }
        }
        var latestByShard: [String: Int64] = [:]
        try wrap { () throws(SQLiteError) in
            let shards = try connection.prepare(
                """
                SELECT coalesce(json_extract(options, '$.mergedFrom.path'), json_extract(options, '$.mergedFrom.journal')),
                    id
                FROM runs WHERE json_valid(options) ORDER BY id
                """)
            while try shards.step() {
                if let shard = shards.text(0) {
                    if !snapshot.mergedFrom.contains(shard) { snapshot.mergedFrom.append(shard) }
                    latestByShard[shard] = shards.int(1)
                }
            }
        }
        for (shard, id) in latestByShard {
            snapshot.shardLatestRuns[shard] = try runRecords(where: "id = \(id)").first
        }
        return snapshot
    }

    /// Attempts by outcome for each run, for `runs` on runs that never wrote their counts
    /// (still running, or killed): kept as attempts are written (`run_attempts`).
    public func attemptOutcomesByRun() throws(JournalError) -> [Int64: [AttemptOutcome: Int]] {
        let statement = try wrap { () throws(SQLiteError) in
            try connection.prepare("SELECT run_id, outcome, sum(attempts) FROM run_attempts GROUP BY run_id, outcome")
        }
        var result: [Int64: [AttemptOutcome: Int]] = [:]
        while try wrap({ () throws(SQLiteError) in try statement.step() }) {
            let code = statement.int(1)
            guard let outcome = AttemptOutcome(journalCode: code) else {
                throw JournalError.unknownValue(
                    path: path, table: "run_attempts", column: "outcome", row: statement.int(0), value: "\(code)")
            }
            result[statement.int(0), default: [:]][outcome, default: 0] += Int(statement.int(2))
        }
        return result
    }

    /// Run `runID`'s attempts on record (`run_attempts`, read at once).
    public func recordedRequests(runID: Int64) throws(JournalError) -> Int {
        try wrap { () throws(SQLiteError) in
            let count = try statement("SELECT coalesce(sum(attempts), 0) FROM run_attempts WHERE run_id = ?")
            try count.reset(.int(runID))
            defer { count.rewind() }
            return try count.step() ? Int(count.int(0)) : 0
        }
    }

    /// Second and later attempts of a row among run `runID`'s attempts: a walk of that run's own
    /// attempts (`attempts_run`), for a killed run only, never a live or finished one.
    public func killedRunResends(runID: Int64) throws(JournalError) -> Int {
        try wrap { () throws(SQLiteError) in
            let count = try statement(
                "SELECT count(*) - count(DISTINCT item_id) FROM attempts INDEXED BY attempts_run WHERE run_id = ?")
            try count.reset(.int(runID))
            defer { count.rewind() }
            return try count.step() ? Int(count.int(0)) : 0
        }
    }

    /// What run `runID` has sent so far, from `run_attempts`; the recent requests from its
    /// pacing samples (`run_samples`, every few seconds): nothing here walks its attempts.
    private func activity(runID: Int64, recentSince: Date) throws(JournalError) -> RunActivity {
        var activity = RunActivity()
        let outcomes = try wrap { () throws(SQLiteError) in
            try connection.prepare(
                "SELECT outcome, sum(attempts), max(last_at) FROM run_attempts WHERE run_id = ? GROUP BY outcome"
            ).reset(.int(runID))
        }
        var last: Int64?
        while try wrap({ () throws(SQLiteError) in try outcomes.step() }) {
            let code = outcomes.int(0)
            guard let outcome = AttemptOutcome(journalCode: code) else {
                throw JournalError.unknownValue(
                    path: path, table: "run_attempts", column: "outcome", row: runID, value: "\(code)")
            }
            let count = Int(outcomes.int(1))
            activity.outcomes[outcome, default: 0] += count
            activity.requests += count
            last = max(last ?? .min, outcomes.int(2))
        }
        activity.lastAttemptAt = last.map { Timestamp.string(milliseconds: $0) }
        try wrap { () throws(SQLiteError) in
            // Requests since the window began: the attempts so far less the count of the sample at
            // its start (none before it: all of them). The latest sample instead of the attempts
            // lagged by up to a sample's period, and said 0/s until the first one.
            let recent = try connection.prepare(
                "SELECT requests FROM run_samples WHERE run_id = ?1 AND at <= ?2 ORDER BY at DESC LIMIT 1")
            try recent.reset(.int(runID), .int(Timestamp.milliseconds(recentSince)))
            let before = try recent.step() ? Int(recent.int(0)) : 0
            activity.recentRequests = max(activity.requests - before, 0)
        }
        return activity
    }

    /// Runs matching `condition`, oldest first, their columns read by name and their JSON decoded.
    func runRecords(where condition: String) throws(JournalError) -> [RunRecord] {
        let (statement, column) = try wrap { () throws(SQLiteError) in
            let statement = try connection.prepare(
                """
                SELECT id, started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs, counts,
                    progress
                FROM runs WHERE \(condition) ORDER BY id
                """)
            return (statement, try RunColumns(statement))
        }
        var runs: [RunRecord] = []
        while try wrap({ () throws(SQLiteError) in try statement.step() }) {
            let id = statement.int(column.id)
            func json<T: Decodable>(_ type: T.Type, _ index: Int32, _ name: String, empty: String) throws(JournalError)
                -> T
            {
                try ColumnJSON.decode(type, statement.text(index) ?? empty, path: path, column: name, row: id)
            }
            runs.append(
                RunRecord(
                    id: id, startedAt: statement.text(column.startedAt) ?? "", endedAt: statement.text(column.endedAt),
                    state: try decodeEnum(
                        RunState.self, statement.text(column.state), table: "runs", column: "state", row: id),
                    exitCode: statement.optionalInt(column.exitCode).map(Int.init),
                    toolVersion: statement.text(column.toolVersion) ?? "", host: statement.text(column.host) ?? "",
                    pid: Int(statement.int(column.pid)), options: statement.text(column.options) ?? "",
                    inputs: try json([RunInput].self, column.inputs, "inputs", empty: "[]"),
                    counts: try json(RunCounts.self, column.counts, "counts", empty: "{}"),
                    progress: try json(RunProgressRecord.self, column.progress, "progress", empty: "{}")))
        }
        return runs
    }
}

/// The result columns of the `runs` query.
private struct RunColumns {
    let id, startedAt, endedAt, state, exitCode, toolVersion, host, pid, options, inputs, counts, progress: Int32

    init(_ statement: SQLiteStatement) throws(SQLiteError) {
        id = try statement.column("id")
        startedAt = try statement.column("started_at")
        endedAt = try statement.column("ended_at")
        state = try statement.column("state")
        exitCode = try statement.column("exit_code")
        toolVersion = try statement.column("tool_version")
        host = try statement.column("host")
        pid = try statement.column("pid")
        options = try statement.column("options")
        inputs = try statement.column("inputs")
        counts = try statement.column("counts")
        progress = try statement.column("progress")
    }
}
