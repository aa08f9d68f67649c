import BotsiSimulator
import BotsiTestSupport
import Foundation
import Glibc
import Testing

/// A run killed with SIGKILL records no summary: `runs` and `status` count it from the journal,
/// and those counts are the ones its summary would have given (an operator's chaos review: a
/// killed run's line left out the rows waiting out a backoff, counted first attempts answered
/// "retry" as retries, and gave a killed selection every row it had taken up). Real journals,
/// the real binary, the real simulator.
@Suite("a killed run is counted as its summary would have counted it")
struct KilledRunCountsTests {
    /// The `runs --format jsonl` line of run `id`.
    private func runsLine(_ id: Int, _ workspace: Workspace) throws -> [String: Any] {
        let runs = try botsi(["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        #expect(runs.status == 0, "\(runs.stderr)")
        return try #require(
            ModelSequence.jsonObjects(runs.stdout).first { $0["run"] as? Int == id }, "runs: \(runs.stdout)")
    }

    /// Attempts of run `id`, and the rows they were for.
    private func attempts(_ id: Int, _ workspace: Workspace) throws -> (requests: Int, rows: Int) {
        let found = try JournalTables.rows(
            workspace.journal, "SELECT count(*), count(DISTINCT item_id) FROM attempts WHERE run_id = \(id)")
        return (Int(found.first?[0] ?? "") ?? -1, Int(found.first?[1] ?? "") ?? -1)
    }

    private func failingRun(_ rows: [Pair], _ workspace: Workspace, _ simulator: Simulator) -> [String] {
        [
            "run", workspace.csv(rows), "--journal", workspace.journal, "--base-url", simulator.baseURL,
            "--backoff-base", "0.5", "--backoff-cap", "30", "--max-attempts", "50", "--timeout", "10",
        ]
    }

    /// Every reply a 500: a killed run's rows all wait out a backoff. Its line counts them pending,
    /// as the summary of a run stopped the same way does, and still does once a later run has
    /// sent them; its retries are the resends it made, not the first attempts answered "retry".
    @Test func aKilledRunCountsItsRowsWaitingOutABackoffAndOnlyItsResendsAsRetries() throws {
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let rows = Pair.generate(12)

        // The same run stopped by SIGINT: what its summary records.
        let stoppedSpace = Workspace()
        let stopped = try Child(failingRun(rows, stoppedSpace, failing), key: Simulator.defaultKey, in: stoppedSpace)
        try #require(eventually(timeout: 60) { failing.stats().requests >= rows.count + 6 }, "no resend went out")
        stopped.send(SIGINT)
        _ = stopped.wait(timeout: 60)
        let recorded = try runsLine(1, stoppedSpace)
        #expect(recorded["statuses"] as? [String: Int] == ["pending": rows.count], "\(recorded)")
        let stoppedAttempts = try attempts(1, stoppedSpace)
        #expect(recorded["retries"] as? Int == stoppedAttempts.requests - stoppedAttempts.rows, "\(recorded)")

        let workspace = Workspace()
        let before = failing.stats().requests
        let killed = try Child(failingRun(rows, workspace, failing), key: Simulator.defaultKey, in: workspace)
        // Killed once every row's first attempt is on record, and resends (the journal writes in
        // batches: a row whose one reply was not written yet is no row waiting out a backoff).
        let resent = eventually(timeout: 60) {
            guard failing.stats().requests - before >= rows.count + 6,
                let (requests, attempted) = try? attempts(1, workspace)
            else { return false }
            return attempted == rows.count && requests > attempted
        }
        killed.send(SIGKILL)
        _ = killed.wait(timeout: 30)
        try #require(resent, "no resend went out")
        let (requests, attempted) = try attempts(1, workspace)
        #expect(attempted == rows.count && requests > attempted, "requests \(requests), rows \(attempted)")

        let line = try runsLine(1, workspace)
        #expect(line["state"] as? String == "killed", "\(line)")
        #expect(line["statuses"] as? [String: Int] == ["pending": rows.count], "\(line)")
        #expect(line["requests"] as? Int == requests, "\(line)")
        #expect(line["retries"] as? Int == requests - attempted, "\(line)")
        let status = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let object = try #require(ModelSequence.jsonObjects(status.stdout).first, "\(status.stdout)")
        #expect(object["retries"] as? Int == requests - attempted, "status: \(status.stdout)")

        // A later run sends the rows: the killed run's line is as it was.
        let good = try startSimulator()
        defer { good.stop() }
        let next = try botsi(
            runArguments([workspace.csv(rows)], workspace, good), key: Simulator.defaultKey, in: workspace)
        #expect(next.status == 0, "\(next.stderr)")
        let after = try runsLine(1, workspace)
        #expect(after["statuses"] as? [String: Int] == ["pending": rows.count], "\(after)")
        #expect(after["retries"] as? Int == requests - attempted, "\(after)")
        let table = try botsi(["runs", "--journal", workspace.journal], key: nil, in: workspace)
        let killedRow = table.stdout.split(separator: "\n").first { $0.hasPrefix("1 ") }
        #expect(
            killedRow?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(6).map(String.init)
                == ["-", "0", "0", "0", "0", "\(rows.count)"], "runs: \(table.stdout)")
    }

    /// A live run is counted from what the journal keeps as it goes (issue 21: `status` and `runs`
    /// answer at once): its attempts and rows are not read. A killed run's journal, its `attempts`
    /// and `items` tables dropped, its lock held by the test as a live run holds it: `status` and
    /// `runs` still count the run, its retries its attempts answered "retry" so far.
    @Test func aLiveRunIsCountedWithoutReadingItsAttemptsOrRows() throws {
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let rows = Pair.generate(12)
        let workspace = Workspace()
        let killed = try Child(failingRun(rows, workspace, failing), key: Simulator.defaultKey, in: workspace)
        let resent = eventually(timeout: 60) {
            guard let (requests, attempted) = try? attempts(1, workspace) else { return false }
            return attempted == rows.count && requests > attempted
        }
        killed.send(SIGKILL)
        _ = killed.wait(timeout: 30)
        try #require(resent, "no resend went out")
        let kept = try JournalTables.rows(
            workspace.journal,
            "SELECT sum(attempts), sum(CASE WHEN outcome = 8 THEN attempts ELSE 0 END) FROM run_attempts WHERE run_id = 1"
        )
        let (requests, answeredRetry) = (Int(kept.first?[0] ?? "") ?? -1, Int(kept.first?[1] ?? "") ?? -1)
        try SQLiteTool.execute(
            workspace.journal,
            """
            PRAGMA foreign_keys = OFF; DROP VIEW attempts_readable; DROP VIEW items_readable;
            DROP TABLE attempts; DROP TABLE items;
            """)
        let lock = open(workspace.journal, O_RDONLY)
        try #require(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0, "could not hold the journal's lock")
        defer { close(lock) }

        let status = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let object = try #require(ModelSequence.jsonObjects(status.stdout).first, "\(status.stdout)\(status.stderr)")
        #expect(object["liveness"] as? String == "running", "status: \(status.stdout)")
        #expect(object["requests"] as? Int == requests, "status: \(status.stdout)")
        #expect(object["retries"] as? Int == answeredRetry, "status: \(status.stdout)")
        let line = try runsLine(1, workspace)
        #expect(line["state"] as? String == "running", "\(line)")
        // Its rows by their status now (`run_counts`): pending, or in flight when the kill came.
        #expect((line["statuses"] as? [String: Int] ?? [:]).values.reduce(0, +) == rows.count, "\(line)")
        #expect(line["requests"] as? Int == requests, "\(line)")
        #expect(line["retries"] as? Int == answeredRetry, "\(line)")
    }

    /// A refresh takes up finished rows ahead of sending them; killed after a few replies, its line
    /// counts the rows it sent, not every row it took up (a stop gives the others back).
    @Test func aKilledSelectionRunCountsOnlyTheRowsItSent() throws {
        let workspace = Workspace()
        let fast = try startSimulator()
        defer { fast.stop() }
        let rows = Pair.generate(300)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, fast), key: Simulator.defaultKey, in: workspace)
        try #require(first.status == 0, "\(first.stderr)")
        let slow = try startSimulator { $0.latencyMilliseconds = 150 }
        defer { slow.stop() }
        let refresh = try Child(
            runArguments([], workspace, slow, ["--refresh-older-than", "0s", "--concurrency", "2"]),
            key: Simulator.defaultKey, in: workspace)
        let sent = eventually(timeout: 60) { slow.stats().requests >= 10 }
        refresh.send(SIGKILL)
        _ = refresh.wait(timeout: 30)
        try #require(sent, "the refresh sent nothing")
        let claimed =
            Int(
                try JournalTables.rows(workspace.journal, "SELECT count(*) FROM items WHERE last_run = 2")
                    .first?[0] ?? "") ?? 0
        let attempted = try attempts(2, workspace).rows
        #expect(attempted > 0 && claimed > attempted, "took up \(claimed), sent \(attempted): nothing to tell apart")

        let line = try runsLine(2, workspace)
        #expect(line["state"] as? String == "killed", "\(line)")
        let counted = (line["statuses"] as? [String: Int] ?? [:]).values.reduce(0, +)
        #expect(counted == attempted, "sent \(attempted), took up \(claimed): \(line)")
        // The first run's line keeps its own rows.
        let firstLine = try runsLine(1, workspace)
        #expect((firstLine["statuses"] as? [String: Int] ?? [:]).values.reduce(0, +) == rows.count, "\(firstLine)")
    }
}
