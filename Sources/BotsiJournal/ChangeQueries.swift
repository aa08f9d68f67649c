import Foundation

/// Where a row stood at the end of a run: its last definitive answer in that run or an earlier one
/// (a resend without one changes nothing), or, for a row never answered yet, its last error.
public struct RowState: Sendable, Equatable {
    /// The row's status: the answer's, or `pending` for a row never answered.
    public var status: String
    public var code: String?
    public var httpStatus: Int?
    /// The run that made the attempt the state comes from.
    public var runID: Int64
    public var attemptedAt: String
    /// For `restored`: the profile snapshot the 200 returned.
    public var profileState: String?
    public var accessLevels: String?

    public init(
        status: String, code: String?, httpStatus: Int?, runID: Int64, attemptedAt: String, profileState: String?,
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
        let sql = """
            WITH touched AS (
                SELECT DISTINCT item_id FROM attempts WHERE run_id > ?1 AND run_id <= ?2
            ),
            graded AS (
                SELECT a.*, a.outcome IN ('restored', 'nothing_to_restore', 'profile_not_found', 'rejected', 'failed')
                    AS definitive
                FROM attempts a JOIN touched t ON t.item_id = a.item_id
                WHERE a.run_id <= ?2
            ),
            ranked AS (
                SELECT item_id, run_id, started_at, http_status, code,
                    CASE WHEN definitive THEN outcome ELSE 'pending' END AS status,
                    profile_state, access_levels,
                    row_number() OVER (
                        PARTITION BY item_id ORDER BY definitive DESC, run_id DESC, id DESC
                    ) AS position_after,
                    row_number() OVER (
                        PARTITION BY item_id, run_id <= ?1 ORDER BY definitive DESC, run_id DESC, id DESC
                    ) AS position_in_half
                FROM graded
            ),
            after AS (SELECT * FROM ranked WHERE position_after = 1),
            before AS (SELECT * FROM ranked WHERE run_id <= ?1 AND position_in_half = 1)
            SELECT i.profile_id, i.original_transaction_id, i.last_source,
                b.status, b.code, b.http_status, b.run_id, b.started_at, b.profile_state, b.access_levels,
                f.status, f.code, f.http_status, f.run_id, f.started_at, f.profile_state, f.access_levels
            FROM after f
            JOIN items i ON i.id = f.item_id
            LEFT JOIN before b ON b.item_id = f.item_id
            WHERE b.item_id IS NULL
                OR b.status IS NOT f.status
                OR b.code IS NOT f.code
                OR (f.status = 'restored'
                    AND (b.profile_state IS NOT f.profile_state OR b.access_levels IS NOT f.access_levels))
            ORDER BY i.id
            """
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN") }
        defer { try? connection.execute("COMMIT") }
        let statement = try wrap { () throws(SQLiteError) in try connection.prepare(sql) }
        try wrap { () throws(SQLiteError) in _ = try statement.reset(.int(earlier), .int(later)) }
        while try wrap({ () throws(SQLiteError) in try statement.step() }) {
            var before: RowState?
            if !statement.isNull(3) {
                before = RowState(
                    status: statement.text(3) ?? "", code: statement.text(4),
                    httpStatus: statement.optionalInt(5).map(Int.init), runID: statement.int(6),
                    attemptedAt: statement.text(7) ?? "", profileState: statement.text(8),
                    accessLevels: statement.text(9))
            }
            let after = RowState(
                status: statement.text(10) ?? "", code: statement.text(11),
                httpStatus: statement.optionalInt(12).map(Int.init), runID: statement.int(13),
                attemptedAt: statement.text(14) ?? "", profileState: statement.text(15),
                accessLevels: statement.text(16))
            try body(
                RowChange(
                    profileId: statement.text(0) ?? "", originalTransactionId: statement.text(1) ?? "",
                    source: statement.text(2) ?? "", before: before, after: after))
        }
    }
}
