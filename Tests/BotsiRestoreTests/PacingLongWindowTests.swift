import BotsiAPI
import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

/// Apple states its limit per second but enforces it over an hour. Probing on one-second windows,
/// a process spends such a window's budget in its first seconds and the app's users are refused for
/// the rest of it. Here the window is 60 s (the hour, scaled down), the limit 50/s: before the
/// pacer knew long windows, the users saw 66–84% of their requests refused from the third window
/// on, and the job 3–5% of its own (0.02–1.2% and 0.01–0.26% since, seeds 1–8). Seeded; the seed is
/// in every failure.
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
            #expect(users <= 0.02, "\(replay): the users saw \(users * 100)% refused from the third window")
            let used = outcome.utilization(from: Self.settled)
            #expect(used >= 0.85, "\(replay): \(used) of the room the users leave, from the third window")
            let refused = outcome.refusedShare(from: Self.settled)
            #expect(refused <= 0.01, "\(replay): \(refused * 100)% of its requests refused from the third window")
        }
    }
}

/// A run on a journal whose last run found the long window starts at the pace it gave (the journal
/// carries it): from its first request, not from the third window. The first run here is the model's
/// own, beside the same users; the second runs on what it left, with another seed. Before a run
/// carried the window, the users saw 14–16% of their requests refused over the whole of such a run
/// (seeds 1–2), most of them in its first window.
@Suite struct PacingCarriedWindowTests {
    @Test(arguments: [RateLimiterKind.fixed, .sliding])
    func besideUsersTheFirstWindowIsPacedToo(_ kind: RateLimiterKind) throws {
        for seed in PacingSharingTests.seeds {
            var scenario = PacingLongWindowTests.scenario(kind, users: true, seed: seed)
            scenario.rowsPerProcess = 50 * 60 * 3
            let learned = PacingModel.run(scenario).processes[0].longWindow
            let carried = try #require(learned, "seed \(seed): the first run found no long window")
            scenario.pacing.carried = carried
            scenario.seed += 1000
            let outcome = PacingModel.run(scenario)
            let replay = "\(scenario), carrying \(carried) (replay: BOTSI_PACING_SEED=\(seed))"
            #expect(outcome.allEnded, "\(replay): not finished")
            let users = outcome.liveRefusedShare
            #expect(users <= 0.02, "\(replay): the users saw \(users * 100)% refused over the run")
            let used = outcome.utilization()
            #expect(used >= 0.85, "\(replay): \(used) of the room the users leave, over the run")
            let refused = outcome.refusedShare
            #expect(refused <= 0.01, "\(replay): \(refused * 100)% of its requests refused over the run")
        }
    }
}

extension PacingCarriedWindowTests {
    /// Night after night on one journal, alone: each run starts from what the last one left, and
    /// the pace must not drift down. Before a 429 backed off from the pace in force (it backed off
    /// from the last measure, below a probe that had grown past it, and only an opening measures
    /// again), each run handed the next 2–3% less: 0.89 of the limit by the sixth.
    @Test(arguments: [RateLimiterKind.fixed, .sliding])
    func aloneThePaceHoldsRunAfterRun(_ kind: RateLimiterKind) throws {
        for seed in PacingSharingTests.seeds {
            var scenario = PacingLongWindowTests.scenario(kind, users: false, seed: seed)
            var outcome = PacingModel.run(scenario)
            var paces: [Double] = []
            for _ in 0..<6 {
                let carried = try #require(outcome.processes[0].longWindow, "seed \(seed): no long window found")
                paces.append(carried.rate)
                scenario.pacing.carried = carried
                scenario.seed += 1000
                outcome = PacingModel.run(scenario)
            }
            let replay = "\(scenario), six runs on, carrying \(paces) (replay: BOTSI_PACING_SEED=\(seed))"
            #expect(outcome.allEnded, "\(replay): not finished")
            let used = outcome.utilization()
            #expect(used >= 0.95, "\(replay): \(used) of the limit over the sixth run")
        }
    }
}

/// The long-window rule on one controller, on a clock the test holds: what each opening sets.
@Suite struct LongWindowControllerTests {
    private static let refused = PacingSignal.tooManyRequests(retryAfter: 1)

    /// `count` replies evenly over [from, to), ticking as they come.
    private static func replies(
        _ controller: inout RateController, _ signal: PacingSignal = .accepted, count: Int, from: Double, to: Double
    ) {
        for index in 0..<count {
            let now = from + (to - from) * Double(index) / Double(count)
            controller.tick(now: now, paceLimited: true)
            controller.replied(signal, duration: 0.05, rateLimit: nil, now: now)
        }
    }

    @Test func aCarriedWindowPacesFromTheFirstRequestUntilAnOpeningSaysOtherwise() throws {
        var pacing = PacingConfiguration(concurrency: 32)
        pacing.carried = LongWindowPace(cycle: 10, rate: 40)
        var controller = RateController(pacing: pacing, tuning: pacing.tuning)
        let plateau = pacing.tuning.plateau
        #expect(controller.effectiveRate == 40 * plateau, "at the plateau under it before anything is sent")
        let carried = try #require(controller.longWindow)
        #expect(carried.cycle == 10 && abs(carried.rate - 40) < 1e-9 && !carried.seen, "\(carried)")
        // A monotonic clock is far from zero: the probe counts from the first instant seen, and
        // a second into a 10 s cycle it has added a millionth.
        Self.replies(&controller, count: 40, from: 100, to: 101)
        let paced = try #require(controller.effectiveRate)
        #expect(abs(paced - 40 * plateau) < 0.01, "\(paced)")
        // The window has less to give now: it closes for 5 s, and its opening sets the pace from
        // what it gave since the first request (40 over 6 s). The run started within a window,
        // so the time since its start is no cycle: the carried one stays.
        Self.replies(&controller, Self.refused, count: 50, from: 101, to: 106)
        let closed = try #require(controller.longWindow)
        #expect(!closed.seen, "carried, not seen yet")
        #expect(abs(closed.rate - 40) < 1e-9, "a closed window's trickle and steps back are not recorded: \(closed)")
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 106)
        let opened = try #require(controller.longWindow)
        #expect(opened.seen && opened.cycle == 10, "\(opened)")
        let found = try #require(controller.effectiveRate)
        #expect(abs(found - 40.0 / 6 * plateau) < 0.2, "\(found)")
        #expect(abs(opened.rate - found / plateau) < 1e-9, "the measure, recorded: \(opened)")
    }

    @Test func aServerThatStatesItsLimitOverridesACarriedWindow() throws {
        var pacing = PacingConfiguration(concurrency: 32)
        pacing.carried = LongWindowPace(cycle: 3_600, rate: 20)
        var controller = RateController(pacing: pacing, tuning: pacing.tuning)
        let fields = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 90, resetSeconds: 1)
        for step in 0..<100 {
            let now = 10 + Double(step) * 0.01
            controller.tick(now: now, paceLimited: true)
            controller.replied(.accepted, duration: 0.02, rateLimit: fields, now: now)
        }
        #expect(controller.longWindow == nil)
        let rate = try #require(controller.effectiveRate)
        #expect(rate > 90, "climbed to the stated cap, not held at the carried 20/s: \(rate)")
    }

    /// A request in flight as the window filled, accepted a moment after the first refusals, opens
    /// the window for an instant: the first long opening still counts all the window gave.
    @Test func aStragglerAfterTheFirstRefusalsDoesNotHideWhatTheWindowGave() throws {
        let pacing = PacingConfiguration(concurrency: 32)
        var controller = RateController(pacing: pacing, tuning: pacing.tuning)
        Self.replies(&controller, count: 200, from: 0, to: 2)
        Self.replies(&controller, Self.refused, count: 20, from: 2, to: 2.5)
        // Sent at 1.9 s, before the first refusal: in flight while the window filled.
        controller.replied(.accepted, duration: 0.6, rateLimit: nil, now: 2.5)
        Self.replies(&controller, Self.refused, count: 100, from: 2.55, to: 19)
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 19)
        let found = try #require(controller.effectiveRate)
        #expect(abs(found - 201.0 / 19 * pacing.tuning.plateau) < 0.01, "201 over the 19 s since the first: \(found)")
        #expect(controller.longWindow?.cycle == 19)
    }

    @Test func eachOpeningSpreadsWhatTheWindowGaveOverTheTimeItWasCounted() throws {
        let pacing = PacingConfiguration(concurrency: 32)
        var controller = RateController(pacing: pacing, tuning: pacing.tuning)
        let plateau = pacing.tuning.plateau
        // 200 accepted in the first 2 s, then a window closed for 5 s: a long one.
        Self.replies(&controller, count: 200, from: 0, to: 2)
        Self.replies(&controller, Self.refused, count: 100, from: 2, to: 7)
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 7)
        let found = try #require(controller.effectiveRate)
        #expect(abs(found - 200.0 / 7 * plateau) < 0.01, "the window's 200 over its 7 s cycle: \(found)")
        // Open again for 2 s, then closed for a second: a short closure 3 s after the long
        // opening, less than half a cycle, measures nothing (a sliding log reopening a few slots
        // at a time after the climb): the pace stays, one `backoff` step under it.
        Self.replies(&controller, count: 56, from: 7.05, to: 9)
        Self.replies(&controller, Self.refused, count: 20, from: 9, to: 10)
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 10)
        let short = try #require(controller.effectiveRate)
        #expect(abs(short - found * pacing.tuning.backoff * plateau) < 0.01, "one step back: \(short)")
        // Then a long closure more than half a cycle after the long opening: the cycle is
        // measured again, opening to opening (10.5 s), and all it gave since (96) is the pace.
        Self.replies(&controller, count: 38, from: 10.05, to: 12)
        Self.replies(&controller, Self.refused, count: 55, from: 12, to: 17.5)
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 17.5)
        let remeasured = try #require(controller.effectiveRate)
        #expect(abs(remeasured - 96.0 / 10.5 * plateau) < 0.01, "96 over the 10.5 s cycle: \(remeasured)")
        // A short closure a whole cycle into what is kept counts what the window gave over the
        // last cycle (the 61 since 12.5 s, this one not included) over it.
        Self.replies(&controller, count: 60, from: 17.55, to: 22)
        Self.replies(&controller, Self.refused, count: 20, from: 22, to: 23)
        controller.replied(.accepted, duration: 0.05, rateLimit: nil, now: 23)
        let trailing = try #require(controller.effectiveRate)
        #expect(abs(trailing - 61.0 / 10.5 * plateau) < 0.05, "61 over the last 10.5 s: \(trailing)")
    }
}
