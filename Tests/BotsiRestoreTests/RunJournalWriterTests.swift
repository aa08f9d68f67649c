import BotsiAPI
import BotsiInput
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// The writer keeps what each in-flight mark replaced, for the rows marked and not sent, so a row
/// put back is exactly as it stood — also after a reply changed it and it was marked again.
@Suite struct RunJournalWriterTests {
    private func columns(_ journal: Journal, _ itemID: Int64) throws -> [String?] {
        try ["status", "updated_at", "sent_run", "in_flight_run"].map { column in
            try journal.connection.scalarText("SELECT \(column) FROM items WHERE id = \(itemID)")
        }
    }

    @Test func aRowPutBackAfterAReplyAndASecondMarkIsAsTheReplyLeftIt() throws {
        let workspace = Workspace()
        var options = RunOptions()
        options.journalPath = workspace.journal
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        var (writer, _) = try RunJournalWriter.startRun(
            on: journal, options: options, startedAt: Date(), toolVersion: "test")
        let admissions = try writer.admit(
            [
                PairToAdmit(
                    profileId: "p", originalTransactionId: "2000000000000012", source: try journal.rowSource("in.csv:2")
                )
            ], now: Timestamp.milliseconds("2026-01-01T00:00:00.000Z")!, holdConflicts: false)
        guard case .send(let itemID, _) = admissions.first else { throw CancellationError() }
        let row = RunRow(
            itemID: itemID, owedSource: nil, attemptsBefore: 0, status: .pending, readerIndex: 0, line: 2)
        try writer.markInFlight(row, now: Timestamp.milliseconds("2026-01-01T00:00:01.000Z")!)
        try writer.commitBatch()
        writer.sent(row)
        // A retryable reply: the row stays pending with that error, and this run's mark on it.
        var replied = row
        replied.attemptsThisRun = 1
        let decision = OutcomePolicy(maxAttempts: 3, adaptive: true, backoff: BackoffPolicy(base: 0, cap: 0))
        var random = SystemRandomNumberGenerator()
        let retry = decision.decide(
            .retryable(code: "http_503", httpStatus: 503, retryAfter: nil, message: nil), row: .pending,
            facts: .init(attemptsThisRun: 1, isStopping: false, budgetCanPay: true), random: &random)
        _ = try writer.recordReply(
            RestoreResult(
                tag: 0, reply: .retryable(code: "http_503", httpStatus: 503, retryAfter: nil, message: nil),
                httpStatus: 503, startedAt: Date(), duration: 0.01),
            decision: retry, row: replied, message: nil)
        try writer.commitBatch()
        let afterReply = try columns(journal, itemID)
        // Marked again for the retry, then taken back (a throttle, a stop) before it was sent.
        try writer.markInFlight(replied, now: Timestamp.milliseconds("2026-01-01T00:00:09.000Z")!)
        #expect(try columns(journal, itemID)[0] == "1", "in flight")
        try writer.unmark(replied)
        try writer.commitBatch()
        #expect(try columns(journal, itemID) == afterReply, "put back as the reply left it, not as admitted")
    }
}
