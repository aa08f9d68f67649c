import BotsiBasics
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// `runs`' line for each run, from records set by hand: which counts win when several are on
/// record, what a killed run's figures are, and the table's columns.
@Suite struct RunLineTests {
    static let start = "2026-12-07T10:00:00.000Z"
    static let now = Timestamp.date("2026-12-07T10:05:00.000Z")!

    static func run(_ id: Int64, ended: String? = nil, counts: RunCounts = RunCounts(), inputs: [RunInput] = [])
        -> RunRecord
    {
        RunRecord(
            id: id, startedAt: start, endedAt: ended, state: ended == nil ? .running : .finished,
            exitCode: ended == nil ? nil : 0, toolVersion: "test", host: "h", pid: 1,
            options: #"{"inputs":["typed.csv"]}"#, inputs: inputs, counts: counts)
    }

    static let holder = LockHolder(pid: 1, host: "h", startedAt: start)

    /// A run without an end is running only while it is the latest and someone holds the lock:
    /// its time runs to now. A killed one has no time (nothing says when it died), and its rows
    /// left in flight are pending, as the next run's start makes them.
    @Test func aKilledRunHasNoDurationAndItsRowsInFlightArePending() {
        let killed = RunLine.make(
            runs: [Self.run(1)], attemptOutcomes: [1: [.status(.inFlight): 2, .status(.pending): 1]], holder: nil,
            now: Self.now)[0]
        #expect(killed.state == "killed" && killed.durationSeconds == nil)
        #expect(killed.statuses == ["pending": 3], "\(killed.statuses)")
        let running = RunLine.make(runs: [Self.run(1)], attemptOutcomes: [:], holder: Self.holder, now: Self.now)[0]
        #expect(running.state == "running" && running.durationSeconds == 300)
        let skewed = RunLine.make(
            runs: [Self.run(1, ended: "2026-12-07T09:59:00.000Z")], attemptOutcomes: [:], holder: nil, now: Self.now)[0]
        #expect(skewed.durationSeconds == 0, "a clock set back gives no negative time")
    }

    /// A run's own summary wins; without one, what the journal counted for it; without that, its
    /// attempts.
    @Test func recordedCountsWinThenTheJournalsThenTheAttempts() {
        var counts = RunCounts()
        counts.rejectedByReason = ["malformed_csv": 2]
        counts.requests = 9
        counts.statuses = [.restored: 9]
        var unrecorded = RunLine.Unrecorded()
        unrecorded.rejections = [1: 5, 2: 5]
        unrecorded.requests = [1: 7, 2: 7]
        let outcomes: [Int64: [AttemptOutcome: Int]] = [2: [.status(.restored): 3, .retry: 1]]
        let lines = RunLine.make(
            runs: [Self.run(1, ended: Self.start, counts: counts), Self.run(2)], attemptOutcomes: outcomes,
            unrecorded: unrecorded, holder: nil, now: Self.now)
        #expect(lines[0].rejectedInput == 2 && lines[0].requests == 9)
        #expect(lines[1].rejectedInput == 5 && lines[1].requests == 7)
        let bare = RunLine.make(runs: [Self.run(2)], attemptOutcomes: outcomes, holder: nil, now: Self.now)[0]
        #expect(bare.requests == 4 && bare.statuses == ["restored": 3])
    }

    /// The inputs a run read to its end or not, as it recorded them; while it runs (or after a
    /// kill), as it was given them.
    @Test func aRunsInputsAreWhatItRecordedElseWhatItWasGiven() {
        let ended = Self.run(
            1, ended: Self.start, inputs: [RunInput(path: "/data/recorded.csv", sha256: "", bytes: 1, complete: true)])
        let lines = RunLine.make(runs: [ended, Self.run(2)], attemptOutcomes: [:], holder: nil, now: Self.now)
        #expect(lines.map(\.inputs) == [["/data/recorded.csv"], ["typed.csv"]])
    }

    /// The table's `failed` column holds the rows Botsi rejected too: both are final failures.
    @Test func theTablesFailedColumnCountsRejectedRowsToo() {
        var counts = RunCounts()
        counts.statuses = [.failed: 2, .rejected: 3]
        let line = RunLine.make(
            runs: [Self.run(1, ended: Self.start, counts: counts)], attemptOutcomes: [:], holder: nil, now: Self.now)
        var text = ""
        RunsWriter.write(line, format: .table) { text += $0 }
        // The header, a rule, then the run.
        let rows = text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        let failed = rows.first?.firstIndex(of: "failed")
        #expect(rows.count == 3 && failed.map { rows[2][$0] } == "5", "\(text)")
    }
}
