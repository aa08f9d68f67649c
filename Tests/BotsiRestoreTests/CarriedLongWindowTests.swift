import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// A run on a journal whose earlier run found a limit counted over a long window starts at the
/// pace that window gave (docs/pacing.md): a climb would spend the new window's budget in its first
/// minutes, and the app's users would be refused for the rest of it. Real journal, real runner,
/// real HTTP against the simulator.
@Suite struct CarriedLongWindowTests {
    /// A journal whose only run knew a long window: `rate` over a `cycle`-second window, seen at `seenAt`.
    private static func seed(_ path: String, rate: Double, cycle: Double, seenAt: Date) throws {
        let journal = try Journal(path: path)
        defer { journal.close() }
        try journal.transaction { () throws(JournalError) in
            let run = try journal.startRun(startedAt: seenAt, toolVersion: "t", host: "h", pid: 1, optionsJSON: "{}")
            let window = LongWindowRecord(cycleSeconds: cycle, rate: rate, seenAt: Timestamp.string(seenAt))
            try journal.recordProgress(run, RunProgressRecord(requests: 10, longWindow: window))
            try journal.finishRun(
                run, endedAt: seenAt, state: .finished, exitCode: 0, inputs: [], counts: RunCounts())
        }
    }

    private static func rows(_ count: Int) -> [(String, String)] {
        (0..<count).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
    }

    @Test func aRunStartsAtThePaceTheLastRunsLongWindowGave() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let seenAt = Date(timeIntervalSinceNow: -3_600)
        try Self.seed(harness.journalPath, rate: 400, cycle: 3_600, seenAt: seenAt)
        let summary = try harness.run([harness.scratch.csv(rows: Self.rows(200))])
        #expect(summary.exitCode == 0)
        let plateau = RateController.Tuning().plateau
        #expect(
            summary.carriedLongWindow
                == CarriedLongWindow(run: 1, rate: 400 * plateau, cycleSeconds: 3_600, seenAt: Timestamp.string(seenAt))
        )
        // Paced from the first request at the plateau under it, not climbing from the start rate
        // (a climb that met no limit ends unthrottled): over a second of an hour's cycle the probe
        // has added nothing.
        let pace = try #require(summary.finalThrottledRate, "the run ended paced")
        #expect(abs(pace - 400 * plateau) < 0.5, "\(pace)")
        #expect(summary.render(journalPath: "j").contains("pacing started at 396.0 requests/s, from the pace a limit"))
        // `--rate` still caps it, and the summary says the rate the run started at.
        let rows = Self.rows(240).suffix(40).map { $0 }
        let capped = try harness.run([harness.scratch.csv(rows: rows)]) { $0.rate = 50 }
        #expect(capped.carriedLongWindow?.rate == 50)
    }

    @Test func aLongWindowLastSeenOverAWeekAgoIsFoundAnew() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        try Self.seed(harness.journalPath, rate: 400, cycle: 3_600, seenAt: Date(timeIntervalSinceNow: -8 * 86_400))
        let summary = try harness.run([harness.scratch.csv(rows: Self.rows(50))])
        #expect(summary.exitCode == 0)
        #expect(summary.carriedLongWindow == nil)
        #expect(summary.finalThrottledRate == nil, "a climb that met no limit")
    }

    @Test func withoutAdaptivePacingOrSendingNothingIsCarried() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        try Self.seed(harness.journalPath, rate: 5, cycle: 3_600, seenAt: Date())
        let input = harness.scratch.csv(rows: Self.rows(50))
        let dry = try harness.run([input]) { $0.dryRun = true }
        #expect(dry.exitCode == 0)
        #expect(dry.carriedLongWindow == nil, "a dry run paces nothing")
        let summary = try harness.run([input]) { $0.adaptive = false }
        #expect(summary.exitCode == 0)
        #expect(summary.carriedLongWindow == nil)
    }

    /// What the progress record passes on: the window as the pacing knows it, with the time a run
    /// last saw it; the latest run that knew one is the one carried, past runs that did not and
    /// a record this version cannot read.
    @Test func theRecordPassesOnWhenTheWindowWasLastSeen() throws {
        let workspace = Workspace()
        let seenAt = Date(timeIntervalSinceNow: -7_200)
        try Self.seed(workspace.journal, rate: 30, cycle: 3_600, seenAt: seenAt)
        let journal = try Journal.openForRun(path: workspace.journal)
        defer { journal.close() }
        try journal.transaction { () throws(JournalError) in
            let none = try journal.startRun(startedAt: Date(), toolVersion: "t", host: "h", pid: 2, optionsJSON: "{}")
            try journal.recordProgress(none, RunProgressRecord(requests: 3))
        }
        try journal.connection.execute(
            #"INSERT INTO runs (uid, started_at, tool_version, host, pid, options, progress) "#
                + #"VALUES ('x', '2026-01-01T00:00:00.000Z', 't', 'h', 3, '{}', '{"longWindow": "unreadable"}')"#)
        var options = RunOptions()
        options.journalPath = workspace.journal
        let (writer, _) = try RunJournalWriter.startRun(
            on: journal, options: options, startedAt: Date(), toolVersion: "test")
        #expect(writer.earlierLongWindow?.run == 1)
        #expect(writer.carriedPace(now: Date()) == LongWindowPace(cycle: 3_600, rate: 30))
        #expect(writer.carriedPace(now: seenAt.addingTimeInterval(7 * 86_400 + 1)) == nil, "a week on")

        func written(_ pace: LongWindowPace, at now: Date) throws -> LongWindowRecord? {
            try writer.recordProgress(progress, longWindow: pace, at: now)
            try writer.commitBatch()
            return try journal.lastLongWindow(before: writer.runID + 1)?.record
        }
        let now = Date()
        let carried = try written(LongWindowPace(cycle: 3_600, rate: 28), at: now)
        #expect(carried == LongWindowRecord(cycleSeconds: 3_600, rate: 28, seenAt: Timestamp.string(seenAt)))
        let seen = try written(LongWindowPace(cycle: 3_500, rate: 31, seen: true), at: now)
        #expect(seen == LongWindowRecord(cycleSeconds: 3_500, rate: 31, seenAt: Timestamp.string(now)))
    }

    @Test func statusSaysWhatTheNextRunStartsFrom() throws {
        let workspace = Workspace()
        let seenAt = Date(timeIntervalSinceNow: -3_600)
        try Self.seed(workspace.journal, rate: 34.71, cycle: 3_600.2, seenAt: seenAt)
        func status(now: Date) throws -> StatusReport {
            let journal = try Journal(path: workspace.journal, create: false, readOnly: true)
            defer { journal.close() }
            return StatusReport(
                journalPath: workspace.journal, snapshot: try journal.snapshot(recentSince: now), holder: nil, now: now)
        }
        let seen = Timestamp.string(seenAt)
        let fresh = try status(now: Date())
        let line = "pacing    a limit counted over 3600 s gave 34.7 requests/s; the next run starts from that pace"
        #expect(fresh.renderText().contains("\(line) (run 1, last seen \(seen))"))
        let json = #""longWindow":{"carried":true,"cycleSeconds":3600.2,"rate":34.71,"run":1"#
        #expect(fresh.renderJSON().contains(json))
        let stale = try status(now: seenAt.addingTimeInterval(8 * 86_400))
        #expect(stale.renderText().contains("seen over 7 days ago, the next run finds it anew (run 1"))
        #expect(stale.renderJSON().contains(#""longWindow":{"carried":false"#))
    }

    /// A record is carried only as a run could have written it, and to a run it fits.
    @Test func onlyARecordARunCouldHaveWrittenIsCarried() {
        let now = Date()
        let seen = Timestamp.string(now.addingTimeInterval(-60))
        func carried(_ cycle: Double, _ rate: Double, seenAt: String = seen, shards: Int = 1, to count: Int = 1) -> Bool
        {
            RunJournalWriter.isCarried(
                LongWindowRecord(cycleSeconds: cycle, rate: rate, seenAt: seenAt, shardCount: shards), now: now,
                shardCount: count)
        }
        #expect(carried(3_600, 30))
        #expect(!carried(0.5, 30), "no window shorter than a long closure is long")
        #expect(!carried(3_600, .infinity) && !carried(3_600, .nan) && !carried(.infinity, 30))
        #expect(!carried(3_600, 30, seenAt: "yesterday"))
        #expect(carried(3_600, 30, seenAt: Timestamp.string(now.addingTimeInterval(600))), "another host's clock")
        #expect(!carried(3_600, 30, seenAt: Timestamp.string(now.addingTimeInterval(2 * 86_400))), "from the future")
        #expect(carried(3_600, 7.5, shards: 4, to: 4))
        #expect(!carried(3_600, 7.5, shards: 4, to: 2), "a quarter's share is not a half's")
        #expect(!carried(3_600, 0), "a rate of nothing is no pace to start from")
    }

    /// The edges, as the pacing draws them: a window closed exactly `longClosed` is a long one
    /// (`RateController` counts it so), and a record exactly `longWindowKeptFor` old is still kept.
    @Test func theEdgesOfACarriedRecordAreIncluded() {
        let now = Timestamp.date(Timestamp.string(Date()))!
        let longClosed = RateController.Tuning().longClosed
        func carried(_ cycle: Double, age: TimeInterval) -> Bool {
            RunJournalWriter.isCarried(
                LongWindowRecord(
                    cycleSeconds: cycle, rate: 30, seenAt: Timestamp.string(now.addingTimeInterval(-age)), shardCount: 1
                ),
                now: now)
        }
        #expect(carried(longClosed, age: 60))
        #expect(!carried(longClosed.nextDown, age: 60))
        #expect(carried(3_600, age: RunJournalWriter.longWindowKeptFor))
        #expect(!carried(3_600, age: RunJournalWriter.longWindowKeptFor + 0.001))
    }

    /// Only the next run's pacing reads the record: one this version cannot read is left out, and
    /// `status` reads the journal as before.
    @Test func anUnreadableRecordFailsNothing() throws {
        let workspace = Workspace()
        try Self.seed(workspace.journal, rate: 30, cycle: 3_600, seenAt: Date())
        let journal = try Journal(path: workspace.journal)
        defer { journal.close() }
        try journal.connection.execute(
            #"INSERT INTO runs (uid, started_at, ended_at, state, tool_version, host, pid, options, progress) "#
                + #"VALUES ('x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', 'finished', 't', 'h', 3, "#
                + #"'{}', '{"requests": 4, "longWindow": {"rate": 30, "cycleSeconds": 3600}}')"#)
        let snapshot = try journal.snapshot(recentSince: Date())
        #expect(snapshot.latestRun?.progress == RunProgressRecord(requests: 4))
        #expect(snapshot.longWindow?.run == 1)
    }

    private var progress: RunProgress {
        RunProgress(
            elapsed: 1, rowsRead: 0, bytesRead: 0, totalBytes: nil, finished: 0, inFlight: 0, waitingToRetry: 0,
            requests: 0, retries: 0, statuses: [:], rejected: 0, skipped: 0, duplicates: 0, recentRate: 0,
            stopping: nil, throttledRate: nil, concurrencyLimit: 1)
    }
}
