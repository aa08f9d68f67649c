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
        // 300 rows at 60/s: a first pass of 5 s, every row read ahead at once. Up to 20 attempts: at
        // the default 6, one row in 300 failing six times in a row ends the run 75 about one run in 50.
        let run = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(300))], workspace, simulator, ["--rate", "60", "--max-attempts", "20"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        // Between a failed attempt's reply and its retry's reply, the first attempts of other rows
        // answered: the rows already on the wire, marked or queued when the backoff ended (8 + 4 + 1
        // at the default concurrency), not the 250 and more read ahead. Counted in the journal's
        // order, not in milliseconds, so that a machine too busy to keep 60/s does not fail it
        // (a CI machine once took 4 s over one retry).
        let passedBy = try Self.firstAttemptsBetweenAnAttemptAndItsRetry(workspace.journal)
        #expect(passedBy.count >= 20, "too few retries to tell: \(passedBy.count)")
        #expect((passedBy.max() ?? 0) < 50, "a retry waited behind \(passedBy.max() ?? 0) rows sent for the first time")
    }

    /// A row the limit refused (429, or 503 from an overloaded service) is no failure of its own:
    /// it waits its turn again behind the rows read ahead, which the slower pace sends first.
    @Test(arguments: [SimulatorFault.tooManyRequests, .unavailable])
    func aRowTheLimitRefusedWaitsItsTurnAgain(fault: SimulatorFault) throws {
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.faultRate = 0.05
            $0.faults = [fault]
            $0.retryAfterSeconds = 0
        }
        defer { simulator.stop() }
        let run = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(300))], workspace, simulator, ["--rate", "100", "--max-attempts", "20"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let passedBy = try Self.firstAttemptsBetweenAnAttemptAndItsRetry(workspace.journal)
        #expect(!passedBy.isEmpty, "no row was refused")
        #expect((passedBy.max() ?? 0) >= 100, "\(fault.rawValue): a refused row went ahead; passed by \(passedBy)")
    }

    /// For each retry, how many rows were sent for the first time between it and the attempt before.
    static func firstAttemptsBetweenAnAttemptAndItsRetry(_ journal: String) throws -> [Int] {
        try JournalTables.rows(
            journal,
            """
            SELECT (SELECT count(*) FROM attempts c WHERE c.id > a.id AND c.id < b.id AND c.number = 1)
            FROM attempts a JOIN attempts b ON b.item_id = a.item_id AND b.number = a.number + 1
            """
        ).map { Int($0[0] ?? "") ?? 0 }
    }
}
