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
        let definitive = ItemStatus.sqlList(ItemStatus.allCases.filter(\.isFinal))
        // Each touched row's two states are picked by a lookup into `attempts_item` (a row has few
        // attempts), so the query is linear in the rows touched. A join of two ranked sets of every
        // touched row's attempts was quadratic: SQLite scanned one whole set per row of the other.
        func pick(upTo run: String) -> String {
            """
            SELECT p.id FROM attempts p WHERE p.item_id = t.item_id AND p.run_id <= \(run)
            ORDER BY p.outcome IN (\(definitive)) DESC, p.run_id DESC, p.id DESC LIMIT 1
            """
        }
        let sql = """
            WITH touched AS (
                SELECT DISTINCT item_id FROM attempts WHERE run_id > ?1 AND run_id <= ?2
            ),
            picked AS (
                SELECT t.item_id AS item_id, (\(pick(upTo: "?2"))) AS after_id, (\(pick(upTo: "?1"))) AS before_id
                FROM touched t
            ),
            sides AS (
                SELECT p.item_id AS item_id,
                    CASE WHEN f.outcome IN (\(definitive)) THEN f.outcome ELSE 0 END AS f_status,
                    f.code AS f_code, f.http_status AS f_http_status, f.run_id AS f_run, f.started_at AS f_started_at,
                    fs.profile_state AS f_profile_state, fs.access_levels AS f_access_levels,
                    b.id AS b_id,
                    CASE WHEN b.outcome IN (\(definitive)) THEN b.outcome ELSE 0 END AS b_status,
                    b.code AS b_code, b.http_status AS b_http_status, b.run_id AS b_run, b.started_at AS b_started_at,
                    bs.profile_state AS b_profile_state, bs.access_levels AS b_access_levels
                FROM picked p
                JOIN attempts f ON f.id = p.after_id
                LEFT JOIN snapshots fs ON fs.id = f.snapshot_id
                LEFT JOIN attempts b ON b.id = p.before_id
                LEFT JOIN snapshots bs ON bs.id = b.snapshot_id
            )
            SELECT i.id AS id, i.profile_id AS profile_id, i.original_transaction_id AS original_transaction_id,
                (SELECT path FROM inputs WHERE inputs.id = i.last_input) || ':' || i.last_line AS last_source,
                CASE WHEN s.b_id IS NULL THEN NULL ELSE s.b_status END AS before_status, s.b_code AS before_code,
                s.b_http_status AS before_http_status, s.b_run AS before_run, s.b_started_at AS before_started_at,
                s.b_profile_state AS before_profile_state, s.b_access_levels AS before_access_levels,
                s.f_status AS after_status, s.f_code AS after_code, s.f_http_status AS after_http_status,
                s.f_run AS after_run, s.f_started_at AS after_started_at, s.f_profile_state AS after_profile_state,
                s.f_access_levels AS after_access_levels
            FROM sides s
            JOIN items i ON i.id = s.item_id
            WHERE s.b_id IS NULL
                OR s.b_status IS NOT s.f_status
                OR s.b_code IS NOT s.f_code
                OR (s.f_status = \(ItemStatus.restored.journalCode)
                    AND (s.b_profile_state IS NOT s.f_profile_state OR s.b_access_levels IS NOT s.f_access_levels))
            ORDER BY i.id
            """
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN") }
        defer { try? connection.execute("COMMIT") }
        let (statement, before, after) = try wrap { () throws(SQLiteError) in
            let statement = try connection.prepare(sql)
            try statement.reset(.int(earlier), .int(later))
            return (
                statement, try StateColumns(statement, prefix: "before_"), try StateColumns(statement, prefix: "after_")
            )
        }
        let id = try wrap { () throws(SQLiteError) in try statement.column("id") }
        func state(_ column: StateColumns) throws(JournalError) -> RowState {
            let code = statement.int(column.status)
            guard let status = ItemStatus(journalCode: code) else {
                throw .unknownValue(
                    path: path, table: "attempts", column: "outcome", row: statement.int(id), value: "\(code)")
            }
            return RowState(
                status: status,
                code: statement.text(column.code), httpStatus: statement.optionalInt(column.httpStatus).map(Int.init),
                runID: statement.int(column.run),
                attemptedAt: Timestamp.string(milliseconds: statement.int(column.startedAt)),
                profileState: statement.text(column.profileState), accessLevels: statement.text(column.accessLevels))
        }
        let profileId = try wrap { () throws(SQLiteError) in try statement.column("profile_id") }
        let transactionId = try wrap { () throws(SQLiteError) in try statement.column("original_transaction_id") }
        let source = try wrap { () throws(SQLiteError) in try statement.column("last_source") }
        while try wrap({ () throws(SQLiteError) in try statement.step() }) {
            // No answer by the earlier run: the row had not been sent by then.
            var stateBefore: RowState?
            if !statement.isNull(before.status) { stateBefore = try state(before) }
            try body(
                RowChange(
                    profileId: statement.text(profileId) ?? "",
                    originalTransactionId: statement.text(transactionId) ?? "",
                    source: statement.text(source) ?? "", before: stateBefore, after: try state(after)))
        }
    }
}

/// One side's columns of the change query (`before_…` or `after_…`).
private struct StateColumns {
    let status, code, httpStatus, run, startedAt, profileState, accessLevels: Int32

    init(_ statement: SQLiteStatement, prefix: String) throws(SQLiteError) {
        status = try statement.column(prefix + "status")
        code = try statement.column(prefix + "code")
        httpStatus = try statement.column(prefix + "http_status")
        run = try statement.column(prefix + "run")
        startedAt = try statement.column(prefix + "started_at")
        profileState = try statement.column(prefix + "profile_state")
        accessLevels = try statement.column(prefix + "access_levels")
    }
}
