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
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN") }
        defer { try? connection.execute("COMMIT") }
        let wantsItems = filter.statuses.isEmpty || filter.statuses.contains { $0 != "rejected_input" }
        if wantsItems {
            var conditions: [String] = []
            var values: [SQLiteValue] = []
            if let runID = filter.runID {
                conditions.append("id IN (SELECT item_id FROM attempts WHERE run_id = ?)")
                values.append(.int(runID))
            }
            Self.addList("status", filter.statuses, to: &conditions, &values)
            Self.addList("code", filter.codes, to: &conditions, &values)
            if let since = filter.since {
                conditions.append("updated_at >= ?")
                values.append(.text(Timestamp.string(since)))
            }
            let sql =
                """
                SELECT id, profile_id, original_transaction_id, status, code, http_status, attempts, last_source,
                    first_source, updated_at, restored_at, message, profile_state, access_levels, last_run
                FROM items \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")) ORDER BY id
                """
            let (statement, columns) = try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(sql)
                try statement.reset(binding: values)
                return (statement, try ReportRowView.ItemColumns(statement))
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let status =
                    try ItemStatus(journalBytes: statement.bytes(columns.status))
                    ?? decodeEnum(
                        ItemStatus.self, statement.text(columns.status), table: "items", column: "status",
                        row: statement.int(columns.id))
                try body(ReportRowView(statement, item: columns, status: status))
            }
        }
        let wantsRejections =
            filter.statuses.isEmpty || filter.statuses.contains(ItemStatus.rejected.rawValue)
            || filter.statuses.contains("rejected_input")
        if wantsRejections {
            var conditions: [String] = []
            var values: [SQLiteValue] = []
            if let runID = filter.runID {
                conditions.append("(first_run = ? OR last_run = ?)")
                values.append(.int(runID))
                values.append(.int(runID))
            }
            Self.addList("reason", filter.codes, to: &conditions, &values)
            if let since = filter.since {
                conditions.append("updated_at >= ?")
                values.append(.text(Timestamp.string(since)))
            }
            let sql =
                """
                SELECT profile_id, original_transaction_id, reason, file, line, updated_at, message, last_run
                FROM rejections \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY file, line
                """
            let (statement, columns) = try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(sql)
                try statement.reset(binding: values)
                return (statement, try ReportRowView.RejectionColumns(statement))
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                // Rejections are few: their `file:line` source is built as text.
                var source = "\(statement.text(columns.file) ?? ""):\(statement.int(columns.line))"
                try source.withUTF8 { source in
                    try body(ReportRowView(statement, rejection: columns, source: source))
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
