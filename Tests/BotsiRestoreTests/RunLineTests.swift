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

    /// A run whose figures all differ, and one without an end, an exit code or rows.
    static let lines = [
        RunLine(
            id: 7, startedAt: start, endedAt: "2026-12-07T10:01:30.500Z", durationSeconds: 90.5, state: "finished",
            exitCode: 3, inputs: ["a.csv", "b\u{202E}c.csv"],
            statuses: [
                "restored": 1, "nothing_to_restore": 2, "profile_not_found": 3, "failed": 4, "rejected": 5,
                "pending": 6,
            ], rejectedInput: 8, requests: 11, retries: 10, host: "h", countsFromAttempts: true),
        RunLine(id: 8, startedAt: start, state: "killed"),
    ]

    /// Each of the table's columns holds its own figure; a run without a time or an exit code
    /// shows `?` and `-` there. An input's bidi override is shown escaped.
    @Test func eachTableColumnHoldsItsOwnFigure() {
        var text = ""
        RunsWriter.write(Self.lines, format: .table) { text += $0 }
        let rows = text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.count == 4, "\(text)")
        #expect(
            rows.first == [
                "run", "started", "duration", "state", "exit", "restored", "nothing", "notFound", "failed", "pending",
                "rejected", "requests", "inputs",
            ])
        #expect(
            rows.dropFirst(2) == [
                [
                    "7", Self.start, "1m30s", "finished", "3", "1", "2", "3", "9", "6", "8", "11", "a.csv",
                    #"b\u202Ec.csv"#,
                ],
                ["8", Self.start, "?", "killed", "-", "0", "0", "0", "0", "0", "0", "0"],
            ], "\(text)")
    }

    /// JSON lines hold every figure under its own name, the missing ones as null: one line, ended
    /// by a line feed alone, per run. An input's bidi override is a JSON escape, not the raw
    /// character a terminal would obey, and reads back as it was.
    @Test func eachJSONLineHoldsEveryFigure() throws {
        var text = ""
        RunsWriter.write(Self.lines, format: .jsonl) { text += $0 }
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 3 && !text.contains("\r"))
        #expect(!text.unicodeScalars.contains("\u{202E}") && text.contains(#"\u202E"#), "\(text)")
        let objects = try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let run = try #require(objects.first)
        #expect(run["run"] as? Int == 7 && run["state"] as? String == "finished" && run["exitCode"] as? Int == 3)
        #expect(run["endedAt"] as? String == "2026-12-07T10:01:30.500Z" && run["durationSeconds"] as? Double == 90.5)
        #expect(run["rejectedInput"] as? Int == 8 && run["requests"] as? Int == 11 && run["retries"] as? Int == 10)
        #expect(run["host"] as? String == "h" && run["countsFromAttempts"] as? Bool == true)
        #expect(run["inputs"] as? [String] == Self.lines[0].inputs)
        #expect(run["statuses"] as? [String: Int] == Self.lines[0].statuses)
        let unended = try #require(objects.last)
        #expect(unended["endedAt"] is NSNull && unended["durationSeconds"] is NSNull && unended["exitCode"] is NSNull)
    }
}
