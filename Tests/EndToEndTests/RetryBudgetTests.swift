import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// The run-wide retry budget (500 tokens, 5 a retry) against a service that refuses some rows with
/// 429 every time. Adaptive throttling answers a 429 by slowing down, so such a retry costs no
/// budget (`RunRoleTests.a429AnsweredBySlowingDownCostsNoBudget`); the same run with adaptive
/// throttling is not run here: it slows to about a request a second against constant 429s (89
/// requests in 90 s), so it would take minutes to make the retries that drain the budget.
@Suite("the retry budget and 429 replies")
struct RetryBudgetTests {
    /// 40 rows refused with 429 on every attempt, 4 attempts each: 120 retries, 600 tokens if each
    /// paid 5, more than the budget holds. Returns the run, the requests the service counted and the
    /// rows the journal says ended on an exhausted budget.
    func refusedEveryTime(_ extra: [String]) throws -> (finished: Finished, requests: Int, exhausted: Int) {
        let workspace = Workspace()
        let ids = (0..<40).map { String(2_000_000_000_000_000 + $0 * 10 + 1) }
        let simulator = try startSimulator { options in
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: ids.map {
                    SimulatorScenario.FixedReply(
                        originalTransactionId: $0, status: 429, code: "rate_limited", message: "slow down")
                }, forbiddenKeys: [])
        }
        defer { simulator.stop() }
        let input = workspace.csv(ids.enumerated().map { Pair("budget-\($0.offset)", $0.element) })
        let finished = try botsi(
            runArguments([input], workspace, simulator, ["--max-attempts", "4"] + extra), key: Simulator.defaultKey,
            in: workspace)
        let exhausted = try JournalTables.rows(
            workspace.journal, "SELECT count(*) FROM items WHERE message LIKE 'retry budget exhausted%'")
        return (
            finished, simulator.requestsByPair().values.reduce(0, +),
            Int(exhausted.first?.first.flatMap { $0 } ?? "") ?? -1
        )
    }

    /// Without adaptive throttling the refusals are retries like any other: they pay, and the
    /// budget runs out (what a run with it would show if a 429 were charged).
    @Test func a429RetriedWithoutAdaptiveThrottlingPaysFromTheBudget() throws {
        let run = try refusedEveryTime(["--no-adaptive"])
        #expect(run.finished.status == 75, "the rows stay pending: \(run.finished.stderr)")
        #expect(run.requests < 160, "the budget stopped the retries: \(run.finished.stderr)")
        #expect(run.exhausted > 0, "no row ended on an exhausted budget: \(run.finished.stderr)")
        #expect(run.finished.stderr.contains("retry budget ran out"), "stderr: \(run.finished.stderr)")
    }
}
