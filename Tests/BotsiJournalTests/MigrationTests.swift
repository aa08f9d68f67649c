import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

@Suite struct MigrationTests {
    /// A journal as version 1 of the tool wrote it: its schema, its rows, user_version 1.
    private func writeVersionOneJournal(at path: String) throws {
        let connection = try SQLiteConnection(path: path)
        try connection.execute(Schema.migrations[0])
        try connection.execute(
            """
            INSERT INTO runs (started_at, tool_version, host, pid, options) VALUES ('2026-01-01T00:00:00.000Z', '0.0.9', 'h', 1, '{}');
            INSERT INTO items (profile_id, original_transaction_id, status, first_source, last_source, first_run,
                last_run, created_at, updated_at, restored_at)
            VALUES ('p1', '2000000000000002', 'restored', 'in.csv:2', 'in.csv:2', 1, 1, '2026-01-01T00:00:00.500Z', '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:01.000Z');
            PRAGMA application_id = \(Schema.applicationID);
            PRAGMA user_version = 1;
            """)
        connection.close()
    }

    /// 0.2.0's journals index `items.pair_hash`, which no query reads: a run drops the index (19
    /// bytes a row), a command that only reads and a dry run leave the file as it is, and a run
    /// finds its pairs through `items_transaction` either way.
    @Test func aRunDropsTheIndexOfPairHashesThatNoQueryReads() throws {
        let directory = Workspace()
        let path = directory.file("v5.sqlite")
        try Journal(path: path).close()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("CREATE INDEX items_pair ON items(pair_hash)")
        connection.close()
        let indexed = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'items_pair'"

        let reader = try Journal(path: path, create: false, readOnly: true)
        #expect(try reader.connection.scalarInt(indexed) == 1, "a read-only open writes nothing")
        reader.close()
        let dryRun = try Journal.openForRun(path: path, migrationUncommitted: true)
        #expect(try dryRun.connection.scalarInt(indexed) == 1, "a dry run writes nothing")
        dryRun.close()

        let run = try Journal.openForRun(path: path)
        defer { run.close() }
        #expect(try run.connection.scalarInt(indexed) == 0)
        #expect(try run.integrityCheck() == "ok")
        let plan = try run.connection.prepare("EXPLAIN QUERY PLAN " + Journal.admissionLookupSQL)
        var steps: [String] = []
        while try plan.step() { steps.append(plan.text(3) ?? "") }
        #expect(steps.contains { $0.contains("USING INDEX items_transaction (original_transaction_id=?)") }, "\(steps)")
        #expect(!steps.contains { $0.hasPrefix("SCAN items") }, "\(steps)")
    }

    @Test func aVersionOneJournalMigratesForwardKeepingItsRows() throws {
        let directory = Workspace()
        let path = directory.file("v1.sqlite")
        try writeVersionOneJournal(at: path)

        let journal = try Journal(path: path)
        #expect(try journal.connection.scalarInt("PRAGMA user_version") == Schema.currentVersion)
        #expect(Schema.currentVersion >= 2)
        var records: [ReportRecord] = []
        try journal.forEachReportRecord(ReportFilter()) { records.append($0) }
        #expect(records.map(\.profileId) == ["p1"])
        #expect(records.first?.status == .restored)
        // The new column is there and usable on the old run.
        try journal.transaction { () throws(JournalError) in
            try journal.recordProgress(1, RunProgressRecord(rowsRead: 5))
        }
        #expect(try journal.runs().first?.progress == RunProgressRecord(rowsRead: 5))
        // And a migrated journal admits the old row as finished: nothing is resent.
        let run = try journal.transaction { () throws(JournalError) in
            try journal.startRun(
                startedAt: Date(), toolVersion: "test", host: "h", pid: 2, optionsJSON: "{}")
        }
        let admission = try journal.transaction { () throws(JournalError) in
            try journal.admit(
                profileId: "p1", originalTransactionId: "2000000000000002", source: "in.csv:2", runID: run,
                now: Timestamp.string(Date()))
        }
        #expect(admission == .finished(.restored))
        #expect(try journal.integrityCheck() == "ok")
    }

    @Test func aVersionTwoJournalMigratesToThreeWithTheTimeOfEachRowsLastDefinitiveAnswer() throws {
        let directory = Workspace()
        let path = directory.file("v2.sqlite")
        let connection = try SQLiteConnection(path: path)
        try connection.execute(Schema.migrations[0])
        try connection.execute(Schema.migrations[1])
        try connection.execute(
            """
            INSERT INTO runs (started_at, tool_version, host, pid, options) VALUES ('2026-01-01T00:00:00.000Z', '0.1', 'h', 1, '{}');
            INSERT INTO items (profile_id, original_transaction_id, status, code, first_source, last_source, first_run,
                last_run, created_at, updated_at, restored_at)
            VALUES
                ('p1', '1', 'restored', NULL, 'in.csv:2', 'in.csv:2', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-03T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
                ('p2', '2', 'nothing_to_restore', 'nothing_to_restore', 'in.csv:2', 'in.csv:2', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-04T00:00:00.000Z', NULL),
                ('p3', '3', 'pending', 'http_503', 'in.csv:2', 'in.csv:2', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-05T00:00:00.000Z', NULL),
                ('p4', '4', 'in_flight', NULL, 'in.csv:2', 'in.csv:2', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-06T00:00:00.000Z', NULL);
            PRAGMA application_id = \(Schema.applicationID);
            PRAGMA user_version = 2;
            """)
        connection.close()

        let journal = try Journal(path: path)
        defer { journal.close() }
        #expect(try journal.connection.scalarInt("PRAGMA user_version") == Schema.currentVersion)
        let answered = try journal.connection.prepare("SELECT profile_id, answered_at FROM items_readable ORDER BY id")
        var times: [String: String?] = [:]
        while try answered.step() { times[answered.text(0) ?? ""] = answered.text(1) }
        #expect(times["p1"] == "2026-01-02T00:00:00.000Z", "a restored row: its last 200")
        #expect(times["p2"] == "2026-01-04T00:00:00.000Z", "another final row: its last change")
        #expect(times["p3"] == .some(nil), "a pending row has no answer yet")
        #expect(times["p4"] == .some(nil))
        #expect(try journal.integrityCheck() == "ok")
    }

    /// A journal as the tool at schema version 3 wrote it: two profiles already claim transaction 7.
    private func writeVersionThreeJournal(at path: String) throws {
        let connection = try SQLiteConnection(path: path)
        for migration in Schema.migrations[0..<3] { try connection.execute(migration) }
        try connection.execute(
            """
            INSERT INTO runs (started_at, tool_version, host, pid, options) VALUES ('2026-01-01T00:00:00.000Z', '0.2', 'h', 1, '{}');
            INSERT INTO items (profile_id, original_transaction_id, status, first_source, last_source, first_run,
                last_run, created_at, updated_at)
            VALUES ('p1', '7', 'restored', 'a.csv:2', 'a.csv:2', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z'),
                ('p2', '7', 'pending', 'a.csv:3', 'a.csv:3', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z'),
                ('p3', '8', 'restored', 'a.csv:4', 'a.csv:4', 1, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z');
            PRAGMA application_id = \(Schema.applicationID);
            PRAGMA user_version = 3;
            """)
        connection.close()
    }

    @Test func aVersionThreeJournalMigratesToFiveWithTheTransactionIndex() throws {
        let directory = Workspace()
        let path = directory.file("v3.sqlite")
        try writeVersionThreeJournal(at: path)

        let journal = try Journal(path: path)
        defer { journal.close() }
        #expect(Schema.currentVersion == 5)
        #expect(try journal.connection.scalarInt("PRAGMA user_version") == 5)
        #expect(
            try journal.connection.scalarInt(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'items_transaction'") == 1)
        var records: [ConflictRecord] = []
        try journal.forEachConflict { records.append($0) }
        #expect(records.map(\.profileId) == ["p1", "p2"], "the old rows' group is found through the new index")
        #expect(try journal.integrityCheck() == "ok")
    }

    @Test func aDryRunsMigrationLeavesTheFileAtItsVersion() throws {
        let directory = Workspace()
        let path = directory.file("v3.sqlite")
        try writeVersionThreeJournal(at: path)

        let journal = try Journal(path: path, migrationUncommitted: true)
        // Inside the open transaction the journal is at version 5 and usable ...
        #expect(try journal.connection.scalarInt("PRAGMA user_version") == 5)
        #expect(journal.isInTransaction)
        journal.rollback()
        journal.close()
        // ... and the file is still at 3, without the index.
        let reopened = try SQLiteConnection(path: path, readOnly: true)
        defer { reopened.close() }
        #expect(try reopened.scalarInt("PRAGMA user_version") == 3)
        #expect(
            try reopened.scalarInt(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'items_transaction'") == 0)
    }

    @Test func aMigrationThatFailsHalfwayLeavesTheJournalAsItWas() throws {
        let directory = Workspace()
        let path = directory.file("v3.sqlite")
        try writeVersionThreeJournal(at: path)
        // Something already has the new index's name: the migration fails inside its transaction.
        let connection = try SQLiteConnection(path: path)
        try connection.execute("CREATE TABLE items_transaction (x)")
        connection.close()

        #expect(throws: JournalError.self) { try Journal(path: path) }
        let reopened = try SQLiteConnection(path: path, readOnly: true)
        defer { reopened.close() }
        #expect(try reopened.scalarInt("PRAGMA user_version") == 3)
        #expect(try reopened.scalarInt("SELECT count(*) FROM items") == 3)
    }

    @Test func aReaderRefusesAJournalThatStillNeedsMigratingWithoutChangingIt() throws {
        let directory = Workspace()
        let path = directory.file("v1.sqlite")
        try writeVersionOneJournal(at: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: JournalError.self) { try Journal(path: path, create: false, readOnly: true) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// A journal as the tool at schema 4 wrote it, with a value in every column that can hold one:
    /// a path with colons, a row whose first, last, sent and in-flight runs differ, snapshots of one
    /// part only, times to the millisecond and a duration that rounds to the microsecond.
    private func writeVersionFourJournal(at path: String) throws {
        let connection = try SQLiteConnection(path: path)
        for migration in Schema.migrations[0..<4] { try connection.execute(migration) }
        try connection.execute(
            """
            INSERT INTO runs (started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs, counts,
                progress)
            VALUES ('2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z', 'finished', 0, '0.3', 'h', 11, '{"a":1}',
                    '["in:1.csv"]', '{"restored":1}', '{"rowsRead":2}'),
                ('2026-01-02T00:00:00.000Z', NULL, 'stopped', 75, '0.3', 'h', 12, '{}', '[]', '{}', '{}'),
                ('2026-01-03T00:00:00.000Z', NULL, 'running', NULL, '0.4', 'h', 13, '{}', '[]', '{}', '{}');
            INSERT INTO items (profile_id, original_transaction_id, status, code, http_status, message, attempts,
                first_source, last_source, first_run, last_run, sent_run, created_at, updated_at, restored_at,
                profile_state, access_levels, answered_at, in_flight_run)
            VALUES ('p1', '7', 'restored', NULL, 200, NULL, 3, 'C:\\data:2026/in:1.csv:2', 'b.csv:40', 1, 3, 2,
                    '2026-01-01T00:00:00.001Z', '2026-01-03T00:00:00.002Z', '2026-01-02T00:00:00.003Z', 'subscribed',
                    NULL, '2026-01-02T00:00:00.004Z', 3),
                ('p2', '8', 'failed', 'http_500', 500, 'boom', 1, 'b.csv:3', 'b.csv:3', 2, 2, NULL,
                    '2026-01-02T00:00:00.005Z', '2026-01-02T00:00:00.006Z', NULL, NULL, '{"premium":{}}',
                    '2026-01-02T00:00:00.007Z', NULL);
            INSERT INTO attempts (item_id, run_id, number, started_at, duration_ms, http_status, code, outcome,
                profile_state, access_levels)
            VALUES (1, 2, 2, '2026-01-02T00:00:00.008Z', 0.0019, 200, NULL, 'restored', 'subscribed', NULL),
                (2, 2, 1, '2026-01-02T00:00:00.009Z', NULL, 500, 'http_500', 'failed', NULL, '{"premium":{}}'),
                (1, 3, 3, '2026-01-03T00:00:00.010Z', 2.75, NULL, 'timeout', 'retry', NULL, NULL);
            INSERT INTO rejections (file, line, reason, message, profile_id, original_transaction_id, first_run,
                last_run, created_at, updated_at)
            VALUES ('in:1.csv', 9, 'missing_profile_id', 'profileId is empty.', '', '5', 1, 3,
                '2026-01-01T00:00:00.011Z', '2026-01-03T00:00:00.012Z');
            PRAGMA application_id = \(Schema.applicationID);
            PRAGMA user_version = 4;
            """)
        connection.close()
    }

    /// Every row of `sql`, each value as text ("NULL" for NULL).
    private func rows(_ sql: String, in connection: SQLiteConnection) throws -> [[String]] {
        let statement = try connection.prepare(sql)
        var rows: [[String]] = []
        while try statement.step() {
            rows.append((0..<statement.columnCount).map { statement.text($0) ?? "NULL" })
        }
        return rows
    }

    /// Schema 5's readable views show every value schema 4 held, exactly: what a data team read in
    /// the old tables it reads in the views after the upgrade.
    @Test func aVersionFourJournalKeepsEveryValueThroughTheUpgrade() throws {
        let directory = Workspace()
        let path = directory.file("v4.sqlite")
        try writeVersionFourJournal(at: path)
        let tables = [
            (
                "items",
                "id, profile_id, original_transaction_id, status, code, http_status, message, attempts, first_source, "
                    + "last_source, first_run, last_run, sent_run, in_flight_run, created_at, updated_at, answered_at, "
                    + "restored_at, profile_state, access_levels"
            ),
            (
                "attempts",
                "id, item_id, run_id, number, started_at, round(duration_ms, 3), http_status, code, outcome, "
                    + "profile_state, access_levels"
            ),
            (
                "rejections",
                "id, file, line, reason, message, profile_id, original_transaction_id, first_run, last_run, "
                    + "created_at, updated_at"
            ),
        ]
        let runColumns =
            "id, started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs, counts, progress"
        let old = try SQLiteConnection(path: path, readOnly: true)
        let before = try tables.map { table, columns in try rows("SELECT \(columns) FROM \(table)", in: old) }
        let runsBefore = try rows("SELECT \(runColumns) FROM runs", in: old)
        old.close()

        let journal = try Journal(path: path)
        defer { journal.close() }
        let connection = journal.connection
        #expect(try connection.scalarInt("PRAGMA user_version") == 5)
        for ((table, columns), old) in zip(tables, before) {
            #expect(try rows("SELECT \(columns) FROM \(table)_readable ORDER BY id", in: connection) == old, "\(table)")
        }
        #expect(try rows("SELECT \(runColumns) FROM runs ORDER BY id", in: connection) == runsBefore)
        // What schema 5 adds: a run's uid made of what it recorded, the pair's hash, no read run yet.
        #expect(
            try rows("SELECT uid FROM runs ORDER BY id", in: connection).flatMap { $0 } == [
                "v4:h:11:2026-01-01T00:00:00.000Z", "v4:h:12:2026-01-02T00:00:00.000Z",
                "v4:h:13:2026-01-03T00:00:00.000Z",
            ])
        #expect(
            try rows("SELECT pair_hash, read_run FROM items ORDER BY id", in: connection) == [
                ["\(Journal.pairHash(profileId: "p1", originalTransactionId: "7"))", "NULL"],
                ["\(Journal.pairHash(profileId: "p2", originalTransactionId: "8"))", "NULL"],
            ])
        #expect(try journal.integrityCheck() == "ok")
    }

    /// A value schema 4 should not hold (a source without its line, a time that is not one, a
    /// status or an outcome the tool never wrote) stops the upgrade, naming the row and the value,
    /// and leaves the journal at schema 4 for the next run to try again.
    @Test(arguments: [
        ("UPDATE items SET last_source = 'b.csv' WHERE id = 2", "items", "source", "b.csv"),
        ("UPDATE items SET first_source = 'b.csv:x' WHERE id = 2", "items", "source", "b.csv:x"),
        ("UPDATE items SET updated_at = 'yesterday' WHERE id = 2", "items", "updated_at", "yesterday"),
        ("UPDATE items SET status = 'lost' WHERE id = 2", "items", "status", "lost"),
        ("UPDATE attempts SET outcome = 'lost' WHERE id = 2", "attempts", "outcome", "lost"),
    ])
    func aValueTheUpgradeCannotReadLeavesTheJournalAtFour(
        change: String, table: String, column: String, value: String
    ) throws {
        let directory = Workspace()
        let path = directory.file("v4.sqlite")
        try writeVersionFourJournal(at: path)
        let connection = try SQLiteConnection(path: path)
        try connection.execute(change)
        connection.close()

        let refused = #expect(throws: JournalError.self) { try Journal(path: path) }
        var named = false
        if case .unknownValue(_, table, column, 2, value)? = refused { named = true }
        #expect(named, "\(String(describing: refused))")
        let reopened = try SQLiteConnection(path: path, readOnly: true)
        defer { reopened.close() }
        #expect(try reopened.scalarInt("PRAGMA user_version") == 4)
        #expect(try reopened.hasTable("items") && !reopened.hasTable("inputs"))
    }
}
