import BotsiTestSupport
import CSQLite
import Foundation

@testable import BotsiJournal

/// The journal's tables read with SQL directly, not through BotsiJournal's readers, so that a test
/// can judge what the code wrote without trusting the code to read it back.
struct JournalTables: Equatable {
    /// One `items` row: the columns the row lifecycle speaks of.
    struct Item: Equatable {
        /// Insertion order.
        let id: Int64
        let pair: Pair
        let status: String
        let code: String?
        let httpStatus: Int64?
        let attempts: Int64
        let profileState: String?
        let accessLevels: String?
        let restoredAt: String?
        let createdAt: String?
        let updatedAt: String?
        /// The last run that marked it in flight, and a final row's in-flight mark.
        let sentRun: String?
        let inFlightRun: String?
        /// The last run that read the pair or took the row up as owed.
        let lastRun: Int64
        /// The time of its last definitive answer, in milliseconds (nil: none yet).
        var answeredAt: Int64? = nil

        /// Status, code and snapshot: what a resend without a definitive answer must leave as it was.
        func sameState(as other: Item) -> Bool {
            status == other.status && code == other.code && profileState == other.profileState
                && accessLevels == other.accessLevels && restoredAt == other.restoredAt
        }

        var stateDescription: String {
            "\(status)/\(code ?? "-") state \(profileState ?? "-") restoredAt \(restoredAt ?? "-")"
        }
    }

    struct Run: Equatable {
        let id: Int64
        let state: String
        let exitCode: Int64?
        let pid: Int64
        /// The inputs the run recorded at its end, and whether it read each to its end (none for
        /// a run that never recorded its end).
        var inputs: [RecordedInput] = []
        /// The input files its options name, as typed and as absolute paths (none recorded before
        /// runs recorded them), and its shard ("I/N"; empty for one process).
        var namedInputs: [String] = []
        var namedPaths: [String]? = nil
        var shard = ""
        /// Its `--forget-input` paths, as typed and absolute.
        var forgetPaths: [String] = []
        /// When it started (milliseconds), its selection and the cutoff it ran with, and how many
        /// rows of its selection it left owed when it stopped (`owedNotTakenUp` + `owedUnanswered`).
        var startedAt: Int64 = 0
        var retryFailed = false
        var refreshOlderThan: Double? = nil
        var answeredBefore: Int64? = nil
        var selectionOwed = 0
    }

    struct RecordedInput: Equatable {
        let path: String
        let complete: Bool
    }

    var items: [Pair: Item] = [:]
    var runs: [Run] = []
    var rejections = 0
    var integrity = ""

    func count(_ status: String) -> Int { items.values.filter { $0.status == status }.count }

    /// Items by status, as `status` and `report` should count them.
    var statusCounts: [String: Int] { items.values.reduce(into: [:]) { $0[$1.status, default: 0] += 1 } }

    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads every table in one read transaction; nil when no file is there. A file whose schema is
    /// not set up yet (a run killed while creating it) reads as empty tables.
    static func read(_ path: String, checkIntegrity: Bool = true) throws -> JournalTables? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try read(Database(path: path, readOnly: true), checkIntegrity: checkIntegrity)
        } catch {
            // After a kill -9 the -shm must be rebuilt, which a read-only connection cannot do;
            // read a copy (journal and -wal) rather than let the test touch the journal's files.
            let copy = Workspace()
            try FileManager.default.copyItem(atPath: path, toPath: copy.journal)
            try? FileManager.default.copyItem(atPath: path + "-wal", toPath: copy.journal + "-wal")
            return try read(Database(path: copy.journal, readOnly: false), checkIntegrity: checkIntegrity)
        }
    }

    private static func read(_ database: Database, checkIntegrity: Bool) throws -> JournalTables {
        var tables = JournalTables()
        if checkIntegrity {
            tables.integrity = try database.rows("PRAGMA integrity_check").map { $0[0] ?? "" }.joined(separator: "; ")
        }
        try database.execute("BEGIN")
        defer { try? database.execute("COMMIT") }
        let names = try database.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0[0] }
        guard names.contains("items") && names.contains("runs") else { return tables }
        let itemColumns =
            "id, profile_id, original_transaction_id, status, code, http_status, attempts, profile_state, access_levels, restored_at, "
            + "created_at, updated_at, sent_run, in_flight_run, last_run"
        for row in try database.rows("SELECT \(itemColumns) FROM items_readable ORDER BY id") {
            let pair = Pair(row[1] ?? "", row[2] ?? "")
            tables.items[pair] = Item(
                id: Int64(row[0] ?? "") ?? 0, pair: pair, status: row[3] ?? "", code: row[4],
                httpStatus: row[5].flatMap { Int64($0) }, attempts: Int64(row[6] ?? "") ?? 0, profileState: row[7],
                accessLevels: row[8], restoredAt: row[9], createdAt: row[10], updatedAt: row[11], sentRun: row[12],
                inFlightRun: row[13], lastRun: Int64(row[14] ?? "") ?? 0)
        }
        if try database.rows("SELECT count(*) FROM pragma_table_info('items') WHERE name = 'answered_at'").first?[0]
            == "1"
        {
            var answered: [Int64: Int64] = [:]
            for row in try database.rows("SELECT id, answered_at FROM items WHERE answered_at IS NOT NULL") {
                if let id = Int64(row[0] ?? ""), let at = Int64(row[1] ?? "") { answered[id] = at }
            }
            for (pair, item) in tables.items { tables.items[pair]?.answeredAt = answered[item.id] }
        }
        for row in try database.rows(
            "SELECT id, state, exit_code, pid, inputs, options, started_at, counts FROM runs ORDER BY id")
        {
            var run = Run(
                id: Int64(row[0] ?? "") ?? 0, state: row[1] ?? "", exitCode: row[2].flatMap { Int64($0) },
                pid: Int64(row[3] ?? "") ?? 0)
            let inputs = (try? JSONSerialization.jsonObject(with: Data((row[4] ?? "[]").utf8))) as? [[String: Any]]
            run.inputs = (inputs ?? []).map {
                // Stored as strings ("true"), as every schema has.
                RecordedInput(path: $0["path"] as? String ?? "", complete: "\($0["complete"] ?? "")" == "true")
            }
            let options = (try? JSONSerialization.jsonObject(with: Data((row[5] ?? "{}").utf8))) as? [String: Any]
            run.namedInputs = options?["inputs"] as? [String] ?? []
            run.namedPaths = options?["inputPaths"] as? [String]
            run.forgetPaths =
                (options?["forgetInputs"] as? [String] ?? []) + (options?["forgetInputPaths"] as? [String] ?? [])
            if let count = options?["shardCount"] as? Int, count > 1 {
                run.shard = "\(options?["shardIndex"] as? Int ?? 0)/\(count)"
            }
            run.startedAt = row[6].flatMap { Timestamp.milliseconds($0) } ?? 0
            run.retryFailed = options?["retryFailed"] as? Bool ?? false
            run.refreshOlderThan = (options?["refreshOlderThan"] as? NSNumber)?.doubleValue
            run.answeredBefore = (options?["answeredBefore"] as? String).flatMap { Timestamp.milliseconds($0) }
            let counts = (try? JSONSerialization.jsonObject(with: Data((row[7] ?? "{}").utf8))) as? [String: Any]
            run.selectionOwed = (counts?["owedNotTakenUp"] as? Int ?? 0) + (counts?["owedUnanswered"] as? Int ?? 0)
            tables.runs.append(run)
        }
        if names.contains("rejections") {
            tables.rejections = Int(try database.rows("SELECT count(*) FROM rejections").first?[0] ?? "") ?? 0
        }
        return tables
    }

    /// Rows of any query, read-only, every value as text: what a test reads that the tables above
    /// do not hold (a run's attempts, say).
    static func rows(_ path: String, _ sql: String) throws -> [[String?]] {
        try Database(path: path, readOnly: true).rows(sql)
    }

    /// A read-only connection; every value is read as text (or nil for NULL).
    private final class Database {
        private var handle: OpaquePointer?

        init(path: String, readOnly: Bool) throws {
            // Before SQLite initializes, as the journal's own connections do (the statistics
            // are off for the whole process, and SQLiteStatementTests checks they are).
            SQLiteConnection.configureLibrary()
            let rc = sqlite3_open_v2(path, &handle, readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, nil)
            guard rc == SQLITE_OK else {
                let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
                sqlite3_close_v2(handle)
                throw ReadError(description: "cannot open the journal \(path): \(message)")
            }
            sqlite3_busy_timeout(handle, 5000)
        }

        deinit { sqlite3_close_v2(handle) }

        func execute(_ sql: String) throws {
            _ = try rows(sql)
        }

        func rows(_ sql: String) throws -> [[String?]] {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
                throw ReadError(description: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
            }
            defer { sqlite3_finalize(statement) }
            var result: [[String?]] = []
            while true {
                let rc = sqlite3_step(statement)
                if rc == SQLITE_DONE { return result }
                guard rc == SQLITE_ROW else {
                    throw ReadError(description: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
                }
                result.append(
                    (0..<sqlite3_column_count(statement)).map { column in
                        sqlite3_column_text(statement, column).map { String(cString: $0) }
                    })
            }
        }
    }
}
