import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// The reads `report --format html` makes, each bounded so that the page's memory does not grow
/// with the journal: the largest groups first, at most so many groups and examples, the rest
/// counted. A page made from a run has fewer groups than its limits, so the bounds are held here,
/// on journals made to have more.
@Suite struct HTMLReportQueriesTests {
    @Test func attemptGroupsAreTheLargestFirstAndTheRestAreCountedByAttempt() throws {
        let directory = Workspace()
        let (journal, run, items) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), count: 10)
        defer { journal.close() }
        // 4 restored, 3 retried after a 500, 2 after a 503, 1 failed: four groups.
        let groups: [(AttemptOutcome, Int, String?, Int)] = [
            (.status(.restored), 200, nil, 4), (.retry, 500, "http_500", 3), (.retry, 503, "http_503", 2),
            (.status(.failed), 409, "conflict", 1),
        ]
        var next = 0
        try journal.transaction { () throws(JournalError) in
            for (outcome, status, code, count) in groups {
                for _ in 0..<count {
                    try journal.recordAttempt(
                        itemID: items[next], runID: run, number: 1,
                        startedAt: Date(timeIntervalSince1970: 1_795_970_400),
                        durationMilliseconds: 50, httpStatus: status, code: code, outcome: outcome, profile: nil)
                    next += 1
                }
            }
        }
        let (kept, others) = try journal.attemptOutcomeCounts(runID: run, limit: 2)
        #expect(
            kept == [
                AttemptOutcomeCount(outcome: .status(.restored), httpStatus: 200, code: nil, count: 4),
                AttemptOutcomeCount(outcome: .retry, httpStatus: 500, code: "http_500", count: 3),
            ])
        #expect(others == 3, "the two groups left out hold three attempts")
    }

    @Test func rowGroupsAreTheLargestFirstWithTheirFirstRowsAndAllAreCounted() throws {
        let directory = Workspace()
        let (journal, _, items) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), count: 6)
        defer { journal.close() }
        let outcomes: [(ItemStatus, String?)] = [
            (.restored, nil), (.failed, "http_409"), (.restored, nil), (.failed, "not_found"), (.failed, "http_409"),
            (.restored, nil),
        ]
        try journal.transaction { () throws(JournalError) in
            for (item, (status, code)) in zip(items, outcomes) {
                try journal.recordOutcome(
                    itemID: item, status: status, code: code, httpStatus: 200, message: code, now: 2_000, profile: nil)
            }
        }
        let (groups, groupCount) = try journal.rowGroups(
            statuses: [.restored, .failed], groupLimit: 2, exampleLimit: 2)
        #expect(groupCount == 3)
        #expect(groups.map(\.count) == [3, 2], "\(groups)")
        #expect(groups.map(\.code) == [nil, "http_409"])
        #expect(groups.first?.examples.map(\.profileId) == ["p0", "p2"], "the first rows, in journal order")
        #expect(groups.last?.examples.map(\.source) == ["in.csv:3", "in.csv:6"])
    }

    @Test func rejectionGroupsAreTheLargestFirstWithTheirRowsByFileAndLine() throws {
        let directory = Workspace()
        let (journal, run, _) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), pairs: [])
        defer { journal.close() }
        let first = try journal.inputID(path: "a.csv")
        let second = try journal.inputID(path: "b.csv")
        let rejections: [(Int64, Int, String)] = [
            (second, 5, "bad_id"), (first, 9, "bad_id"), (second, 3, "bad_id"), (first, 2, "empty_field"),
        ]
        try journal.transaction { () throws(JournalError) in
            for (input, line, reason) in rejections {
                try journal.recordRejection(
                    source: RowSource(input: input, line: line), reason: reason, message: "m", profileId: "p\(line)",
                    originalTransactionId: nil, runID: run, now: 1_000)
            }
        }
        let (groups, groupCount) = try journal.rejectionGroups(groupLimit: 1, exampleLimit: 2)
        #expect(groupCount == 2)
        #expect(groups.map(\.code) == ["bad_id"] && groups.map(\.count) == [3], "\(groups)")
        #expect(groups.first?.examples.map(\.source) == ["a.csv:9", "b.csv:3"])
    }

    @Test func claimGroupsAreTransactionsOfSeveralProfilesInTransactionOrder() throws {
        let directory = Workspace()
        let claims: [(profile: String, transaction: String)] = [
            ("p1", "t1"), ("q1", "t0"), ("p2", "t1"), ("r1", "t9"), ("q2", "t0"), ("p3", "t1"),
        ]
        let (journal, _, _) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), pairs: claims)
        defer { journal.close() }
        let (groups, groupCount, rowCount) = try journal.claimGroups(groupLimit: 1, claimLimit: 2)
        #expect(groupCount == 2 && rowCount == 5, "t9 has one profile: not a group")
        #expect(groups.map(\.originalTransactionId) == ["t0"] && groups.map(\.profiles) == [2])
        #expect(groups.first?.claims.map(\.profileId) == ["q1", "q2"], "in the order they were read")
        let all = try journal.claimGroups(groupLimit: 5, claimLimit: 2)
        #expect(all.groups.last?.claims.map(\.profileId) == ["p1", "p2"], "the first claims of three")
    }

    @Test func theLatestRunsAreTheNewestOldestFirst() throws {
        let directory = Workspace()
        let (journal, first, _) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), pairs: [])
        defer { journal.close() }
        for hour in 1...2 {
            _ = try journal.transaction { () throws(JournalError) in
                try journal.startRun(
                    startedAt: Date(timeIntervalSince1970: 1_795_970_400 + Double(hour) * 3600), toolVersion: "test",
                    host: "host", pid: 1, optionsJSON: "{}")
            }
        }
        let (runs, total, firstStartedAt) = try journal.latestRuns(limit: 2)
        #expect(total == 3)
        #expect(runs.map(\.id) == [first + 1, first + 2])
        #expect(firstStartedAt == (try journal.runRecord(id: first)?.startedAt))
        #expect(firstStartedAt != runs.last?.startedAt)
    }

    @Test func aRunsAttemptsAreReadWithTheirSpanDurationsAndRowsPerAttemptCount() throws {
        let directory = Workspace()
        let (journal, run, items) = try journalWithAdmittedRows(at: directory.file("j.sqlite"), count: 3)
        defer { journal.close() }
        let start = Date(timeIntervalSince1970: 1_795_970_400)
        // Row 0 twice, row 1 three times, row 2 once.
        let attempts: [(item: Int, number: Int, at: Double)] = [
            (0, 1, 0), (1, 1, 0.5), (2, 1, 1), (0, 2, 2), (1, 2, 3), (1, 3, 4.25),
        ]
        try journal.transaction { () throws(JournalError) in
            for attempt in attempts {
                try journal.recordAttempt(
                    itemID: items[attempt.item], runID: run, number: attempt.number,
                    startedAt: start.addingTimeInterval(attempt.at), durationMilliseconds: 37.5, httpStatus: 500,
                    code: "http_500", outcome: .retry, profile: nil)
            }
        }
        let startMilliseconds = Int64(start.timeIntervalSince1970 * 1000)
        let span = try #require(try journal.attemptSpan(runID: run))
        #expect(span.first == startMilliseconds && span.last == startMilliseconds + 4_250)
        var samples: [AttemptSample] = []
        try journal.forEachAttemptSample(runID: run) { samples.append($0) }
        #expect(samples.map(\.startedAtMilliseconds) == attempts.map { startMilliseconds + Int64($0.at * 1000) })
        #expect(samples.allSatisfy { $0.durationMilliseconds == 37.5 && $0.httpStatus == 500 }, "\(samples)")
        #expect(try journal.attemptsPerRow(runID: run) == [1: 1, 2: 1, 3: 1])
    }
}
