import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Transactions claimed by several profiles (issue 10), against a real journal file: a new pair is
/// checked against the journal through the index `items_transaction`, never an in-memory set.
@Suite struct JournalConflictTests {
    private let directory = Workspace()

    private func open() throws -> Journal { try Journal(path: directory.file("j.sqlite")) }

    private func startRun(_ journal: Journal) throws -> Int64 {
        try journal.transaction { () throws(JournalError) in
            try journal.startRun(
                startedAt: Date(), toolVersion: "test", host: "h", pid: 1, optionsJSON: "{}")
        }
    }

    private func admit(
        _ journal: Journal, _ profile: String, _ transaction: String, run: Int64, line: Int = 2, hold: Bool = true
    ) throws -> Admission {
        try journal.transaction { () throws(JournalError) in
            try journal.admit(
                profileId: profile, originalTransactionId: transaction, source: "in.csv:\(line)", runID: run,
                now: Timestamp.string(Date()), holdConflicts: hold)
        }
    }

    private func row(_ journal: Journal, _ profile: String, _ transaction: String) throws -> (String?, String?) {
        let statement = try journal.connection.prepare(
            "SELECT status, code FROM items_readable WHERE profile_id = ? AND original_transaction_id = ?")
        try statement.reset(.text(profile), .text(transaction))
        guard try statement.step() else { return (nil, nil) }
        return (statement.text(0), statement.text(1))
    }

    @Test func holdingRecordsEveryClaimAfterTheFirstAsHeldWithItsCode() throws {
        let journal = try open()
        defer { journal.close() }
        let run = try startRun(journal)
        guard case .send = try admit(journal, "p1", "T", run: run) else {
            Issue.record("the first claim is sent")
            return
        }
        guard case .held = try admit(journal, "p2", "T", run: run, line: 3) else {
            Issue.record("a second profile's claim is held")
            return
        }
        #expect(try admit(journal, "p2", "T", run: run, line: 4) == .duplicate)
        guard case .send = try admit(journal, "p3", "U", run: run, line: 5) else {
            Issue.record("another transaction is sent")
            return
        }
        #expect(try row(journal, "p1", "T") == ("pending", nil))
        #expect(try row(journal, "p2", "T") == ("held", ItemStatus.heldCode))
        #expect(try row(journal, "p3", "U") == ("pending", nil))
    }

    @Test func aClaimInAnEarlierRunHoldsTheNewPairOfALaterOne() throws {
        let journal = try open()
        defer { journal.close() }
        let first = try startRun(journal)
        _ = try admit(journal, "p1", "T", run: first)
        let second = try startRun(journal)
        guard case .held = try admit(journal, "p2", "T", run: second) else {
            Issue.record("the journal's claim counts as the first")
            return
        }
        // The held pair read again: finished for this purpose, never sent by a plain admission.
        let third = try startRun(journal)
        #expect(try admit(journal, "p2", "T", run: third) == .finished(.held))
    }

    @Test func sendingIsTodaysBehaviourEveryClaimPending() throws {
        let journal = try open()
        defer { journal.close() }
        let run = try startRun(journal)
        _ = try admit(journal, "p1", "T", run: run, hold: false)
        guard case .send = try admit(journal, "p2", "T", run: run, hold: false) else {
            Issue.record("send mode sends every claim")
            return
        }
        #expect(try row(journal, "p2", "T") == ("pending", nil))
    }

    @Test func theRunsCountsAreGroupsItsRowsBelongToAndTheirRowsInTheJournal() throws {
        let journal = try open()
        defer { journal.close() }
        let first = try startRun(journal)
        _ = try admit(journal, "p1", "T", run: first)
        _ = try admit(journal, "p9", "V", run: first)
        _ = try admit(journal, "p8", "V", run: first)
        let second = try startRun(journal)
        _ = try admit(journal, "p2", "T", run: second)
        _ = try admit(journal, "p3", "T", run: second)
        _ = try admit(journal, "p4", "W", run: second)
        _ = second
        // A run notes the shared transactions as it takes its rows up; the groups' rows are counted then.
        #expect(try journal.isShared("T", byOtherThan: "p2"))
        #expect(try journal.isShared("V", byOtherThan: "p9"))
        #expect(try !journal.isShared("W", byOtherThan: "p4"))
        #expect(try journal.conflictCounts(transactions: ["T"]) == ConflictCounts(groups: 1, rows: 3))
        #expect(try journal.conflictCounts(transactions: ["T", "V"]) == ConflictCounts(groups: 2, rows: 5))
    }

    @Test func theConflictReportListsEachGroupInJournalOrderWithItsClaims() throws {
        let journal = try open()
        defer { journal.close() }
        let run = try startRun(journal)
        _ = try admit(journal, "pB", "T2", run: run, line: 2)
        _ = try admit(journal, "pA", "T1", run: run, line: 3)
        _ = try admit(journal, "pZ", "T2", run: run, line: 4)
        _ = try admit(journal, "pC", "T1", run: run, line: 5)
        _ = try admit(journal, "pY", "T2", run: run, line: 6)
        _ = try admit(journal, "alone", "T3", run: run, line: 7)
        var records: [ConflictRecord] = []
        try journal.forEachConflict { records.append($0) }
        #expect(records.map(\.originalTransactionId) == ["T1", "T1", "T2", "T2", "T2"])
        #expect(records.map(\.profileId) == ["pA", "pC", "pB", "pZ", "pY"], "journal order within a group")
        #expect(records.map(\.claim) == [1, 2, 1, 2, 3])
        #expect(records.map(\.profiles) == [2, 2, 3, 3, 3])
        #expect(records.map(\.status) == [.pending, .held, .pending, .held, .held])
        #expect(records.map(\.lastSource) == ["in.csv:3", "in.csv:5", "in.csv:2", "in.csv:4", "in.csv:6"])
    }

    /// A claim met again from another input names both places: where it was read first and last.
    @Test func theConflictReportNamesWhereEachClaimWasReadFirstAndLast() throws {
        let journal = try open()
        defer { journal.close() }
        let first = try startRun(journal)
        guard case .send(let itemID, _) = try admit(journal, "pA", "T1", run: first, line: 2) else {
            Issue.record("the first claim is sent")
            return
        }
        _ = try admit(journal, "pB", "T1", run: first, line: 3)
        let second = try startRun(journal)
        try journal.claim(itemID: itemID, runID: second)
        let again = try journal.transaction { () throws(JournalError) in
            try journal.admit(
                profileId: "pA", originalTransactionId: "T1", source: "moved.csv:9", runID: second,
                now: Timestamp.string(Date()), holdConflicts: true)
        }
        #expect(again == .owedMetAgain)
        var records: [ConflictRecord] = []
        try journal.forEachConflict { records.append($0) }
        #expect(records.map(\.firstSource) == ["in.csv:2", "in.csv:3"])
        #expect(records.map(\.lastSource) == ["moved.csv:9", "in.csv:3"])
    }

    /// Memory stays flat at any size because every question is an index lookup: no scan of
    /// `items` per row, and no sort (a temp B-tree) of all groups for the report.
    @Test func detectionAndTheReportGoThroughTheTransactionIndex() throws {
        let journal = try open()
        defer { journal.close() }
        func plan(_ sql: String) throws -> String {
            let statement = try journal.connection.prepare("EXPLAIN QUERY PLAN " + sql)
            var details: [String] = []
            while try statement.step() { details.append(statement.text(3) ?? "") }
            return details.joined(separator: "\n")
        }
        let probe = try plan(Journal.otherClaimSQL.description)
        #expect(probe.contains("USING INDEX items_transaction"), "\(probe)")
        let report = try plan(
            """
            SELECT a.id FROM items AS a INDEXED BY items_transaction
            WHERE EXISTS (SELECT 1 FROM items AS b INDEXED BY items_transaction
                WHERE b.original_transaction_id = a.original_transaction_id AND b.profile_id != a.profile_id)
            ORDER BY a.original_transaction_id, a.id
            """)
        #expect(!report.contains("TEMP B-TREE"), "\(report)")
    }
}
