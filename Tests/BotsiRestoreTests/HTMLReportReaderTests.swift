import BotsiBasics
import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiRestore

/// `HTMLReportReader` over real journals written through the journal's API: which run the page
/// charts, in which order the history lists the runs, what changed against the run before, the
/// outcomes largest first, and the pace a job of several journals was given.
@Suite struct HTMLReportReaderTests {
    /// Run 1 restores p1 and p2; run 2 fails p1 and answers three new rows "nothing to restore",
    /// then ends half a minute after its last attempt.
    static func twoRuns(_ path: String) throws -> (secondStart: Date, secondEnd: Date) {
        var builder = try JournalBuilder(path: path)
        let first = try builder.startRun()
        try builder.attempt("p1", run: first, outcome: "restored", access: levels(true))
        try builder.attempt("p2", run: first, outcome: "restored", access: levels(true))
        try builder.journal.finishRun(
            first, endedAt: builder.clock + 1, state: .finished, exitCode: 0, inputs: [], counts: RunCounts())
        let second = try builder.startRun()
        let secondStart = builder.clock
        try builder.attempt("p1", run: second, outcome: "failed", code: "http_418")
        for profile in ["n1", "n2", "n3"] {
            try builder.attempt(profile, run: second, outcome: "nothing_to_restore", code: "nothing_to_restore")
        }
        let secondEnd = builder.clock + 30
        try builder.journal.finishRun(
            second, endedAt: secondEnd, state: .finished, exitCode: 0, inputs: [], counts: RunCounts())
        builder.journal.close()
        return (secondStart, secondEnd)
    }

    static func read(_ paths: [String], runID: Int64? = nil) throws -> HTMLReportModel {
        let journals = try paths.map { try Journal(path: $0, create: false, readOnly: true) }
        defer { for journal in journals { journal.close() } }
        return try HTMLReportReader.read(
            Array(zip(paths, journals)).map { (path: $0.0, journal: $0.1) }, runID: runID,
            now: Date(timeIntervalSince1970: 1_800_100_000), toolVersion: "test")
    }

    @Test func theLatestRunIsChartedAndComparedWithTheOneBefore() throws {
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        let (secondStart, secondEnd) = try Self.twoRuns(path)
        let model = try Self.read([path])
        #expect(model.runScope == "run 2, the latest")
        #expect(model.history.map(\.line.id) == [1, 2], "oldest first")
        #expect(
            model.journals.first?.lastActivityAt == Timestamp.string(secondEnd), "the run's end, after its last attempt"
        )
        #expect(model.journals.first?.nextStep.hasPrefix("a run is in progress") == false)
        #expect(
            model.series?.startMilliseconds == Int64(secondStart.timeIntervalSince1970 * 1000), "from the run's start")
        #expect(model.outcomes.map(\.count) == [3, 1], "largest first")
        let changes = try #require(model.attention.first?.changes)
        #expect((changes.earlierRun, changes.laterRun) == (1, 2))
        #expect(changes.total == 4)
        #expect(changes.counts.values.max() == 3)
        #expect(changes.examples.values.map(\.count).max() == HTMLReportLimits.changeExamples, "examples are capped")
        let failing = changes.examples[.newlyFailing]?.first
        #expect(failing?.before == "restored" && failing?.after == "failed (http_418)")

        let first = try Self.read([path], runID: 1)
        #expect(first.runScope == "run 1")
        #expect(first.attention.first?.changes == nil, "the journal's first run has nothing to compare with")
    }

    /// `--rate` is shown for a job only when every shard ran with one: they add up.
    @Test func aJobsRateIsTheSumOnlyWhenEveryShardHadOne() throws {
        let directory = Workspace()
        let plain = directory.file("plain.sqlite")
        _ = try Self.twoRuns(plain)
        let capped = directory.file("capped.sqlite")
        var builder = try JournalBuilder(path: capped)
        builder.clock += 60
        let run = try builder.journal.startRun(
            startedAt: builder.clock, toolVersion: "test", host: "test", pid: 1, optionsJSON: #"{"rate": 10}"#)
        try builder.attempt("q1", run: run, outcome: "restored", access: levels(true))
        builder.journal.close()
        #expect(try Self.read([capped]).series?.rateOption == 10)
        #expect(try Self.read([plain, capped]).series?.rateOption == nil)
    }
}
