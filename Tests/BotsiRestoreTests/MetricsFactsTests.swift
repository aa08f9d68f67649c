import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

/// What the metrics file reads from the journal beyond the run's own counts, and the inputs every
/// run was given, on a journal of several runs (the end-to-end suites have one run, or one
/// success, and so cannot tell the newest from the oldest).
@Suite struct MetricsFactsTests {
    private static func end(_ journal: Journal, _ run: Int64, at seconds: Double, exitCode: Int32) throws {
        try journal.transaction { () throws(JournalError) in
            try journal.finishRun(
                run, endedAt: Date(timeIntervalSince1970: seconds), state: exitCode == 0 ? .finished : .stopped,
                exitCode: exitCode, inputs: [], counts: RunCounts())
        }
    }

    @Test func theNewestRunsAttemptsTheRowsOwedAndTheNewestSuccess() throws {
        let directory = Workspace()
        var builder = try JournalBuilder(path: directory.file("journal.sqlite"))
        defer { builder.journal.close() }
        let oldest = try builder.startRun()
        try builder.attempt("old", run: oldest, outcome: "retry", code: "http_500", httpStatus: 500)
        try Self.end(builder.journal, oldest, at: 1_800_000_100, exitCode: 0)
        let newestSuccess = try builder.startRun()
        try Self.end(builder.journal, newestSuccess, at: 1_800_000_200, exitCode: 0)
        let failed = try builder.startRun()
        try Self.end(builder.journal, failed, at: 1_800_000_300, exitCode: 75)
        let running = try builder.startRun()
        try builder.attempt("a", run: running, outcome: "restored", access: levels(true))
        try builder.attempt("b", run: running, outcome: "retry", code: "timeout", httpStatus: nil)
        try builder.attempt("c", run: running, outcome: "retry", code: "http_503")
        try builder.attempt("c", run: running, outcome: "retry", code: "http_503")
        let sent = try builder.journal.transaction { () throws(JournalError) in
            try builder.journal.admit(
                profileId: "d", originalTransactionId: "2000000000000010", source: "in.csv:5", runID: running,
                now: Timestamp.string(Date()))
        }
        guard case .send(let itemID, _) = sent else {
            Issue.record("a new pair is sent: \(sent)")
            return
        }
        try builder.journal.markInFlight(itemIDs: [itemID], runID: running, now: Timestamp.milliseconds(Date()))

        let facts = try builder.journal.metricsFacts { exitCode, _ in exitCode == 0 }
        #expect(
            facts.attempts.map { "\($0.outcome)/\($0.httpStatus.map(String.init) ?? "-") ×\($0.count)" } == [
                "restored/200 ×1", "retry/- ×1", "retry/503 ×2",
            ], "\(facts.attempts)")
        // "old", "b" and "c" are pending; "d" is in flight.
        #expect(facts.owedRows == 4)
        #expect(facts.lastSuccessAt == Date(timeIntervalSince1970: 1_800_000_200))
    }

    @Test func everyInputOfEveryRunInRunOrderWithItsAbsolutePathWhereItMatches() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("journal.sqlite"))
        defer { journal.close() }
        for options in [
            #"{"inputs": ["a.csv", "-"], "inputPaths": ["/work/a.csv", "-"]}"#,
            // Paths that do not pair with the inputs one to one are not guessed at.
            #"{"inputs": ["b.csv"], "inputPaths": ["/work/b.csv", "/work/c.csv"]}"#,
        ] {
            _ = try journal.transaction { () throws(JournalError) in
                try journal.startRun(startedAt: Date(), toolVersion: "test", host: "h", pid: 1, optionsJSON: options)
            }
        }
        #expect(
            try journal.recordedInputs() == [
                RecordedInput(runID: 1, path: "a.csv", absolutePath: "/work/a.csv"),
                RecordedInput(runID: 1, path: "-", absolutePath: "-"),
                RecordedInput(runID: 2, path: "b.csv", absolutePath: nil),
            ])
    }
}
