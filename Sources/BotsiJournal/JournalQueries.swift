import Foundation

/// One row of a report: a journal item, or a row the input checks refused.
public struct ReportRecord: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    public var status: String
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
    public var state: String
    public var exitCode: Int?
    public var toolVersion: String
    public var host: String
    public var pid: Int
    public var options: String
    public var inputs: String
    public var counts: String
    /// JSON the run rewrites every few seconds while it runs: rowsRead, bytesRead, totalBytes,
    /// requests, updatedAt.
    public var progress: String = "{}"
}

extension Journal {
    /// Streams report rows in a stable order (items by id, then rejections by file and line).
    /// A read transaction keeps the view consistent while a run writes.
    public func forEachReportRecord(
        _ filter: ReportFilter, _ body: (ReportRecord) throws -> Void
    ) throws {
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
                SELECT profile_id, original_transaction_id, status, code, http_status, attempts, last_source,
                    first_source, updated_at, restored_at, message, profile_state, access_levels, last_run
                FROM items \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")) ORDER BY id
                """
            let statement = try wrap { () throws(SQLiteError) in try connection.prepare(sql) }
            try wrap { () throws(SQLiteError) in
                _ = try statement.reset()
                for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                try body(
                    ReportRecord(
                        profileId: statement.text(0) ?? "", originalTransactionId: statement.text(1) ?? "",
                        status: statement.text(2) ?? "", code: statement.text(3),
                        httpStatus: statement.optionalInt(4).map(Int.init), attempts: Int(statement.int(5)),
                        source: statement.text(6) ?? "", firstSource: statement.text(7) ?? "",
                        updatedAt: statement.text(8) ?? "", restoredAt: statement.text(9), message: statement.text(10),
                        profileState: statement.text(11), accessLevels: statement.text(12),
                        lastRun: statement.int(13)))
            }
        }
        let wantsRejections =
            filter.statuses.isEmpty || filter.statuses.contains("rejected")
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
            let statement = try wrap { () throws(SQLiteError) in try connection.prepare(sql) }
            try wrap { () throws(SQLiteError) in
                _ = try statement.reset()
                for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let source = "\(statement.text(3) ?? ""):\(statement.int(4))"
                try body(
                    ReportRecord(
                        profileId: statement.text(0) ?? "", originalTransactionId: statement.text(1) ?? "",
                        status: "rejected", code: statement.text(2), httpStatus: nil, attempts: 0, source: source,
                        firstSource: source, updatedAt: statement.text(5) ?? "", restoredAt: nil,
                        message: statement.text(6), profileState: nil, accessLevels: nil, lastRun: statement.int(7)))
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
        try wrap { () throws(SQLiteError) in try runRecords(where: "1") }
    }

    /// Item counts by status and code, for `status`.
    public func countsByStatusAndCode() throws(JournalError) -> [(status: String, code: String?, count: Int)] {
        try wrap { () throws(SQLiteError) in
            let statement = try connection.prepare(
                "SELECT status, code, count(*) FROM items GROUP BY status, code ORDER BY status, code")
            var counts: [(String, String?, Int)] = []
            while try statement.step() {
                counts.append((statement.text(0) ?? "", statement.text(1), Int(statement.int(2))))
            }
            return counts
        }
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    public func integrityCheck() throws(JournalError) -> String {
        try wrap { () throws(SQLiteError) in try connection.scalarText("PRAGMA integrity_check") ?? "" }
    }
}
