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
}
