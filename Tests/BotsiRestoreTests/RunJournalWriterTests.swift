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

    /// A run's options on the workspace's journal.
    private func runOptions(_ workspace: Workspace) -> RunOptions {
        var options = RunOptions()
        options.journalPath = workspace.journal
        return options
    }

    /// The writer of a new run, started as the runner starts one.
    private func startWriter(_ journal: Journal, _ options: RunOptions) throws -> RunJournalWriter {
        try RunJournalWriter.startRun(on: journal, options: options, startedAt: Date(), toolVersion: "test").writer
    }

    /// Admits one pair of transaction 2000000000000012 per profile (read from in.csv's lines 2 on);
    /// each must be new, and sent.
    private func admitNew(_ writer: inout RunJournalWriter, _ journal: Journal, profiles: [String]) throws -> [Int64] {
        let admissions = try writer.admit(
            try profiles.enumerated().map { index, profile in
                PairToAdmit(
                    profileId: profile, originalTransactionId: "2000000000000012",
                    source: try journal.rowSource("in.csv:\(index + 2)"))
            }, now: Timestamp.milliseconds("2026-01-01T00:00:00.000Z")!, holdConflicts: false)
        return try admissions.map { admission in
            guard case .send(let itemID, _) = admission else { throw CancellationError() }
            return itemID
        }
    }

    @Test func aRowPutBackAfterAReplyAndASecondMarkIsAsTheReplyLeftIt() throws {
        let workspace = Workspace()
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        var writer = try startWriter(journal, runOptions(workspace))
        let itemID = try admitNew(&writer, journal, profiles: ["p"])[0]
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
        #expect(try journal.connection.scalarInt("SELECT duration_us FROM attempts") == 10_000, "0.01 s, in µs")
        let afterReply = try columns(journal, itemID)
        // Marked again for the retry, then taken back (a throttle, a stop) before it was sent.
        try writer.markInFlight(replied, now: Timestamp.milliseconds("2026-01-01T00:00:09.000Z")!)
        #expect(try columns(journal, itemID)[0] == "1", "in flight")
        try writer.unmark(replied)
        try writer.commitBatch()
        #expect(try columns(journal, itemID) == afterReply, "put back as the reply left it, not as admitted")
    }

    /// An earlier run, started through the writer as a run is, ended having read `inputs` as far as they say.
    private func stoppedRun(_ journal: Journal, _ options: RunOptions, inputs: [RunInput]) throws {
        let writer = try startWriter(journal, options)
        try journal.transaction { () throws(JournalError) in
            try journal.finishRun(
                writer.runID, endedAt: Date(), state: .stopped, exitCode: 75, inputs: inputs, counts: RunCounts())
        }
    }

    /// How far earlier runs read an input they left unread is taken from runs of the same shard
    /// alone: another shard read other rows of it, and its bytes say nothing of a shorter file.
    @Test func howFarAnInputWasReadComesFromRunsOfTheSameShard() throws {
        let workspace = Workspace()
        let input = workspace.csv("in.csv", rows: [("p1", "2000000000000012")])
        var options = runOptions(workspace)
        options.inputs = [input]
        (options.shardIndex, options.shardCount) = (0, 2)
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        try stoppedRun(journal, options, inputs: [RunInput(path: input, sha256: "", bytes: 500, complete: false)])

        options.shardIndex = 1
        #expect(try startWriter(journal, options).earlierBytesRead.isEmpty, "shard 1 never read it")
        options.shardIndex = 0
        #expect(try startWriter(journal, options).earlierBytesRead == [0: 500])
    }

    /// `--forget-input PATH` names an unread input by the path the journal recorded for it — for a
    /// run of a version that recorded no absolute paths, the path as that run typed it (what
    /// `status` advises) — and each input once, however many shards left it unread.
    @Test func anInputToForgetIsNamedAsTheJournalRecordedIt() throws {
        let workspace = Workspace()
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        // Both shards of a split job left it unread.
        for shard in 0..<2 {
            _ = try journal.transaction { () throws(JournalError) in
                try journal.startRun(
                    startedAt: Date(), toolVersion: "0.1.0", host: "h", pid: 1,
                    optionsJSON: #"{"inputs":["exports/a.csv"],"shardIndex":\#(shard),"shardCount":2}"#)
            }
        }
        var options = runOptions(workspace)
        options.forgetInputs = ["exports/a.csv", "exports/b.csv"]
        let writer = try startWriter(journal, options)
        #expect(writer.forgottenInputs == ["exports/a.csv"])
        #expect(writer.forgetsMatchingNothing == ["exports/b.csv"])
    }

    /// A final row resent keeps its status through a kill (its mark is set apart): also when it was
    /// marked, put back (a throttle) and marked again, when the writer knows its columns.
    @Test func aFinalRowMarkedAgainAfterAPutBackKeepsItsStatus() throws {
        let workspace = Workspace()
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        var first = try startWriter(journal, runOptions(workspace))
        let itemID = try admitNew(&first, journal, profiles: ["p"])[0]
        try journal.recordOutcome(
            itemID: itemID, status: .failed, code: "http_409", httpStatus: 409, message: nil,
            now: Timestamp.milliseconds("2026-01-01T00:00:01.000Z")!, profile: nil)
        try first.commitBatch()

        // A later run resends it (`--retry-failed`).
        var writer = try startWriter(journal, runOptions(workspace))
        let row = RunRow(itemID: itemID, owedSource: "in.csv:2", attemptsBefore: 1, status: .failed, readerIndex: nil)
        let failed = try columns(journal, itemID)[0]
        for _ in 0..<2 {
            try writer.markInFlight(row, now: Timestamp.milliseconds("2026-01-01T00:00:05.000Z")!)
            #expect(try columns(journal, itemID)[0] == failed, "marked, it is still failed")
            #expect(try columns(journal, itemID)[3] == "\(writer.runID)", "and in flight in this run")
            try writer.unmark(row)
        }
        try writer.commitBatch()
    }

    /// A run that takes up an owed row whose transaction another profile claims counts that group
    /// in its summary, as it does for the rows it reads.
    @Test func anOwedRowTakenUpCountsItsConflictGroup() throws {
        let workspace = Workspace()
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        var first = try startWriter(journal, runOptions(workspace))
        let itemID = try admitNew(&first, journal, profiles: ["p1", "p2"])[0]
        try first.commitBatch()

        var writer = try startWriter(journal, runOptions(workspace))
        #expect(try writer.rowCounts().conflicts.groups == 0)
        try writer.claim(
            OwedRow(
                itemID: itemID, profileID: "p1", originalTransactionID: "2000000000000012", status: .pending,
                attempts: 0, source: "in.csv:2", lastRun: first.runID))
        let conflicts = try writer.rowCounts().conflicts
        #expect(conflicts.groups == 1 && conflicts.rows == 2, "\(conflicts)")
    }

    /// The run's recorded options hold the concurrency asked for (not the one the descriptor limit
    /// allowed this time) and the key file's absolute path, and none of the fields only this
    /// process uses: what `status` shows and advises.
    @Test func theRecordedOptionsHoldWhatWasAskedAndWhereTheKeyIs() throws {
        let workspace = Workspace()
        var options = runOptions(workspace)
        options.concurrency = 64
        options.concurrencyAsked = 256
        options.keyFile = "key.txt"
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        let writer = try startWriter(journal, options)
        let text = try #require(
            try journal.connection.scalarText("SELECT options FROM runs WHERE id = \(writer.runID)"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["concurrency"] as? Int == 256, "\(text)")
        #expect(object["concurrencyAsked"] == nil && object["advisesAbsolutePaths"] == nil, "\(text)")
        #expect(object["keyFilePath"] as? String == RunAdvice.absolutePath("key.txt"), "\(text)")
    }
}
