import Foundation

/// One row of a report: a journal item, or a row the input checks refused.
public struct ReportRecord: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    /// The item's status; `rejected` for a row the input checks refused.
    public var status: ItemStatus
    public var code: String?
    public var httpStatus: Int?
    public var attempts: Int
    public var source: String
    public var firstSource: String
    public var updatedAt: String
    public var restoredAt: String?
    public var message: String?
    public var profileState: String?
    /// JSON object: access level id -> {isActive, expiresAt, willRenew, sourceProductId}.
    public var accessLevels: String?
    public var lastRun: Int64
}

public struct ReportFilter: Sendable, Equatable {
    /// Only rows this run sent (or, for input rejections, saw).
    public var runID: Int64?
    public var statuses: [String] = []
    public var codes: [String] = []
    /// Only rows updated at or after this instant.
    public var since: Date?
    public init(runID: Int64? = nil, statuses: [String] = [], codes: [String] = [], since: Date? = nil) {
        self.runID = runID
        self.statuses = statuses
        self.codes = codes
        self.since = since
    }
}

/// A run as the `runs` table records it.
public struct RunRecord: Sendable, Equatable {
    public var id: Int64
    public var startedAt: String
    public var endedAt: String?
    /// `running` until the run records its end (and forever after a kill).
    public var state: RunState
    public var exitCode: Int?
    public var toolVersion: String
    public var host: String
    public var pid: Int
    /// The run's options as JSON, as the runner encoded them (never the key): the journal keeps
    /// them without reading them.
    public var options: String
    /// Empty until the run ends.
    public var inputs: [RunInput]
    /// Empty (every field nil) until the run ends.
    public var counts: RunCounts
    /// What the run rewrites every few seconds while it runs; empty before the first write.
    public var progress = RunProgressRecord()
}

extension Journal {
    /// Streams report rows in a stable order (items by id, then rejections by file and line).
    /// A read transaction keeps the view consistent while a run writes. A row whose status this
    /// version does not know stops the stream with `JournalError.unknownValue`.
    public func forEachReportRecord(
        _ filter: ReportFilter, _ body: (ReportRecord) throws -> Void
    ) throws {
        try forEachReportRow(filter) { try body(ReportRecord($0)) }
    }

    /// The same rows as `forEachReportRecord`, each read in place: a report writes the journal's
    /// bytes on without a `String` per cell. The row is valid only during the call.
    public func forEachReportRow(_ filter: ReportFilter, _ body: (ReportRowView) throws -> Void) throws {
        try beginRead()
        defer { endRead() }
        let wantsItems = filter.statuses.isEmpty || filter.statuses.contains { $0 != "rejected_input" }
        if wantsItems {
            var conditions: [String] = []
            var values: [SQLiteValue] = []
            if let runID = filter.runID {
                conditions.append("i.id IN (SELECT item_id FROM attempts WHERE run_id = ?)")
                values.append(.int(runID))
            }
            let statuses = filter.statuses.compactMap(ItemStatus.init(rawValue:))
            if !filter.statuses.isEmpty {
                // A name no status has (rejected_input) selects no item.
                conditions.append("i.status IN (\(statuses.isEmpty ? "-1" : ItemStatus.sqlList(statuses)))")
            }
            Self.addList("i.code", filter.codes, to: &conditions, &values)
            if let since = filter.since {
                conditions.append("i.updated_at >= ?")
                values.append(.int(Timestamp.milliseconds(since)))
            }
            let sql =
                """
                SELECT i.id AS id, i.profile_id AS profile_id, i.original_transaction_id AS original_transaction_id,
                    i.status AS status, i.code AS code, i.http_status AS http_status, i.attempts AS attempts,
                    i.last_input AS last_input, i.last_line AS last_line, i.first_input AS first_input,
                    i.first_line AS first_line, i.updated_at AS updated_at, i.restored_at AS restored_at,
                    i.message AS message, s.profile_state AS profile_state, s.access_levels AS access_levels,
                    i.last_run AS last_run
                FROM items i LEFT JOIN snapshots s ON s.id = i.snapshot_id
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")) ORDER BY i.id
                """
            let (statement, columns, maker) = try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(sql)
                try statement.reset(binding: values)
                return (statement, try ReportRowView.ItemColumns(statement), try ReportCellMaker(self))
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let code = statement.int(columns.status)
                guard let status = ItemStatus(journalCode: code) else {
                    throw JournalError.unknownValue(
                        path: path, table: "items", column: "status", row: statement.int(columns.id), value: "\(code)")
                }
                try maker.make(
                    source: (statement.int(columns.lastInput), statement.int(columns.lastLine)),
                    firstSource: (statement.int(columns.firstInput), statement.int(columns.firstLine)),
                    updatedAt: statement.int(columns.updatedAt), restoredAt: statement.optionalInt(columns.restoredAt)
                ) { made in
                    try body(ReportRowView(statement, item: columns, status: status, made: made))
                }
            }
        }
        let wantsRejections =
            filter.statuses.isEmpty || filter.statuses.contains(ItemStatus.rejected.rawValue)
            || filter.statuses.contains("rejected_input")
        if wantsRejections {
            var conditions: [String] = []
            var values: [SQLiteValue] = []
            if let runID = filter.runID {
                conditions.append("(r.first_run = ? OR r.last_run = ?)")
                values.append(.int(runID))
                values.append(.int(runID))
            }
            Self.addList("r.reason", filter.codes, to: &conditions, &values)
            if let since = filter.since {
                conditions.append("r.updated_at >= ?")
                values.append(.int(Timestamp.milliseconds(since)))
            }
            let sql =
                """
                SELECT r.profile_id AS profile_id, r.original_transaction_id AS original_transaction_id,
                    r.reason AS reason, r.input_id AS input_id, r.line AS line, r.updated_at AS updated_at,
                    r.message AS message, r.last_run AS last_run
                FROM rejections r JOIN inputs f ON f.id = r.input_id
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY f.path, r.line
                """
            let (statement, columns, maker) = try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(sql)
                try statement.reset(binding: values)
                return (statement, try ReportRowView.RejectionColumns(statement), try ReportCellMaker(self))
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                try maker.make(
                    source: (statement.int(columns.input), statement.int(columns.line)), firstSource: nil,
                    updatedAt: statement.int(columns.updatedAt), restoredAt: nil
                ) { made in
                    try body(ReportRowView(statement, rejection: columns, made: made))
                }
            }
        }
    }

    private static func addList(
        _ column: String, _ list: [String], to conditions: inout [String], _ values: inout [SQLiteValue]
    ) {
        guard !list.isEmpty else { return }
        conditions.append("\(column) IN (\(list.map { _ in "?" }.joined(separator: ", ")))")
        values.append(contentsOf: list.map { .text($0) })
    }

    /// Runs, oldest first.
    public func runs() throws(JournalError) -> [RunRecord] {
        try runRecords(where: "1")
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    public func integrityCheck() throws(JournalError) -> String {
        try wrap { () throws(SQLiteError) in try connection.scalarText("PRAGMA integrity_check") ?? "" }
    }
}
