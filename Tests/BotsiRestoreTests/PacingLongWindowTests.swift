import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

/// Apple states its limit per second but enforces it over an hour. Probing on one-second windows,
/// a process spends such a window's budget in its first seconds and the app's users are refused for
/// the rest of it. Here the window is 60 s (the hour, scaled down), the limit 50/s: before the
/// pacer knew long windows, the users saw 66–84% of their requests refused from the third window
/// on, and the job 3–5% of its own. Seeded; the seed is in every failure.
@Suite struct PacingLongWindowTests {
    /// From the third window on: the first window is spent before anything can show how long it
    /// is, and the second is the first one paced.
    static let settled = 180.0

    static func scenario(_ kind: RateLimiterKind, users: Bool, seed: UInt64) -> PacingScenario {
        var scenario = PacingScenario()
        scenario.kind = kind
        scenario.seed = seed
        scenario.limit = 50
        scenario.window = 60
        scenario.rowsPerProcess = 50 * 60 * 6
        scenario.giveUpAt = 60 * 12
        if users {
            scenario.liveRate = 15
            scenario.livePoisson = true
        }
        return scenario
    }

    @Test(arguments: [RateLimiterKind.fixed, .sliding])
    func aloneTheWindowLastsItsLength(_ kind: RateLimiterKind) {
        for seed in PacingSharingTests.seeds {
            let scenario = Self.scenario(kind, users: false, seed: seed)
            let outcome = PacingModel.run(scenario)
            let replay = "\(scenario) (replay: BOTSI_PACING_SEED=\(seed))"
            #expect(outcome.allEnded, "\(replay): not finished")
            let used = outcome.utilization(from: Self.settled)
            #expect(used >= 0.95, "\(replay): \(used) of the limit from the third window")
            let refused = outcome.refusedShare(from: Self.settled)
            #expect(refused <= 0.01, "\(replay): \(refused * 100)% of its requests refused from the third window")
        }
    }

    @Test(arguments: [RateLimiterKind.fixed, .sliding])
    func besideUsersTheyKeepTheirShare(_ kind: RateLimiterKind) {
        for seed in PacingSharingTests.seeds {
            let scenario = Self.scenario(kind, users: true, seed: seed)
            let outcome = PacingModel.run(scenario)
            let replay = "\(scenario) (replay: BOTSI_PACING_SEED=\(seed))"
            #expect(outcome.allEnded, "\(replay): not finished")
            let users = outcome.liveRefusedShare(from: Self.settled)
            #expect(users <= 0.01, "\(replay): the users saw \(users * 100)% refused from the third window")
            let used = outcome.utilization(from: Self.settled)
            #expect(used >= 0.85, "\(replay): \(used) of the room the users leave, from the third window")
            let refused = outcome.refusedShare(from: Self.settled)
            #expect(refused <= 0.01, "\(replay): \(refused * 100)% of its requests refused from the third window")
        }
    }
}
