import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// The real binary against a limiter that states itself: with rate-limit fields the run paces by
/// them from its first reply and draws (almost) no 429; without them it finds the limit by probing,
/// which the start's overshoot costs a few 429s more. Loose bounds: the machines are shared.
@Suite(.serialized) struct RateLimitHeaderPacingTests {
    func refusals(headers: RateLimitHeaderStyle?, rows: Int) throws -> (refused: Int, status: Int32) {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.limitRate = 50
            options.latencyMilliseconds = 20
            options.rateLimitHeaders = headers
        }
        defer { simulator.stop() }
        let input = workspace.csv((0..<rows).map { Pair("rl-\($0)", String(2_000_000_000_000_002 + $0 * 10)) })
        let finished = try botsi(
            runArguments([input], workspace, simulator, ["--concurrency", "32", "--max-attempts", "20", "--quiet"]),
            key: Simulator.defaultKey, in: workspace)
        return (simulator.stats().rateLimited, finished.status)
    }

    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["BOTSI_UNDER_SANITIZER"] == nil, "timing under a sanitizer"),
        arguments: RateLimitHeaderStyle.allCases)
    func statedLimitsArePacedByWithoutProbing(style: RateLimitHeaderStyle) throws {
        let paced = try refusals(headers: style, rows: 150)
        #expect(paced.status == 0)
        #expect(paced.refused <= 3, "\(style): \(paced.refused) requests drew 429")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["BOTSI_UNDER_SANITIZER"] == nil, "timing under a sanitizer"))
    func withoutStatedLimitsTheFirstBurstDraws429s() throws {
        let probed = try refusals(headers: nil, rows: 150)
        #expect(probed.status == 0)
        // More than the stated run's bound: the same limiter does refuse a run that must find it (7
        // here since the start counts its first window over a whole second; at least 10 before).
        #expect(probed.refused > 3, "the start's climb overruns a 50/s window: \(probed.refused)")
    }
}
