import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

/// A row marked in flight ahead of need and then not sent (a stop, a throttle) goes back exactly:
/// status, `updated_at`, `sent_run` and `in_flight_run` as they were before the mark.
@Suite struct JournalInFlightMarkTests {
    private let directory = Workspace()
    private var path: String { directory.file("j.sqlite") }

    private func columns() throws -> String {
        try SQLiteTool.execute(
            path, "SELECT profile_id, status, updated_at, sent_run, in_flight_run FROM items_readable ORDER BY id")
    }

    @Test func anUnmarkPutsPendingFinalAndEarlierSentRowsBackAsTheyWere() throws {
        let journal = try Journal(path: path)
        func startRun() throws -> Int64 {
            try journal.transaction { () throws(JournalError) in
                try journal.startRun(startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
            }
        }
        let first = try startRun()
        var items: [Int64] = []
        for index in 0..<3 {
            let admission = try journal.transaction { () throws(JournalError) in
                try journal.admit(
                    profileId: "p\(index)", originalTransactionId: "10\(index)", source: "in.csv:\(index + 2)",
                    runID: first, now: "2026-01-0\(index + 1)T00:00:00.000Z")
            }
            guard case .send(let item, _) = admission else { throw CancellationError() }
            items.append(item)
        }
        // p1 is final; p2 was sent by the first run and is pending again with its last error.
        try journal.transaction { () throws(JournalError) in
            try journal.recordOutcome(
                itemID: items[1], status: .restored, code: nil, httpStatus: 200, message: nil,
                now: "2026-02-01T00:00:00.000Z", profile: nil)
            try journal.markInFlight(itemID: items[2], runID: first, now: "2026-02-02T00:00:00.000Z")
            try journal.recordOutcome(
                itemID: items[2], status: .pending, code: "timeout", httpStatus: nil, message: nil,
                now: "2026-02-03T00:00:00.000Z", profile: nil)
        }
        let before = try columns()
        let second = try startRun()
        let marks = try journal.transaction { () throws(JournalError) in
            [
                try journal.markInFlight(itemID: items[0], runID: second, now: "2026-03-01T00:00:00.000Z"),
                try journal.markInFlight(
                    itemID: items[1], runID: second, now: "2026-03-01T00:00:00.000Z", keepsStatus: true),
                try journal.markInFlight(itemID: items[2], runID: second, now: "2026-03-01T00:00:00.000Z"),
            ]
        }
        let marked = try columns()
        #expect(marked != before)
        #expect(marked.contains("p0|in_flight|2026-03-01T00:00:00.000Z|\(second)|"))
        #expect(marked.contains("p1|restored|2026-02-01T00:00:00.000Z|\(second)|\(second)"))
        try journal.transaction { () throws(JournalError) in
            for mark in marks { try journal.unmarkInFlight(mark) }
        }
        #expect(try columns() == before)
        journal.close()
    }

    /// Rows marked together (a statement per 32) are marked exactly as one at a time: the same
    /// columns and the same counts, for one row, a few, and more than a statement holds; rows of
    /// the batch that are not pending (a final row resent, a row put back) included.
    @Test(arguments: [1, 2, 7, 32, 33, 70])
    func rowsMarkedTogetherAreMarkedAsOneAtATime(count: Int) throws {
        func journal(markingTogether together: Bool) throws -> String {
            let path = directory.file("\(together ? "together" : "apart")-\(count).sqlite")
            let (journal, run, items) = try journalWithAdmittedRows(at: path, count: count)
            // Every third row answered before its mark (as a final row resent is).
            try journal.transaction { () throws(JournalError) in
                for item in items where item % 3 == 0 {
                    try journal.recordOutcome(
                        itemID: item, status: .failed, code: "http_418", httpStatus: 418, message: nil, now: 2_000,
                        profile: nil)
                }
            }
            try journal.transaction { () throws(JournalError) in
                if together {
                    try journal.markInFlight(itemIDs: items.reversed(), runID: run, now: 3_000)
                } else {
                    for item in items.reversed() { try journal.markInFlight(itemID: item, runID: run, now: 3_000) }
                }
            }
            journal.close()
            return try SQLiteTool.execute(
                path,
                """
                SELECT id, status, code, updated_at, sent_run, in_flight_run, attempts FROM items ORDER BY id;
                SELECT run_id, status, code, rows FROM run_counts ORDER BY run_id, status, code;
                """)
        }
        let apart = try journal(markingTogether: false)
        #expect(try journal(markingTogether: true) == apart)
        #expect(apart.contains("|1|"), "rows were marked: \(apart)")
    }
}
