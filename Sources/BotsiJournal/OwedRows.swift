import Foundation

/// Which rows a run owes, whatever its input: the statuses it sends unconditionally and those it
/// sends once their last definitive answer is older than `answeredBefore`. The run's lifecycle
/// table decides them (`OutcomePolicy.selection`); the journal only finds the rows.
public struct OwedSelection: Sendable, Equatable {
    public var statuses: Set<ItemStatus>
    public var refreshStatuses: Set<ItemStatus>
    public var answeredBefore: Date?
    /// `--answered-before` (a stopped selection's continuation): of `statuses`, the final ones are
    /// chosen only when last answered before this instant.
    public var finalAnsweredBefore: Date?

    public init(
        statuses: Set<ItemStatus>, refreshStatuses: Set<ItemStatus> = [], answeredBefore: Date? = nil,
        finalAnsweredBefore: Date? = nil
    ) {
        self.statuses = statuses
        self.refreshStatuses = refreshStatuses
        self.answeredBefore = answeredBefore
        self.finalAnsweredBefore = finalAnsweredBefore
    }
}

/// A row the journal owes, as a run picks it up.
public struct OwedRow: Sendable, Equatable {
    public var itemID: Int64
    public var profileID: String
    public var originalTransactionID: String
    public var status: ItemStatus
    /// Attempts earlier runs made.
    public var attempts: Int
    /// `file:line` where the pair was last read.
    public var source: String
    /// The run that last worked on it, given back its row when a stop leaves the row unsent.
    public var lastRun: Int64
}

/// Rows a killed run left in flight, as the next run found them.
public struct InFlightRecovery: Sendable, Equatable {
    /// Pending rows left `in_flight`, pending again.
    public var pending: Int
    /// Final rows left marked, unmarked and otherwise as they were.
    public var final: Int

    public init(pending: Int, final: Int) {
        self.pending = pending
        self.final = final
    }
}

/// Rows a run worked on, by their status and code at its end.
public struct RunRowCount: Sendable, Equatable {
    public var status: ItemStatus
    public var code: String?
    public var count: Int
    /// How many of them this run did not send (it stopped first).
    public var notSent: Int

    public init(status: ItemStatus, code: String?, count: Int, notSent: Int) {
        self.status = status
        self.code = code
        self.count = count
        self.notSent = notSent
    }
}

extension Journal {
    /// Owed rows with an id above `after`, oldest first, at most `limit` of them: a run reads
    /// them batch by batch, never all at once. Rows this run already claimed are left out.
    public func owedRows(
        after: Int64, limit: Int, selection: OwedSelection, runID: Int64
    ) throws(JournalError) -> [OwedRow] {
        let columns =
            "id, profile_id, original_transaction_id, status, attempts, "
            + "(SELECT path FROM inputs WHERE inputs.id = last_input) || ':' || last_line, last_run"
        let sql = Self.owedQuery(columns: columns, selection: selection) + " ORDER BY id LIMIT ?2"
        // The status is decoded outside SQLite's wrap: the query selects known statuses only, and
        // still a reader never guesses one (docs/journal.md).
        typealias Found = (
            itemID: Int64, profileID: String, transactionID: String, status: Int64, attempts: Int64, source: String,
            lastRun: Int64
        )
        let found = try wrap { () throws(SQLiteError) -> [Found] in
            let statement = try statement(built: sql)
            try statement.reset(
                binding: Self.owedValues(after: after, limit: limit, selection: selection, runID: runID))
            var rows: [Found] = []
            while try statement.step() {
                rows.append(
                    (
                        statement.int(0), statement.text(1) ?? "", statement.text(2) ?? "", statement.int(3),
                        statement.int(4), statement.text(5) ?? "", statement.int(6)
                    ))
            }
            statement.rewind()
            return rows
        }
        var rows: [OwedRow] = []
        rows.reserveCapacity(found.count)
        for row in found {
            guard let status = ItemStatus(journalCode: row.status) else {
                throw .unknownValue(
                    path: path, table: "items", column: "status", row: row.itemID, value: "\(row.status)")
            }
            rows.append(
                OwedRow(
                    itemID: row.itemID, profileID: row.profileID, originalTransactionID: row.transactionID,
                    status: status, attempts: Int(row.attempts), source: row.source, lastRun: row.lastRun))
        }
        return rows
    }

    /// How many rows `owedRows` would still hand out after `after`: what a run that stopped first
    /// leaves owed.
    public func owedRowCount(after: Int64, selection: OwedSelection, runID: Int64) throws(JournalError) -> Int {
        // One row of a count: the limit (-1, none) only keeps the parameters those of `owedRows`.
        let sql = Self.owedQuery(columns: "count(*)", selection: selection) + " LIMIT ?2"
        return try wrap { () throws(SQLiteError) in
            let statement = try statement(built: sql)
            try statement.reset(binding: Self.owedValues(after: after, limit: -1, selection: selection, runID: runID))
            defer { statement.rewind() }
            return try statement.step() ? Int(statement.int(0)) : 0
        }
    }

    /// The owed rows after `?1` not claimed by run `?3` (`?4`: the refresh cutoff).
    private static func owedQuery(columns: String, selection: OwedSelection) -> String {
        let refreshing = selection.answeredBefore != nil && !selection.refreshStatuses.isEmpty
        let finalStatuses = selection.statuses.filter(\.isFinal)
        let continuing = selection.finalAnsweredBefore != nil && !finalStatuses.isEmpty
        if selection.statuses == [.pending] && !refreshing {
            // The plain run: the partial index `items_pending` holds exactly these rows, in id order
            // (named, or the planner may pick `items_status` and sort every pending row per batch).
            return """
                SELECT \(columns) FROM items INDEXED BY items_pending
                WHERE status = 0 AND id > ?1 AND last_run != ?3
                """
        }
        // Failures and refreshable rows may be most of the journal: walk it in id order once,
        // batch by batch (`+status` keeps SQLite from trading that walk for an index and a sort).
        var conditions = [
            "+status IN (\(list(continuing ? selection.statuses.subtracting(finalStatuses) : selection.statuses)))"
        ]
        if continuing {
            conditions.append("(+status IN (\(list(finalStatuses))) AND answered_at < ?5)")
        }
        if refreshing {
            conditions.append("(+status IN (\(list(selection.refreshStatuses))) AND answered_at < ?4)")
        }
        return """
            SELECT \(columns) FROM items
            WHERE id > ?1 AND last_run != ?3 AND (\(conditions.joined(separator: " OR ")))
            """
    }

    private static func owedValues(after: Int64, limit: Int, selection: OwedSelection, runID: Int64) -> [SQLiteValue] {
        var values: [SQLiteValue] = [.int(after), .int(Int64(limit)), .int(runID)]
        let refreshCutoff = selection.refreshStatuses.isEmpty ? nil : selection.answeredBefore
        let finalCutoff = selection.statuses.contains(where: \.isFinal) ? selection.finalAnsweredBefore : nil
        if refreshCutoff != nil || finalCutoff != nil {
            values.append(refreshCutoff.map { .int(Timestamp.milliseconds($0)) } ?? .null)
        }
        if let finalCutoff { values.append(.int(Timestamp.milliseconds(finalCutoff))) }
        return values
    }

    private static func list(_ statuses: Set<ItemStatus>) -> String { ItemStatus.sqlList(statuses) }

    /// Makes an owed row this run's: its input will not send it a second time, and its counts
    /// include it. Given the run that had it before, it gives the row back (a stop left it unsent).
    public func claim(itemID: Int64, runID: Int64) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement("UPDATE items SET last_run = ? WHERE id = ?").reset(.int(runID), .int(itemID)).run()
        }
    }

    /// Rows held for review in the whole journal (`run_counts` keeps them by status): what a run
    /// that found nothing owed tells of, since a plain run leaves them.
    public func heldRowCount() throws(JournalError) -> Int {
        try wrap { () throws(SQLiteError) in
            let count = try statement("SELECT coalesce(sum(rows), 0) FROM run_counts WHERE status = ?")
            try count.reset(.int(ItemStatus.held.journalCode))
            defer { count.rewind() }
            return try count.step() ? Int(count.int(0)) : 0
        }
    }

    /// Input rows run `runID` was the last to find rejected: what a run without a recorded
    /// summary (killed) is counted by, as `status` counts the journal's.
    public func rejectionCount(runID: Int64) throws(JournalError) -> Int {
        try wrap { () throws(SQLiteError) in
            let count = try statement("SELECT count(*) FROM rejections WHERE last_run = ?")
            try count.reset(.int(runID))
            defer { count.rewind() }
            return try count.step() ? Int(count.int(0)) : 0
        }
    }

    /// The rows run `runID` worked on (its new input rows and the owed rows it claimed), by their
    /// status and code now: what the run's summary and its `runs` line show. Kept as the rows change
    /// (`run_counts`, by the journal's triggers), so it is read at once however large the run;
    /// `notSent` (its pending rows it never marked) walks only the journal's pending rows.
    public func rowCounts(runID: Int64) throws(JournalError) -> [RunRowCount] {
        let (rows, notSent) = try wrap { () throws(SQLiteError) in
            let byStatus = try statement(
                "SELECT status, code, rows FROM run_counts WHERE run_id = ? AND rows != 0 ORDER BY status, code")
            try byStatus.reset(.int(runID))
            var counts: [(Int64, String, Int)] = []
            while try byStatus.step() {
                counts.append((byStatus.int(0), byStatus.text(1) ?? "", Int(byStatus.int(2))))
            }
            let unsent = try statement(
                """
                SELECT count(*) FROM items INDEXED BY items_pending
                WHERE status = 0 AND last_run = ?1 AND sent_run IS NOT ?1
                """)
            try unsent.reset(.int(runID))
            defer { unsent.rewind() }
            return (counts, try unsent.step() ? Int(unsent.int(0)) : 0)
        }
        var counts: [RunRowCount] = []
        // The rows not sent are told once, with the first pending count.
        var untold = notSent
        for (code, text, count) in rows {
            guard let status = ItemStatus(journalCode: code) else {
                throw .unknownValue(path: path, table: "run_counts", column: "status", row: runID, value: "\(code)")
            }
            counts.append(
                RunRowCount(
                    status: status, code: text.isEmpty ? nil : text, count: count,
                    notSent: status == .pending ? untold : 0))
            if status == .pending { untold = 0 }
        }
        return counts
    }
}
