import Foundation

/// Where a row stood at the end of a run: its last definitive answer in that run or an earlier one
/// (a resend without one changes nothing), or, for a row never answered yet, its last error.
public struct RowState: Sendable, Equatable {
    /// The row's status: the answer's, or `pending` for a row never answered.
    public var status: ItemStatus
    public var code: String?
    public var httpStatus: Int?
    /// The run that made the attempt the state comes from.
    public var runID: Int64
    public var attemptedAt: String
    /// For `restored`: the profile snapshot the 200 returned.
    public var profileState: String?
    public var accessLevels: String?

    public init(
        status: ItemStatus, code: String?, httpStatus: Int?, runID: Int64, attemptedAt: String, profileState: String?,
        accessLevels: String?
    ) {
        self.status = status
        self.code = code
        self.httpStatus = httpStatus
        self.runID = runID
        self.attemptedAt = attemptedAt
        self.profileState = profileState
        self.accessLevels = accessLevels
    }
}

/// A row whose status or profile snapshot differs between two runs.
public struct RowChange: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    /// `file:line` where the row was last read.
    public var source: String
    /// nil: no run up to the earlier one had sent the row.
    public var before: RowState?
    public var after: RowState
}

extension Journal {
    /// Streams the rows whose state (status, code, and for restored rows the profile snapshot) as
    /// of run `later` differs from their state as of run `earlier` (`earlier` < `later`), in item
    /// order. A row's state as of run R is its last definitive attempt with `run_id <= R` — a row
    /// keeps its final status until another definitive answer replaces it — or, when it has none,
    /// its last attempt (pending, with that error's code). Only rows some run in (earlier, later]
    /// sent can differ, so only those are read.
    public func forEachChange(
        since earlier: Int64, until later: Int64, _ body: (RowChange) throws -> Void
    ) throws {
        // One pass over the touched rows' attempts in the order of `attempts_item` (item, run, id):
        // each row's two states are picked as its attempts go by, and only a changed row is looked
        // up. Two correlated ORDER BY … LIMIT 1 lookups per row cost five times the plain report;
        // a join of two ranked sets was quadratic.
        let sql = """
            SELECT a.item_id, a.id, a.run_id, a.outcome, a.code, a.http_status, a.started_at, a.snapshot_id
            FROM attempts a
            WHERE a.item_id IN (SELECT item_id FROM attempts WHERE run_id > ?1 AND run_id <= ?2) AND a.run_id <= ?2
            ORDER BY a.item_id, a.run_id, a.id
            """
        try beginRead()
        defer { endRead() }
        let (attempts, item, snapshot) = try wrap { () throws(SQLiteError) in
            let attempts = try connection.prepare(sql)
            try attempts.reset(.int(earlier), .int(later))
            let item = try connection.prepare(
                """
                SELECT i.profile_id, i.original_transaction_id,
                    (SELECT path FROM inputs WHERE inputs.id = i.last_input) || ':' || i.last_line
                FROM items i WHERE i.id = ?1
                """)
            let snapshot = try connection.prepare("SELECT profile_state, access_levels FROM snapshots WHERE id = ?1")
            return (attempts, item, snapshot)
        }
        var picks = ChangePicks()
        func flush() throws {
            guard let itemID = picks.itemID, let after = picks.after else { return }
            let before = picks.before
            defer { picks = ChangePicks() }
            // A journal holds each distinct snapshot once (written, merged or upgraded), so two ids
            // are two snapshots: the texts are read only for a row that changed.
            let sameAnswer = before.map { $0.status == after.status && $0.code == after.code } ?? false
            if sameAnswer && (after.status != .restored || before?.snapshotID == after.snapshotID) { return }
            let snapshots = try (
                before: snapshotTexts(before?.snapshotID, snapshot), after: snapshotTexts(after.snapshotID, snapshot)
            )
            let row = try wrap { () throws(SQLiteError) in
                try item.reset(.int(itemID))
                _ = try item.step()
                return (item.text(0) ?? "", item.text(1) ?? "", item.text(2) ?? "")
            }
            try body(
                RowChange(
                    profileId: row.0, originalTransactionId: row.1, source: row.2,
                    before: before.map { $0.state(snapshots.before) }, after: after.state(snapshots.after)))
        }
        while try wrap({ () throws(SQLiteError) in try attempts.step() }) {
            let itemID = attempts.int(0)
            if itemID != picks.itemID {
                try flush()
                picks.itemID = itemID
            }
            let code = attempts.int(3)
            guard let outcome = AttemptOutcome(journalCode: code) else {
                throw JournalError.unknownValue(
                    path: path, table: "attempts", column: "outcome", row: attempts.int(1), value: "\(code)")
            }
            // A retry or a kept answer leaves the row as it was: pending, for a row never answered.
            var status = ItemStatus.pending
            if case .status(let answered) = outcome, answered.isFinal { status = answered }
            let pick = ChangePick(
                status: status, code: attempts.text(4),
                httpStatus: attempts.optionalInt(5).map(Int.init), runID: attempts.int(2),
                startedAt: attempts.int(6), snapshotID: attempts.optionalInt(7))
            picks.add(pick, asOf: earlier)
        }
        try flush()
    }

    private func snapshotTexts(_ id: Int64?, _ statement: SQLiteStatement) throws(JournalError) -> SnapshotTexts? {
        guard let id else { return nil }
        return try wrap { () throws(SQLiteError) in
            try statement.reset(.int(id))
            guard try statement.step() else { return nil }
            return SnapshotTexts(profileState: statement.text(0), accessLevels: statement.text(1))
        }
    }
}

private struct SnapshotTexts {
    var profileState: String?
    var accessLevels: String?
}

/// One attempt, as much of it as a row's state needs.
private struct ChangePick {
    var status: ItemStatus
    var code: String?
    var httpStatus: Int?
    var runID: Int64
    var startedAt: Int64
    var snapshotID: Int64?

    func state(_ snapshot: SnapshotTexts?) -> RowState {
        RowState(
            status: status, code: code, httpStatus: httpStatus, runID: runID,
            attemptedAt: Timestamp.string(milliseconds: startedAt), profileState: snapshot?.profileState,
            accessLevels: snapshot?.accessLevels)
    }
}

/// One row's attempts, oldest first: the last definitive one, else the last one, up to each run.
private struct ChangePicks {
    var itemID: Int64?
    private var beforeFinal, beforeAny, afterFinal, afterAny: ChangePick?

    var before: ChangePick? { beforeFinal ?? beforeAny }
    var after: ChangePick? { afterFinal ?? afterAny }

    mutating func add(_ pick: ChangePick, asOf earlier: Int64) {
        let final = pick.status.isFinal
        if pick.runID <= earlier {
            beforeAny = pick
            if final { beforeFinal = pick }
        }
        afterAny = pick
        if final { afterFinal = pick }
    }
}
