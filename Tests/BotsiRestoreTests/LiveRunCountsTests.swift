import BotsiJournal
import BotsiRestore
import BotsiTestSupport
import Foundation
import Testing

/// `status` and `runs` count a live run from what the journal keeps as it goes (`run_counts`,
/// `run_attempts`), never by walking its attempts or rows (issue 21: they answer at once on a
/// journal of any size); only a killed run is counted from its own attempts. A journal whose
/// `attempts` and `items` tables are gone shows it: a live run is still counted, a killed one
/// cannot be.
@Suite struct LiveRunCountsTests {
    private static let holder = LockHolder(pid: 1, host: "test", startedAt: "")

    /// One run with no end: p1 restored, p2 answered "retry" twice (one first attempt, one resend).
    private func journalOfOneUnendedRun(_ directory: Workspace) throws -> String {
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let run = try builder.startRun()
        try builder.attempt("p1", run: run, outcome: "restored", access: levels(true))
        try builder.attempt("p2", run: run, outcome: "retry", code: "http_503")
        try builder.attempt("p2", run: run, outcome: "retry", code: "http_503")
        builder.journal.close()
        return path
    }

    private func dropAttemptsAndItems(_ path: String) throws {
        try SQLiteTool.execute(
            path,
            """
            PRAGMA foreign_keys = OFF; DROP VIEW attempts_readable; DROP VIEW items_readable;
            DROP TABLE attempts; DROP TABLE items;
            """)
    }

    @Test func statusCountsALiveRunWithoutItsAttempts() throws {
        let directory = Workspace()
        let path = try journalOfOneUnendedRun(directory)
        try dropAttemptsAndItems(path)
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        let now = Date()
        let snapshot = try journal.snapshot(recentSince: now, runLockHeld: true)
        let status = StatusReport(journalPath: path, snapshot: snapshot, holder: Self.holder, now: now)
        #expect(status.liveness == .running)
        #expect(status.requests == 3)
        // Its attempts answered "retry" so far, as `run_attempts` keeps them (no walk of its rows).
        #expect(status.retries == 2)
        #expect(snapshot.activity.retries == nil)
        // Killed, the same run is counted from its own attempts: they must be there.
        #expect(throws: JournalError.self) { try journal.snapshot(recentSince: now, runLockHeld: false) }
    }

    @Test func runsCountsALiveRunWithoutItsAttemptsOrRows() throws {
        let directory = Workspace()
        let path = try journalOfOneUnendedRun(directory)
        try dropAttemptsAndItems(path)
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        let runs = try journal.runs()
        let lines = RunLine.make(
            runs: runs, attemptOutcomes: try journal.attemptOutcomesByRun(),
            unrecorded: try RunLine.Unrecorded(journal, runs: runs, holder: Self.holder), holder: Self.holder,
            now: Date())
        #expect(lines.map(\.state) == ["running"])
        #expect(lines.first?.statuses == ["restored": 1, "pending": 1])
        #expect(lines.first?.requests == 3)
        #expect(lines.first?.retries == 2)
        #expect(throws: JournalError.self) { try RunLine.Unrecorded(journal, runs: runs, holder: nil) }
    }

    /// A killed run's rows by their state at its end, each rule of the walk on one row: an answer
    /// in the run replaces an earlier run's, a final answer keeps its code through a later retry, a
    /// row never answered is pending with its last error, rows it took up and never sent are its
    /// own (however many, with no code, or in flight when it died), and so is a row it held. Its
    /// live counts never list a state no row is in.
    @Test func aKilledRunsRowsAreTheirStateAtItsEnd() throws {
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let first = try builder.startRun()
        try builder.attempt("answered-again", run: first, outcome: "failed", code: "http_400")
        try builder.attempt("owed-1", run: first, outcome: "retry", code: "http_503")
        try builder.attempt("owed-2", run: first, outcome: "retry", code: "http_503")
        try builder.attempt("in-flight", run: first, outcome: "retry", code: "http_503")
        let killed = try builder.startRun()
        // Sent again (`--retry-failed` takes it up): its failure leaves the run's counts at 0.
        try builder.journal.claim(itemID: builder.items["answered-again"]!, runID: killed)
        try builder.attempt("answered-again", run: killed, outcome: "restored", access: levels(true))
        try builder.attempt("final-then-retry", run: killed, outcome: "failed", code: "http_418")
        try builder.attempt("final-then-retry", run: killed, outcome: "retry", code: "timeout")
        try builder.attempt("never-answered", run: killed, outcome: "retry", code: "http_503")
        try builder.attempt("never-answered", run: killed, outcome: "retry", code: "timeout")
        for owed in ["owed-1", "owed-2", "in-flight"] {
            try builder.journal.claim(itemID: builder.items[owed]!, runID: killed)
        }
        // Taken up and marked sent when the kill came: no attempt of this run is on record.
        try builder.journal.markInFlight(
            itemIDs: [builder.items["in-flight"]!], runID: killed, now: Timestamp.milliseconds(Date()))
        let held = try builder.journal.transaction { () throws(JournalError) in
            try builder.journal.admit(
                profileId: "held", originalTransactionId: "2000000000000002", source: "in.csv:9", runID: killed,
                now: Timestamp.string(Date()), holdConflicts: true)
        }
        guard case .held = held else {
            Issue.record("a second claim of the transaction is held: \(held)")
            return
        }
        defer { builder.journal.close() }

        let counts = try builder.journal.unendedRunCounts(runID: killed)
        let rows = Set(counts.rows.map { "\($0.status.rawValue)/\($0.code ?? "-") ×\($0.count)" })
        #expect(
            rows == [
                "restored/- ×1", "failed/http_418 ×1", "pending/timeout ×1", "pending/- ×2",
                "held/\(ItemStatus.heldCode) ×1", "in_flight/- ×1",
            ], "\(rows)")
        #expect(counts.requests == 5 && counts.retries == 2)

        let live = try builder.journal.liveRunRowCounts(runID: killed)
        #expect(live.allSatisfy { $0.count > 0 }, "\(live)")
        let restored = try #require(live.first { $0.status == .restored }, "\(live)")
        #expect(restored.code == nil && restored.count == 1)
    }

    /// A killed run before the live one: the killed one is counted from its attempts (its one
    /// resend), the live one from `run_attempts` (its attempts answered "retry").
    @Test func runsWalksOnlyTheKilledRun() throws {
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let killed = try builder.startRun()
        try builder.attempt("p1", run: killed, outcome: "retry", code: "http_503")
        try builder.attempt("p1", run: killed, outcome: "retry", code: "http_503")
        let live = try builder.startRun()
        try builder.attempt("p2", run: live, outcome: "retry", code: "http_503")
        try builder.attempt("p2", run: live, outcome: "retry", code: "http_503")
        builder.journal.close()
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        let runs = try journal.runs()
        let unrecorded = try RunLine.Unrecorded(journal, runs: runs, holder: Self.holder)
        #expect(unrecorded.retries.keys.sorted() == [killed])
        let lines = RunLine.make(
            runs: runs, attemptOutcomes: try journal.attemptOutcomesByRun(), unrecorded: unrecorded,
            holder: Self.holder, now: Date())
        #expect(lines.map(\.state) == ["killed", "running"])
        #expect(lines.map(\.retries) == [1, 2])
        #expect(lines.map(\.requests) == [2, 2])
    }

    /// The page counts a run without a summary as `runs` does, by who holds the lock: while its run
    /// holds it, the run is running and its retries are its attempts answered "retry" so far (2);
    /// once the lock is gone it is killed and counted from its own attempts (1 resend).
    @Test func thePageTellsARunningRunFromAKilledOneByTheLock() throws {
        let directory = Workspace()
        let path = try journalOfOneUnendedRun(directory)
        func page() throws -> (line: RunLine?, latest: LatestRun?) {
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            let model = try HTMLReportReader.read([(path, journal)], runID: nil, now: Date(), toolVersion: "test")
            return (model.history.last?.line, model.journals.first?.latestRun)
        }
        let running = try Journal.openForRun(path: path)
        let live = try page()
        running.close()
        #expect(live.line?.state == "running")
        #expect(live.line?.retries == 2)
        // The verdict's latest run, as `status` says it (its snapshot not walking the live run).
        #expect(live.latest?.state == "running")
        #expect(live.latest?.retries == 2)
        let killed = try page()
        #expect(killed.line?.state == "killed")
        #expect(killed.line?.retries == 1)
        #expect(killed.latest?.state == "killed")
        #expect(killed.latest?.retries == 1)
    }
}
