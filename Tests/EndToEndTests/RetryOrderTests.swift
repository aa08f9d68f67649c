import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A row whose backoff is over is sent again before the rows read ahead and not yet sent: behind
/// a read-ahead of a thousand rows at 50/s a retry went out 20 s after its backoff, and a night
/// that ended on its time window retried nothing (an operator review: "0 retries", 192 rows left
/// with a 500).
@Suite("retries after their backoff")
struct RetryOrderTests {
    @Test func aRetryGoesOutSoonAfterItsBackoffNotAfterTheRowsReadAhead() throws {
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.faultRate = 0.2
            $0.faults = [.internalError]
        }
        defer { simulator.stop() }
        // 300 rows at 60/s: a first pass of 5 s, every row read ahead at once.
        let run = try botsi(
            runArguments([workspace.csv(Pair.generate(300))], workspace, simulator, ["--rate", "60"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        // From each failed attempt's end to the next attempt of its row (backoff at most 0.05 s).
        let gaps = try JournalTables.rows(
            workspace.journal,
            """
            SELECT a.started_at + a.duration_us / 1000, b.started_at FROM attempts a
            JOIN attempts b ON b.item_id = a.item_id AND b.number = a.number + 1
            """
        ).map { (Int($0[1] ?? "") ?? 0) - (Int($0[0] ?? "") ?? 0) }
        #expect(gaps.count >= 20, "too few retries to tell: \(gaps.count)")
        #expect((gaps.max() ?? 0) < 1_500, "a retry waited \(gaps.max() ?? 0) ms after its failure")
    }
}
