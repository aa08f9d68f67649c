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
