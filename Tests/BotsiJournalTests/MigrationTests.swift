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
}
