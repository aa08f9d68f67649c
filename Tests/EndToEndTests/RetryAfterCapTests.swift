import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("Retry-After beyond the cap")
struct RetryAfterCapTests {
    /// Apple states Retry-After as a UNIX time in milliseconds; here one in the year 2100. The run
    /// waits --retry-after-cap (0.05 s in runArguments) instead, and says so once, not once per reply.
    @Test func aRetryAfterBeyondTheCapIsCappedAndSaidOncePerRun() throws {
        let workspace = Workspace()
        typealias Reply = SimulatorScenario.FixedReply
        let simulator = try startSimulator { options in
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: (0..<3).map {
                    Reply(
                        originalTransactionId: "200000000000010\($0)", status: 429, code: "rate_limited",
                        message: "slow down", retryAfterSeconds: 4_102_444_800_000)
                }, forbiddenKeys: [])
        }
        defer { simulator.stop() }
        let input = workspace.csv((0..<3).map { Pair("cap-\($0)", "200000000000010\($0)") })
        let started = Date()
        let finished = try botsi(
            runArguments([input], workspace, simulator, ["--max-attempts", "3", "--no-adaptive"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 75, "the rows stay pending: stderr: \(finished.stderr)")
        #expect(Date().timeIntervalSince(started) < 30)
        let notices = finished.stderr.components(separatedBy: "(Retry-After), more than --retry-after-cap 0.05 s")
        #expect(notices.count == 2, "said exactly once: \(finished.stderr)")
        #expect(finished.stderr.contains("waiting 0.05 s instead"))
        #expect(simulator.requestsByPair().values.reduce(0, +) == 9, "every row was retried up to --max-attempts")
    }
}
