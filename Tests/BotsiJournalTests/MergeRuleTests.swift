import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Which of two records of one pair a merge keeps: a final status over one that is not, whatever
/// the times; of two final ones the later definitive answer, not the later update (a row answered
/// early can be touched later without a new answer); of two unfinished ones the later update.
@Suite struct MergeRuleTests {
    let restored = ItemStatus.restored.journalCode
    let pending = ItemStatus.pending.journalCode

    @Test func aFinalRecordIsKeptOverOneThatIsNotWhateverTheTimes() {
        #expect(
            MergeRule.replaces(
                status: restored, answeredAt: 1, updatedAt: 1, over: pending, answeredAt: nil, updatedAt: 9))
        #expect(
            !MergeRule.replaces(
                status: pending, answeredAt: nil, updatedAt: 9, over: restored, answeredAt: 1, updatedAt: 1))
    }

    @Test func ofTwoFinalRecordsTheLaterAnswerWinsNotTheLaterUpdate() {
        // Held: answered at 10, touched at 50. Incoming: answered at 20, updated at 30.
        #expect(
            MergeRule.replaces(
                status: restored, answeredAt: 20, updatedAt: 30, over: restored, answeredAt: 10, updatedAt: 50))
        #expect(
            !MergeRule.replaces(
                status: restored, answeredAt: 10, updatedAt: 50, over: restored, answeredAt: 20, updatedAt: 30))
    }

    @Test func ofTwoUnfinishedRecordsTheLaterUpdateWinsAndATieKeepsTheFirst() {
        #expect(
            MergeRule.replaces(
                status: pending, answeredAt: nil, updatedAt: 8, over: pending, answeredAt: nil, updatedAt: 7))
        #expect(
            !MergeRule.replaces(
                status: pending, answeredAt: nil, updatedAt: 7, over: pending, answeredAt: nil, updatedAt: 7))
    }
}

/// What a merge keeps of a pair, and of a rejected line, that two shards both hold: the earliest
/// sighting's first source, run and time; the later copy's message, the lowest first run.
@Suite struct MergeCopyTests {
    private func shard(
        _ directory: Workspace, _ name: String, file: String, line: Int, message: String, at time: String
    ) throws -> String {
        let path = directory.file(name)
        let journal = try Journal(path: path)
        defer { journal.close() }
        try journal.transaction { () throws(JournalError) in
            let run = try journal.startRun(
                startedAt: Timestamp.date(time)!, toolVersion: "t", host: "h", pid: 1, optionsJSON: "{}")
            _ = try journal.admit(
                profileId: "p", originalTransactionId: "1", source: "\(file):\(line)", runID: run, now: time)
            try journal.recordRejection(
                file: "shared.csv", line: 7, reason: "malformed_csv", message: message, profileId: nil,
                originalTransactionId: nil, runID: run, now: time)
        }
        return path
    }

    @Test(arguments: [false, true])
    func theEarliestSightingAndTheLatestMessageAreKept(earlierFirst: Bool) throws {
        let directory = Workspace()
        let early = try shard(
            directory, "a.sqlite", file: "a.csv", line: 2, message: "old", at: "2026-01-01T00:00:00.000Z")
        let late = try shard(
            directory, "b.sqlite", file: "b.csv", line: 5, message: "new", at: "2026-01-02T00:00:00.000Z")
        let merged = directory.file("merged.sqlite")
        _ = try Journal.merge(shards: earlierFirst ? [early, late] : [late, early], into: merged)
        let journal = try Journal(path: merged, create: false, readOnly: true)
        defer { journal.close() }
        let item = try journal.connection.prepare("SELECT first_source, created_at, last_source FROM items_readable")
        #expect(try item.step())
        #expect(item.text(0) == "a.csv:2")
        #expect(item.text(1) == "2026-01-01T00:00:00.000Z")
        let rejection = try journal.connection.prepare("SELECT message, first_run, last_run FROM rejections")
        #expect(try rejection.step())
        #expect(rejection.text(0) == "new")
        let runs = try journal.runs().map(\.id)
        #expect(rejection.int(1) == runs.min() && rejection.int(2) == runs.max(), "\(runs)")
    }
}
