import BotsiBasics
internal import CSQLite
import Foundation

/// The upgrade of a journal of schema 1 to 4 to schema 5, in place, in the one transaction that
/// opening a journal for a run migrates it in: a kill at any moment leaves the old schema or the
/// new one, never a mix, and the next run starts the upgrade again. The old tables are renamed
/// aside, the new ones created, every row copied into them (ids kept, so attempts still point at
/// their rows), and the old ones dropped. Every value is carried over exactly: times from their
/// text to the same millisecond, sources to an input and a line, snapshots to the one copy each.
extension Journal {
    /// Schema 4's tables and indexes, as renamed and dropped.
    private static let oldTables = ["runs", "items", "attempts", "rejections"]
    static var droppedIndexes: [String] { oldIndexes }
    private static let oldIndexes = [
        "items_status", "items_sent_run", "attempts_item", "attempts_run", "rejections_last_run", "items_pending",
        "items_last_run", "items_in_flight_run", "items_transaction",
    ]

    /// A run of an older schema gets a uid made of what it recorded (host, pid, start): two copies
    /// of one journal, upgraded apart, give their shared runs the same uid, so `merge` counts that
    /// history once.
    func upgradeToV5() throws {
        let rows = try connection.scalarInt("SELECT count(*) FROM items") ?? 0
        if rows > 0 {
            Notices.post(
                Notice(
                    .info,
                    "botsi-restore: upgrading journal \(path) to schema 5 (\(rows) rows) in one transaction: "
                        + "a stop or a kill now leaves it as it was, to be upgraded again"))
        }
        for index in Self.oldIndexes { try connection.execute("DROP INDEX IF EXISTS \(index)") }
        for table in Self.oldTables { try connection.execute("ALTER TABLE \(table) RENAME TO v4_\(table)") }
        try connection.execute(SchemaV5.create)
        try connection.execute(
            """
            INSERT INTO runs (id, uid, started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs,
                counts, progress)
            SELECT id, 'v4:' || host || ':' || pid || ':' || started_at, started_at, ended_at, state, exit_code, tool_version, host, pid,
                options, inputs, counts, progress
            FROM v4_runs ORDER BY id
            """)
        try copyItems()
        try copyAttempts()
        try copyRejections()
        for table in Self.oldTables.reversed() { try connection.execute("DROP TABLE v4_\(table)") }
    }

    /// `file:line` as schema 4 kept a source: the line after the last colon (a path may hold colons).
    private func source(_ text: String?, table: String, row: Int64) throws -> RowSource {
        let text = text ?? ""
        guard let colon = text.lastIndex(of: ":"), let line = Int(text[text.index(after: colon)...]) else {
            throw JournalError.unknownValue(path: path, table: table, column: "source", row: row, value: text)
        }
        return RowSource(input: try inputID(path: String(text[..<colon])), line: line)
    }

    private func milliseconds(_ text: String?, table: String, column: String, row: Int64) throws -> Int64? {
        guard let text else { return nil }
        guard let value = Timestamp.milliseconds(text) else {
            throw JournalError.unknownValue(path: path, table: table, column: column, row: row, value: text)
        }
        return value
    }

    private func copyItems() throws {
        let read = try connection.prepare(
            """
            SELECT id, profile_id, original_transaction_id, status, code, http_status, message, attempts, first_source,
                last_source, first_run, last_run, sent_run, created_at, updated_at, restored_at, profile_state,
                access_levels, answered_at, in_flight_run
            FROM v4_items ORDER BY id
            """)
        let write = try connection.prepare(
            """
            INSERT INTO items (id, pair_hash, profile_id, original_transaction_id, status, code, http_status, message,
                attempts, first_input, first_line, last_input, last_line, first_run, last_run, read_run, sent_run,
                in_flight_run, created_at, updated_at, answered_at, restored_at, snapshot_id)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, NULL, ?16, ?17, ?18, ?19, ?20,
                ?21, ?22)
            """)
        while try read.step() {
            let id = read.int(0)
            let profile = read.text(1) ?? ""
            let transaction = read.text(2) ?? ""
            guard let status = read.text(3).flatMap(ItemStatus.init(rawValue:)) else {
                throw JournalError.unknownValue(
                    path: path, table: "items", column: "status", row: id, value: read.text(3) ?? "NULL")
            }
            let first = try source(read.text(8), table: "items", row: id)
            let last = try source(read.text(9), table: "items", row: id)
            var snapshot: Int64?
            if read.text(16) != nil || read.text(17) != nil {
                snapshot = try snapshotID(ProfileRecord(state: read.text(16), accessLevelsJSON: read.text(17)))
            }
            let values: [SQLiteValue] = [
                .int(id), .int(Self.pairHash(profileId: profile, originalTransactionId: transaction)), .text(profile),
                .text(transaction), .int(status.journalCode), .optionalText(read.text(4)),
                read.optionalInt(5).map { .int($0) } ?? .null, .optionalText(read.text(6)), .int(read.int(7)),
                .int(first.input), .int(Int64(first.line)), .int(last.input), .int(Int64(last.line)),
                .int(read.int(10)),
                .int(read.int(11)), read.optionalInt(12).map { .int($0) } ?? .null,
                read.optionalInt(19).map { .int($0) } ?? .null,
                .int(try milliseconds(read.text(13), table: "items", column: "created_at", row: id) ?? 0),
                .int(try milliseconds(read.text(14), table: "items", column: "updated_at", row: id) ?? 0),
                try milliseconds(read.text(18), table: "items", column: "answered_at", row: id).map { .int($0) }
                    ?? .null,
                try milliseconds(read.text(15), table: "items", column: "restored_at", row: id).map { .int($0) }
                    ?? .null,
                snapshot.map { .int($0) } ?? .null,
            ]
            try write.reset(binding: values)
            try write.run()
        }
    }

    private func copyAttempts() throws {
        let read = try connection.prepare(
            """
            SELECT id, item_id, run_id, number, started_at, duration_ms, http_status, code, outcome, profile_state,
                access_levels
            FROM v4_attempts ORDER BY id
            """)
        let write = try connection.prepare(
            """
            INSERT INTO attempts (id, item_id, run_id, number, started_at, duration_us, http_status, code, outcome,
                snapshot_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        while try read.step() {
            let id = read.int(0)
            guard let outcome = read.text(8).flatMap(AttemptOutcome.init(rawValue:)) else {
                throw JournalError.unknownValue(
                    path: path, table: "attempts", column: "outcome", row: id, value: read.text(8) ?? "NULL")
            }
            var snapshot: Int64?
            if read.text(9) != nil || read.text(10) != nil {
                snapshot = try snapshotID(ProfileRecord(state: read.text(9), accessLevelsJSON: read.text(10)))
            }
            let duration: SQLiteValue =
                read.isNull(5) ? .null : .int(Int64((read.double(5) * 1000).rounded()))
            try write.reset(
                binding: [
                    .int(id), .int(read.int(1)), .int(read.int(2)), .int(read.int(3)),
                    .int(try milliseconds(read.text(4), table: "attempts", column: "started_at", row: id) ?? 0),
                    duration, read.optionalInt(6).map { .int($0) } ?? .null, .optionalText(read.text(7)),
                    .int(outcome.journalCode), snapshot.map { .int($0) } ?? .null,
                ])
            try write.run()
        }
    }

    private func copyRejections() throws {
        let read = try connection.prepare(
            """
            SELECT id, file, line, reason, message, profile_id, original_transaction_id, first_run, last_run,
                created_at, updated_at
            FROM v4_rejections ORDER BY id
            """)
        let write = try connection.prepare(
            """
            INSERT INTO rejections (id, input_id, line, reason, message, profile_id, original_transaction_id,
                first_run, last_run, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        while try read.step() {
            let id = read.int(0)
            try write.reset(
                binding: [
                    .int(id), .int(try inputID(path: read.text(1) ?? "")), .int(read.int(2)), .text(read.text(3) ?? ""),
                    .text(read.text(4) ?? ""), .text(read.text(5) ?? ""), .text(read.text(6) ?? ""), .int(read.int(7)),
                    .int(read.int(8)),
                    .int(try milliseconds(read.text(9), table: "rejections", column: "created_at", row: id) ?? 0),
                    .int(try milliseconds(read.text(10), table: "rejections", column: "updated_at", row: id) ?? 0),
                ])
            try write.run()
        }
    }
}

extension Journal {
    /// What `upgrade` did: the schema the journal had and the one it has now (equal: nothing done).
    public struct Upgrade: Sendable, Equatable {
        public var from: Int64
        public var to: Int64
        public var rows: Int64
        /// Bytes of the file in free pages (the old tables' pages after an upgrade): later runs
        /// write into them before the file grows; `VACUUM` gives them back to the disk.
        public var freeBytes: Int64
    }

    /// Upgrades the journal at `path` in place to the current schema, as a run's open would, holding
    /// the run lock (a live run of any version is refused, exit 75) and sending nothing: so that
    /// `status` and `report` can read it before the next run.
    public static func upgrade(path: String) throws(JournalError) -> Upgrade {
        // Read-only first: the file's checks, and the schema it is at, without writing it.
        var version = Schema.currentVersion
        do {
            try Journal(path: path, create: false, readOnly: true).close()
        } catch .olderSchema(_, let found, _) {
            version = found
        }
        let journal = try Journal(path: path, access: .write, lockForRun: true)
        defer { journal.close() }
        // At the current schema already: an upgrade whose checkpoint found the disk full is
        // finished here (the open upgraded and checkpointed any other).
        if version == Schema.currentVersion { try journal.checkpointAfterUpgrade() }
        return try journal.wrap { () throws(SQLiteError) in
            let rows = try journal.connection.scalarInt("SELECT count(*) FROM items") ?? 0
            let freePages = try journal.connection.scalarInt("PRAGMA freelist_count") ?? 0
            let pageSize = try journal.connection.scalarInt("PRAGMA page_size") ?? 4096
            return Upgrade(from: version, to: Schema.currentVersion, rows: rows, freeBytes: freePages * pageSize)
        }
    }
}
