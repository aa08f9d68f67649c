import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// A journal that fails must say so in one sentence and keep every committed row. These tests
/// break it the ways disks and people do: full disk, read-only directory, a file that is not a
/// journal, a truncated copy, a journal from a newer version.
@Suite struct JournalStressTests {
    @Test func diskFullFailsTheBatchWithOneSentenceAndKeepsEveryCommittedRow() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        let run = try StressFixture.startRun(journal)
        let committed = try StressFixture.commitRestoredBatch(journal, run: run, prefix: "kept", count: 200)
        // SQLite's own page limit stands in for a full disk: the next page it needs is refused
        // with SQLITE_FULL, exactly as when write() returns ENOSPC.
        let pages = try #require(try journal.connection.scalarInt("PRAGMA page_count"))
        _ = try journal.connection.scalarInt("PRAGMA max_page_count = \(pages)")

        var failure: JournalError?
        do {
            _ = try StressFixture.commitRestoredBatch(journal, run: run, prefix: "lost", count: 5000)
        } catch {
            failure = error
        }
        let error = try #require(failure, "5,000 more rows cannot fit in the pages the journal has")
        guard case .diskFull = error else {
            Issue.record("expected diskFull, got \(error)")
            return
        }
        StressFixture.expectOneSentence(error, path: path, mentioning: "full")
        #expect(!journal.isInTransaction, "the failed batch is rolled back, not left open")
        journal.close()

        try StressFixture.expectExactly(committed, in: path)
    }

    @Test func readOnlyJournalFileRefusesWritesWithOneSentenceAndKeepsItsRows() throws {
        // Root ignores permission bits, so a read-only open stands in for a read-only file
        // here; the read-only directory itself is tested in the runner's tests on a read-only
        // mount (Tests/BotsiRestoreTests/JournalFailureExitTests.swift).
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let writer = try Journal(path: path)
        let run = try StressFixture.startRun(writer)
        let committed = try StressFixture.commitRestoredBatch(writer, run: run, prefix: "kept", count: 50)
        writer.close()

        let reader = try Journal(path: path, create: false, readOnly: true)
        var failure: JournalError?
        do {
            _ = try StressFixture.commitRestoredBatch(reader, run: run, prefix: "lost", count: 1)
        } catch {
            failure = error
        }
        let error = try #require(failure)
        guard case .readOnly = error else {
            Issue.record("expected readOnly, got \(error)")
            return
        }
        StressFixture.expectOneSentence(error, path: path, mentioning: "cannot be written")
        reader.close()
        try StressFixture.expectExactly(committed, in: path)
    }

    @Test func fileThatIsNotSQLiteGivesOneSentenceAndIsNotTouched() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let text = Data("profileId,originalTransactionId\np1,123\n".utf8) + Data(repeating: 0x41, count: 8192)
        try text.write(to: URL(fileURLWithPath: path))
        for readOnly in [false, true] {
            #expect {
                try Journal(path: path, readOnly: readOnly)
            } throws: { error in
                guard let error = error as? JournalError, case .notAJournal = error else { return false }
                StressFixture.expectOneSentence(error, path: path, mentioning: "not a botsi-restore journal")
                return true
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func truncatedJournalIsRefusedOrReportedWithOneSentenceNeverSilentlyUsed() throws {
        let directory = Workspace()
        let original = directory.file("original.sqlite")
        let journal = try Journal(path: original)
        let run = try StressFixture.startRun(journal)
        _ = try StressFixture.commitRestoredBatch(journal, run: run, prefix: "row", count: 3000)
        journal.close()  // the last close checkpoints the WAL into the main file
        #expect(!FileManager.default.fileExists(atPath: original + "-wal"))

        let truncated = directory.file("truncated.sqlite")
        try FileManager.default.copyItem(atPath: original, toPath: truncated)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: truncated)[.size] as? Int)
        #expect(truncate(truncated, off_t(size / 2)) == 0)

        // Either opening refuses the file, or the first read of a lost page fails; both must be a
        // JournalError with one sentence, never a crash or a report that quietly misses rows.
        var failure: JournalError?
        var rowsSeen = 0
        do {
            let damaged = try Journal(path: truncated)
            defer { damaged.close() }
            try damaged.forEachReportRecord(ReportFilter()) { _ in rowsSeen += 1 }
        } catch let error as JournalError {
            failure = error
        }
        let error = try #require(failure, "a journal cut in half read \(rowsSeen) rows without an error")
        print("truncated journal (\(rowsSeen) rows read first): \(error.description)")
        StressFixture.expectOneSentence(error, path: truncated, mentioning: truncated)
        // Our own journal, damaged: the advice is a backup or a new journal, not "another path".
        if case .damaged = error {} else { Issue.record("expected .damaged, got \(error)") }

        // The intact original is untouched by any of this.
        let intact = try Journal(path: original, create: false, readOnly: true)
        defer { intact.close() }
        #expect(try intact.integrityCheck() == "ok")
        var count = 0
        try intact.forEachReportRecord(ReportFilter()) { _ in count += 1 }
        #expect(count == 3000)
    }

    @Test func journalFromANewerVersionIsRefusedUnchangedAndKeepsItsRows() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        let run = try StressFixture.startRun(journal)
        let committed = try StressFixture.commitRestoredBatch(journal, run: run, prefix: "kept", count: 20)
        try journal.connection.execute("PRAGMA user_version = \(Schema.currentVersion + 1)")
        journal.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        for readOnly in [false, true] {
            #expect {
                try Journal(path: path, readOnly: readOnly)
            } throws: { error in
                guard let error = error as? JournalError, case .newerSchema = error else { return false }
                StressFixture.expectOneSentence(error, path: path, mentioning: "newer")
                return true
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "refusing must not write a byte")

        // Put the version back as that newer tool would read it: every row is still there.
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA user_version = \(Schema.currentVersion)")
        connection.close()
        try StressFixture.expectExactly(committed, in: path)
    }
}

/// Shared steps of the stress tests.
enum StressFixture {
    static func startRun(_ journal: Journal) throws -> Int64 {
        try journal.transaction { () throws(JournalError) in
            try journal.startRun(
                startedAt: Date(), toolVersion: "stress", host: "host", pid: 1, optionsJSON: "{}")
        }
    }

    /// Admits `count` new pairs and records each as restored, all in one transaction; returns
    /// the pairs once committed.
    static func commitRestoredBatch(
        _ journal: Journal, run: Int64, prefix: String, count: Int
    ) throws(JournalError) -> Set<String> {
        let now = Timestamp.string(Date())
        var pairs = Set<String>()
        try journal.transaction { () throws(JournalError) in
            for index in 0..<count {
                let profile = "\(prefix)-\(index)"
                let transaction = String(2_000_000_000_000_000 + index)
                let admission = try journal.admit(
                    profileId: profile, originalTransactionId: transaction, source: "in.csv:\(index + 2)",
                    runID: run, now: now)
                guard case .send(let item, _) = admission else { continue }
                try journal.recordOutcome(
                    itemID: item, status: .restored, code: nil, httpStatus: 200, message: nil, now: now,
                    profile: ProfileRecord(state: "subscribed", accessLevelsJSON: "{}"))
                pairs.insert(profile + "/" + transaction)
            }
        }
        return pairs
    }

    /// Reopens the journal read-only: it is sound and holds exactly `pairs`, all restored.
    static func expectExactly(
        _ pairs: Set<String>, in path: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        #expect(try journal.integrityCheck() == "ok", sourceLocation: sourceLocation)
        var found = Set<String>()
        var statuses = Set<ItemStatus>()
        try journal.forEachReportRecord(ReportFilter()) { record in
            found.insert(record.profileId + "/" + record.originalTransactionId)
            statuses.insert(record.status)
        }
        #expect(found == pairs, "committed rows lost or uncommitted rows kept", sourceLocation: sourceLocation)
        #expect(pairs.isEmpty || statuses == [.restored], sourceLocation: sourceLocation)
    }

    /// One line, one sentence (no full stop inside it), naming the journal and the trouble.
    static func expectOneSentence(
        _ error: JournalError, path: String, mentioning phrase: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let text = error.description
        #expect(!text.isEmpty && !text.contains("\n"), "\(text)", sourceLocation: sourceLocation)
        #expect(!text.contains(". "), "more than one sentence: \(text)", sourceLocation: sourceLocation)
        #expect(text.contains(path), "\(text)", sourceLocation: sourceLocation)
        #expect(text.contains(phrase), "\(text)", sourceLocation: sourceLocation)
    }
}
