import BotsiAPI
import Foundation
import Testing

@testable import BotsiRestore

/// Each reaction of the controller alone, on a clock the test holds (docs/pacing.md describes them;
/// the model test puts N of them on one limiter).
@Suite struct RateControllerTests {
    typealias Controller = RateController
    static let tuning = RateController.Tuning()

    static func controller(
        concurrency: Int = 32, rateCap: Double? = nil, adaptive: Bool = true, headroom: Double = 0,
        startRate: Double = 10, startStopsForOthers: Bool = true
    ) -> Controller {
        var pacing = PacingConfiguration(
            concurrency: concurrency, rateCap: rateCap, adaptive: adaptive, headroom: headroom)
        pacing.tuning.startRate = startRate
        if !startStopsForOthers { pacing.tuning.othersSteadyShare = .infinity }
        return Controller(pacing: pacing, tuning: pacing.tuning)
    }

    /// `count` replies evenly spread over [from, to), each taking `latency`.
    static func replies(
        _ controller: inout Controller, _ signal: PacingSignal = .accepted, count: Int, from: Double, to: Double,
        latency: Double = 0.05, rateLimit: RateLimitInfo? = nil
    ) {
        for index in 0..<count {
            let now = from + (to - from) * Double(index) / Double(count)
            controller.replied(signal, duration: latency, rateLimit: rateLimit, now: now)
        }
    }

    /// Ticks four times a second over [from, to], the rate in use throughout.
    static func ticks(_ controller: inout Controller, from: Double, to: Double, inUse: Bool = true) {
        var now = from
        while now <= to + 1e-9 {
            controller.tick(now: now, paceLimited: inUse)
            now += 0.25
        }
    }

    static let refused = PacingSignal.tooManyRequests(retryAfter: 1)

    static func close(_ value: Double?, _ expected: Double, within tolerance: Double = 1e-9) -> Bool {
        value.map { abs($0 - expected) <= tolerance } ?? false
    }

    @Test func theStartIsPacedAndClimbsByItsGrowthASecondOnlyWhileTheRateIsInUse() {
        var controller = Self.controller()
        let growth = Self.tuning.startGrowth
        #expect(controller.effectiveRate == 10)
        #expect(!controller.isThrottled, "climbing is not being throttled")
        Self.ticks(&controller, from: 0, to: 1)
        #expect(Self.close(controller.effectiveRate, 10 * growth, within: 1e-6))
        Self.ticks(&controller, from: 1.25, to: 3, inUse: false)
        #expect(Self.close(controller.effectiveRate, 10 * growth, within: 1e-6), "a rate not in use does not grow")
        let capped = Self.controller(rateCap: 4)
        #expect(capped.effectiveRate == 4, "--rate caps the start too")
        let off = Self.controller(adaptive: false)
        #expect(off.effectiveRate == nil, "--no-adaptive: unpaced")
    }

    @Test func theClimbsFirst429SendsWhatWasSentAWindowBeforeAndClimbsBackToWhatTheWindowTook() {
        var controller = Self.controller()
        Self.ticks(&controller, from: 0, to: 1)
        Self.replies(&controller, count: 100, from: 0.5, to: 1.5)
        // The replies climb it too, to 10 × G^1.49 by the last one, 10 × G^1.5 at the 429.
        let growth = Self.tuning.startGrowth
        #expect(Self.close(controller.effectiveRate, 10 * pow(growth, 1.49), within: 1e-6))
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1.5)
        let expected = 10 * pow(growth, 1.5) / pow(growth, 0.05) / growth
        #expect(
            Self.close(controller.effectiveRate, expected, within: 1e-6), "\(controller.effectiveRate!) vs \(expected)")
        #expect(controller.isThrottled)
        #expect(controller.summary.throttleEvents == 1)
        // Back up at the climb's pace to 0.99 of what the window took (100 in the last second).
        Self.ticks(&controller, from: 1.75, to: 2.5)
        #expect(Self.close(controller.effectiveRate, 99, within: 1), "\(controller.effectiveRate!)")
    }

    @Test func a429ToARequestSentBeforeTheCutIsItsEchoAndAnotherWithinAWindowIsTheSameOvershoot() {
        var controller = Self.rewoundAtOne()
        let cut = controller.effectiveRate
        #expect(controller.summary.throttleEvents == 1)
        controller.replied(Self.refused, duration: 0.2, rateLimit: nil, now: 1.1)
        #expect(controller.effectiveRate == cut, "sent at 0.9, before the cut: its echo")
        for step in 1...3 {
            controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 1 + Double(step) * 0.05)
        }
        Self.replies(&controller, count: 20, from: 1.2, to: 1.8, latency: 0.01)
        #expect(controller.effectiveRate == cut, "3 of 23 since the cut, within the window: the same overshoot")
        #expect(controller.summary.throttleEvents == 1)
    }

    @Test func anEpisodeCutsToJustUnderWhatTheLimiterAcceptedThenRecoversAndProbes() {
        var controller = Self.rewoundAtOne()  // the start's rewind
        Self.ticks(&controller, from: 1.25, to: 3)
        Self.replies(&controller, count: 210, from: 1, to: 3.1)
        // 100 accepted a second, a 429 past the holdoff: an episode.
        let before = controller.effectiveRate!
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 3.1)
        let accepted = 100.0
        let cut = min(before, accepted) * Self.tuning.backoff
        #expect(Self.close(controller.effectiveRate, cut, within: 1.5), "\(controller.effectiveRate!) vs \(cut)")
        #expect(controller.summary.throttleEvents == 2)
        // Recovery: most of the way back to 0.99 × ceiling within a second.
        Self.ticks(&controller, from: 3.25, to: 4.25)
        let recovered = controller.effectiveRate!
        #expect(recovered > cut && recovered <= accepted * Self.tuning.plateau + 1e-9, "\(recovered)")
        // Then a probe above it: slow at first, faster the longer nothing refuses.
        Self.ticks(&controller, from: 4.5, to: 6.5)
        let early = controller.effectiveRate!
        Self.ticks(&controller, from: 6.75, to: 10.5)
        let late = controller.effectiveRate!
        #expect(early > accepted * Self.tuning.plateau && early < accepted * 1.03, "\(early)")
        #expect(late > accepted * 1.08, "\(late)")
    }

    /// Eight processes starting together on a 100/s log each had 12 of the first window's quota
    /// accepted within half a second; counted over that half-second, 24/s each, they climbed back to
    /// 190/s together and closed the window. Less than a second in, the count is over the window.
    @Test func aClimbLessThanASecondOldTakesWhatItsFirstWindowAcceptedAsItsCeiling() {
        var controller = Self.controller()
        Self.ticks(&controller, from: 0, to: 0.5)
        Self.replies(&controller, count: 20, from: 0.1, to: 0.6)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 0.6)
        Self.ticks(&controller, from: 0.75, to: 3)
        let plateau = 20 * Self.tuning.plateau
        #expect(
            Self.close(controller.effectiveRate, plateau, within: 0.5), "\(controller.effectiveRate!) vs \(plateau)")
    }

    /// A process that episodes cut far below what its start found (to a fifth here) probes back on
    /// half the start's scale, not its own: on its own, a process cut low by bad luck stayed low
    /// beside others that were not (8 processes on a bucket: one at 4/s beside 15/s for 30 s).
    @Test func aProcessCutFarBelowItsStartProbesOnHalfTheStartsScale() {
        var controller = Self.rewoundAtOne()  // the start: 100/s
        var now = 1.0
        for _ in 0..<3 {
            // 20 a second accepted, then a 429: each episode cuts, by at most half, toward 20/s.
            Self.ticks(&controller, from: now + 0.25, to: now + 2)
            Self.replies(&controller, count: 40, from: now, to: now + 2)
            now += 2
            controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: now)
        }
        let plateau = 20 * Self.tuning.plateau
        #expect(Self.close(controller.effectiveRate, plateau * Self.tuning.backoff, within: 0.5))
        Self.ticks(&controller, from: now + 0.25, to: now + 5.5)
        // Probing from about 0.5 s after the cut: + scale × probe × t³ with t ≈ 5.
        let startScale = 100 * Self.tuning.plateau * Self.tuning.probeScale
        let grown = controller.effectiveRate! - plateau
        #expect(grown >= 0.8 * startScale * Self.tuning.probe * 125, "\(grown) on its own scale, not the start's")
    }

    /// A shard that starts into a window the others fill finds a ceiling of 1/s: its first reply is
    /// refused, and nothing is accepted. It probes on the start rate's scale, not on 1/s, which left
    /// it at 0.10 of the others' share after 10 s.
    @Test func aStartRefusedFirstProbesOnTheStartRatesScale() {
        var controller = Self.controller()
        controller.tick(now: 0, paceLimited: true)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 0.05)
        Self.ticks(&controller, from: 0.25, to: 6)
        let floor = Self.tuning.plateau
        let scale = 10 * Self.tuning.plateau * Self.tuning.probeScale
        let grown = controller.effectiveRate! - floor
        #expect(grown >= 0.6 * scale * Self.tuning.probe * 125, "\(grown): on 1/s's scale, not the start rate's")
    }

    /// A service that refuses one request in 150 whatever the pace, 100 replies a second: each such
    /// 429 cut the rate once (the ratchet that took a run with no limit down to ~86/s). Once ten
    /// refusals came at or under the ceiling, they are the background: lone 429s cut no more and the
    /// rate probes up again, while a burst of refusals still cuts.
    @Test func scatteredRefusalsUnderTheCeilingAreBackgroundNotALimit() {
        var service = ScatteredRefusals()
        service.advance(to: 1, refusingEvery: nil)
        service.controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)  // the start's rewind
        service.advance(to: 30, refusingEvery: 150)
        let settled = service.controller.summary.throttleEvents
        #expect(settled > 1 && settled <= 12, "each lone 429 cut until the background showed: \(settled)")
        let rateThen = service.controller.effectiveRate!
        service.advance(to: 45, refusingEvery: 150)
        #expect(service.controller.summary.throttleEvents == settled, "15 s more of lone 429s cut nothing")
        #expect(
            service.controller.effectiveRate! > rateThen * 1.2,
            "and the rate probes up: \(service.controller.effectiveRate!)")
        service.advance(to: 46, refusingEvery: 4)
        #expect(service.controller.summary.throttleEvents == settled + 1, "a quarter refused in a second is a limit")
    }

    /// A service answering 100 replies a second, 25 each quarter second, whatever the rate, every
    /// `refusingEvery`-th of them a 429: refusals that are not a limit.
    struct ScatteredRefusals {
        var controller = RateControllerTests.controller(startRate: 100)
        var now = 0.0
        var sent = 0

        mutating func advance(to end: Double, refusingEvery: Int?) {
            while now < end - 1e-9 {
                controller.tick(now: now, paceLimited: true)
                for index in 0..<25 {
                    sent += 1
                    let refused = refusingEvery.map { sent % $0 == 0 } ?? false
                    controller.replied(
                        refused ? RateControllerTests.refused : .accepted, duration: 0.05, rateLimit: nil,
                        now: now + 0.01 * Double(index))
                }
                now += 0.25
            }
        }
    }

    /// The first reply a 429, nothing accepted yet (the lifecycle model's 24% faults, seed 38): the
    /// climb's ceiling was zero and the rate sat at 0.18/s for the rest of the run.
    @Test func aFirstReplyRefusedDoesNotHoldTheRateNearZero() {
        var controller = Self.controller()
        controller.tick(now: 0, paceLimited: true)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 0.05)
        Self.ticks(&controller, from: 0.25, to: 3)
        #expect(controller.effectiveRate! >= 0.99 * 0.99, "\(controller.effectiveRate!)")
        Self.ticks(&controller, from: 3.25, to: 30)
        #expect(controller.effectiveRate! > 10, "and it probes up from there: \(controller.effectiveRate!)")
    }

    /// A service refusing a large share at random halved the rate at every episode, through the
    /// floor of a cut (the recovery drifts to the ceiling): 0.3/s in the lifecycle model's seed 189.
    @Test func episodesAfterEpisodesLeaveTheRateAtLeastOneASecond() {
        var controller = Self.rewoundAtOne()  // the start's rewind
        var now = 1.0
        for _ in 0..<30 {
            now += 1.1
            controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: now)
            Self.ticks(&controller, from: now + 0.25, to: now + 1)
        }
        #expect(controller.summary.throttleEvents >= 5, "the episodes were cut for")
        #expect(controller.effectiveRate! >= 0.99 * 0.99, "\(controller.effectiveRate!)")
    }

    @Test func aClosedWindowIsProbedAtATrickleUntilItAcceptsAgain() {
        var controller = Self.rewoundAtOne()
        let cut = controller.effectiveRate!
        Self.replies(&controller, Self.refused, count: 5, from: 1.1, to: 1.2, latency: 0.01)
        // During the start's replay the trickle is a share of the start's ceiling (100/s accepted),
        // not of the replay's low rate, which found the opening up to half a second late.
        #expect(Self.close(controller.effectiveRate, 100 * Self.tuning.trickle), "all of 5 refused since the cut")
        controller.replied(.accepted, duration: 0.01, rateLimit: nil, now: 1.3)
        #expect(controller.effectiveRate == cut, "open again: back to the rate")
    }

    /// A start at 100/s whose climb the limiter took 100 of in its first second, refused at 1.0:
    /// rewound, and climbing back to 99.
    static func rewoundAtOne() -> Controller {
        var controller = Self.controller(startRate: 100)
        Self.replies(&controller, count: 100, from: 0, to: 1)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        return controller
    }

    /// A start overshoots at 1.0, its window closes and is trickled; a request refused reaching the
    /// service at 1.945 and one accepted at 2.055 show it opening at 2.0.
    static func reopenedAtTwo() -> Controller {
        var controller = Self.rewoundAtOne()
        Self.replies(&controller, Self.refused, count: 5, from: 1.1, to: 1.2, latency: 0.01)
        controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 1.95)
        controller.replied(.accepted, duration: 0.01, rateLimit: nil, now: 2.06)
        return controller
    }

    /// A fixed window opens at the same moment of every window: once a trickle has seen it open, a
    /// cut counts what the window gave since its edge, not a second that holds the end of the
    /// window before too (which read 131/s on a 100/s window).
    @Test func aCutAfterAClosedWindowOpenedCountsWhatTheWindowGaveSinceItsEdge() {
        var controller = Self.reopenedAtTwo()
        Self.ticks(&controller, from: 2.25, to: 4.5)
        // The windows of [2, 3) and [3, 4) give 100, the third 60 by 4.6 and then refuses: the cut
        // the real binary's start makes, about 2.4 s after the opening.
        Self.replies(&controller, count: 99, from: 2.1, to: 3, latency: 0.01)
        Self.replies(&controller, count: 100, from: 3.005, to: 4, latency: 0.01)
        Self.replies(&controller, count: 60, from: 4.01, to: 4.6, latency: 0.01)
        let before = controller.effectiveRate!
        controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 4.6)
        // The last second's count and the last two seconds' both read 100/s; since the edge at 4.0: 60.
        let expected = max(60, before * 0.5) * Self.tuning.backoff
        let cut = controller.effectiveRate!
        #expect(Self.close(cut, expected, within: 1), "\(cut) vs \(expected)")
    }

    /// Where the edge is dated its count is the measure, not the lowest of it and the longer ones:
    /// two seconds that reach back into the time the window was closed read half of what it gives
    /// (the real binary's start was cut to 85/s on a 100/s window and took five seconds to return).
    @Test func aCutSoonAfterAClosedWindowOpenedIsNotLoweredByTheClosedTime() {
        var controller = Self.reopenedAtTwo()
        Self.ticks(&controller, from: 2.25, to: 2.75)
        // The window of [2, 3) gives 95 by 2.96 and refuses; the last two seconds read about 50/s.
        Self.replies(&controller, count: 94, from: 2.1, to: 2.95, latency: 0.01)
        let before = controller.effectiveRate!
        controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 2.96)
        let expected = min(before, 95) * Self.tuning.backoff
        let cut = controller.effectiveRate!
        #expect(Self.close(cut, expected, within: 1), "\(cut) vs \(expected)")
    }

    /// A stated window may be an hour long, and two of them of admissions were millions of instants
    /// at a bulk API's pace: under a stated limit none are kept (its remaining count says more).
    @Test func admissionsAreKeptForTwoWindowsAndNotUnderAStatedLimit() {
        var probing = Self.controller(startRate: 100)
        Self.replies(&probing, count: 3000, from: 0, to: 3, latency: 0.01)
        #expect(probing.keptAdmissions == 2000, "the last two one-second windows' admissions")
        var stated = Self.controller(startRate: 100)
        let hourly = RateLimitInfo(quota: 3_600_000, windowSeconds: 3600, remaining: 3_000_000, resetSeconds: 1800)
        Self.replies(&stated, count: 3000, from: 0, to: 3, latency: 0.01, rateLimit: hourly)
        #expect(stated.keptAdmissions <= 1, "the first reply's, before its fields were read")
    }

    @Test func aCutTooSmallForWhatTheWindowRefusesIsCutAgain() {
        var controller = Self.rewoundAtOne()
        let cut = controller.effectiveRate!
        // Half of what was sent since the cut refused, 12 of 24: it takes half the rate.
        for step in 0..<24 {
            controller.replied(
                step % 2 == 0 ? Self.refused : .accepted, duration: 0.01, rateLimit: nil, now: 1.1 + Double(step) * 0.01
            )
        }
        let expected = cut * 0.5 * Self.tuning.plateau
        #expect(Self.close(controller.effectiveRate, expected, within: cut * 0.05), "\(controller.effectiveRate!)")
    }

    /// The pace in force is the lowest of the controller's rate, the stated limit's share and
    /// `--rate`, whichever of them are set.
    @Test func theEffectiveRateIsTheLowestOfTheRateTheStatedLimitAndTheCap() {
        let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 60, resetSeconds: 1)
        for (cap, startRate, expected) in [(50.0, 1000.0, 50.0), (200, 1000, 99), (200, 30, 30), (20, 30, 20)] {
            var controller = Self.controller(rateCap: cap, startRate: startRate)
            controller.replied(.accepted, duration: 0.05, rateLimit: info, now: 0.1)
            #expect(Self.close(controller.effectiveRate, expected), "cap \(cap), start \(startRate)")
        }
        var uncapped = Self.controller(startRate: 30)
        #expect(Self.close(uncapped.effectiveRate, 30), "the rate alone")
        uncapped.replied(.accepted, duration: 0.05, rateLimit: info, now: 0.1)
        #expect(Self.close(uncapped.effectiveRate, 30), "below the stated limit's share")
        #expect(Self.controller(rateCap: 7, adaptive: false).effectiveRate == 7, "--rate alone, unpaced otherwise")
    }

    @Test func aStatedLimitCapsThePaceAndAWindowNearlyUsedUpIsAnEpisodeBeforeAnythingIsRefused() {
        var controller = Self.controller(startRate: 1000)
        let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 60, resetSeconds: 1)
        controller.replied(.accepted, duration: 0.05, rateLimit: info, now: 0.1)
        #expect(Self.close(controller.effectiveRate, 99), "0.99 of the stated 100/s")
        #expect(controller.summary.throttleEvents == 0)
        let nearlyGone = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 2, resetSeconds: 1)
        controller.replied(.accepted, duration: 0.05, rateLimit: nearlyGone, now: 0.2)
        #expect(controller.summary.throttleEvents == 1, "2 of 100 left: an episode")
        #expect(controller.effectiveRate! < 99)
        var withHeadroom = Self.controller(headroom: 0.2, startRate: 1000)
        withHeadroom.replied(.accepted, duration: 0.05, rateLimit: info, now: 0.1)
        #expect(Self.close(withHeadroom.effectiveRate, 99 * 0.8), "--headroom 20% of a stated limit")
        let leftForOthers = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 19, resetSeconds: 1)
        withHeadroom.replied(.accepted, duration: 0.05, rateLimit: leftForOthers, now: 0.2)
        #expect(withHeadroom.summary.throttleEvents == 1, "stops short of what remains by the headroom")
        var off = Self.controller(adaptive: false)
        off.replied(.accepted, duration: 0.05, rateLimit: info, now: 0.1)
        #expect(off.effectiveRate == nil, "--no-adaptive ignores them")
    }

    @Test func aWindowNearlyUsedUpByThisProcessAloneIsTheCapsWorkNotAnEpisode() {
        var alone = Self.controller(startRate: 1000)
        for index in 0..<98 {
            // What remains is what its own requests over the last second left.
            let left = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 99 - index, resetSeconds: 1)
            alone.replied(.accepted, duration: 0.05, rateLimit: left, now: 1 + Double(index) / 98)
        }
        #expect(alone.summary.throttleEvents == 0, "98 of the window's 99 are its own: at 0.99 it runs that low")
        #expect(Self.close(alone.effectiveRate, 99))
        var beside = Self.controller(startRate: 1000)
        let nearlyGone = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 2, resetSeconds: 1)
        Self.replies(&beside, count: 60, from: 1, to: 2, rateLimit: nearlyGone)
        #expect(beside.summary.throttleEvents == 1, "60 of 98 its own: someone else uses the window too")
    }

    /// Processes sharing a stated window all see the same room in it, and each takes the same
    /// step of it a second whatever its own rate: additive, so two unequal shares grow together by
    /// equal amounts (their ratio falls toward 1), where growth in proportion to each one's rate
    /// would keep it.
    @Test func roomInASharedStatedWindowIsTakenInEqualStepsWhateverEachOnesRate() {
        // (These replies' remaining does not follow the processes' own sends, so the start would
        // take it for others already in the window and stop at their room: not what this is about.)
        var small = Self.controller(startRate: 10, startStopsForOthers: false)
        var large = Self.controller(startRate: 40, startStopsForOthers: false)
        let crowded = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 2, resetSeconds: 1)
        let roomy = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1)
        for (index, controller) in [(0, small), (1, large)] {
            var controller = controller
            // Each takes what it takes of a window others use too, until it is nearly used: the
            // start ends there.
            let partly = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 40, resetSeconds: 1)
            Self.replies(&controller, count: index == 0 ? 10 : 40, from: 1, to: 2, rateLimit: partly)
            controller.replied(.accepted, duration: 0.05, rateLimit: crowded, now: 2)
            #expect(controller.summary.throttleEvents == 1)
            // A window later half of it is free, and stays so (every reply says so).
            Self.ticks(&controller, from: 2.25, to: 4.5)
            Self.replies(&controller, count: 20, from: 4.5, to: 5.5, rateLimit: roomy)
            Self.ticks(&controller, from: 5.5, to: 5.5)
            let before = controller.effectiveRate!
            Self.replies(&controller, count: 5, from: 5.5, to: 5.75, rateLimit: roomy)
            Self.ticks(&controller, from: 5.75, to: 5.75)
            // 0.2 × 100/s × (0.5 − 0.02 − half the typical fall between replies, nearly 0 by now) a
            // second, for 0.25 s.
            let step = controller.effectiveRate! - before
            #expect(
                Self.close(step, 0.2 * 100 * 0.48 * 0.25, within: 0.01), "process \(index): \(before) grew by \(step)")
            if index == 0 { small = controller } else { large = controller }
        }
        #expect(large.effectiveRate! > small.effectiveRate! + 1, "the two had unequal rates to begin with")
    }

    /// A lone process reaches a stated rate and stays there: a 429 seconds later (the client's own
    /// timing jitter) is an ordinary episode, a cut to just under what was accepted, not the climb's
    /// overshoot, whose rewind to a thirtieth of the rate cost a second of sends.
    @Test func a429LongAfterTheClimbReachedAStatedCapIsAnEpisodeNotItsOvershoot() {
        var controller = Self.controller(startRate: 10)
        let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1)
        Self.statedReplies(&controller, from: 0, to: 300) { _ in info }
        #expect(Self.close(controller.effectiveRate, 99), "the climb ends at 0.99 of the stated rate")
        controller.replied(Self.refused, duration: 0.05, rateLimit: info, now: 3)
        #expect(controller.summary.throttleEvents == 1)
        #expect(
            controller.effectiveRate! > 90, "0.97 of the ~100/s accepted, not rewound: \(controller.effectiveRate!)")
    }

    /// A stated 100-a-second log shared with live traffic at `live(t)` a second (evenly spread),
    /// there from a second before the controller's first request, for `seconds`: the controller's
    /// own sends each reach it 10 ms after they leave and are answered 10 ms later, with what
    /// remains. Returns how many of its requests were refused.
    private static func besideLiveTraffic(
        seconds: Double, _ controller: inout Controller, live: (Double) -> Double
    ) -> Int {
        var admitted: [Double] = []
        var inFlight: [(repliesAt: Double, accepted: Bool, remaining: Int)] = []
        var credit = 0.0
        var liveCredit = 0.0
        var refused = 0
        let step = 0.001
        for index in -1000..<Int(seconds / step) {
            let now = Double(index) * step
            // The log: everyone's admissions over the last second.
            while let first = admitted.first, first <= now - 1 { admitted.removeFirst() }
            liveCredit += live(now) * step
            while liveCredit >= 1 {
                liveCredit -= 1
                if admitted.count < 100 { admitted.append(now) }
            }
            guard index >= 0 else { continue }
            for reply in inFlight where reply.repliesAt <= now {
                let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: reply.remaining, resetSeconds: 1)
                controller.replied(
                    reply.accepted ? .accepted : Self.refused, duration: 0.02, rateLimit: info, now: now)
            }
            inFlight.removeAll { $0.repliesAt <= now }
            if index % 250 == 0 { controller.tick(now: now, paceLimited: true) }
            credit += (controller.effectiveRate ?? 0) * step
            while credit >= 1 {
                credit -= 1
                let accepted = admitted.count < 100
                if accepted { admitted.append(now) } else { refused += 1 }
                inFlight.append((now + 0.02, accepted, 100 - admitted.count))
            }
        }
        return refused
    }

    /// The live app was in a stated window before the job started: the job's climb stops at the
    /// room it leaves, less two of its count's standard deviations (99 − 30 − 2√30 ≈ 58 a second),
    /// instead of climbing to the stated 99 and refusing the users' requests until the window shows
    /// it; a window later the start is over: the room is then probed as after a cut, not followed
    /// (users who leave free it only a step at a time), and a 429 is an episode, not the climb's
    /// rewind.
    @Test func aStartBesideTheLiveAppInAStatedWindowStopsAtTheRoomItLeaves() {
        var beside = Self.controller()
        let refused = Self.besideLiveTraffic(seconds: 3, &beside) { _ in 30 }
        let room = 99 - 30 - 2 * 30.0.squareRoot()
        #expect(Self.close(beside.effectiveRate, room, within: 3), "\(beside.effectiveRate ?? 0)")
        #expect(refused == 0 && beside.summary.throttleEvents == 0)
        var leaving = Self.controller()
        _ = Self.besideLiveTraffic(seconds: 3.6, &leaving) { $0 < 3 ? 30 : 0 }
        #expect(leaving.effectiveRate! < room + 10, "the room is probed, not followed: \(leaving.effectiveRate!)")
        beside.replied(Self.refused, duration: 0.02, rateLimit: nil, now: 3)
        #expect(beside.effectiveRate! > room / 2, "an episode's cut, not a rewind: \(beside.effectiveRate!)")
        var alone = Self.controller()
        _ = Self.besideLiveTraffic(seconds: 3, &alone) { _ in 0 }
        #expect(Self.close(alone.effectiveRate, 99), "alone, the climb ends at the stated cap")
        // `--headroom 20%` already leaves the users 20 a second, more than the two deviations.
        var polite = Self.controller(headroom: 0.2)
        _ = Self.besideLiveTraffic(seconds: 3, &polite) { _ in 30 }
        #expect(Self.close(polite.effectiveRate, 99 * 0.8 - 30, within: 3), "\(polite.effectiveRate ?? 0)")
    }

    @Test func withoutAStatedWindowTheLongestResetIsTheWindow() {
        var controller = Self.controller(startRate: 1000)
        controller.replied(
            .accepted, duration: 0.05, rateLimit: RateLimitInfo(quota: 5000, remaining: 4999, resetSeconds: 3599.6),
            now: 1)
        #expect(Self.close(controller.effectiveRate, 5000.0 / 3599 * 0.99))
        controller.replied(
            .accepted, duration: 0.05, rateLimit: RateLimitInfo(quota: 5000, remaining: 4000, resetSeconds: 12), now: 2)
        #expect(Self.close(controller.effectiveRate, 5000.0 / 3599 * 0.99), "a later, shorter reset is not the window")
    }

    @Test func theHeadroomLeavesItsShareOfTheRateFound() {
        var controller = Self.controller(headroom: 0.2, startRate: 100)
        Self.replies(&controller, count: 100, from: 0, to: 1)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        Self.ticks(&controller, from: 1.25, to: 2.5)
        #expect(Self.close(controller.effectiveRate, 100 * 0.99 * 0.8, within: 1), "\(controller.effectiveRate!)")
    }

    @Test func aBurstOf503sCutsRateAndConcurrencyButATrickleAmongSuccessesDoesNot() {
        var trickle = Self.controller(concurrency: 8, startRate: 100)
        for step in 0..<100 {
            trickle.replied(.accepted, duration: 0.02, rateLimit: nil, now: 1 + Double(step) * 0.03)
            if step % 10 == 0 {
                trickle.replied(.unavailable, duration: 0.02, rateLimit: nil, now: 1 + Double(step) * 0.03)
            }
        }
        #expect(trickle.summary.throttleEvents == 0)
        var burst = Self.controller(concurrency: 64, startRate: 100)
        Self.replies(&burst, count: 10, from: 0.5, to: 1, latency: 0.02)
        let before = burst.effectiveRate!
        for step in 0..<10 { burst.replied(.unavailable, duration: 0.02, rateLimit: nil, now: 1 + Double(step) * 0.03) }
        #expect(burst.summary.throttleEvents == 1)
        #expect(burst.effectiveRate! < before, "cut: at most halved at once, then 0.8 of that")
        #expect(burst.concurrency < 64, "overload: fewer in flight too, what that rate needs at the latency seen")
    }

    @Test func theReserveIsForConcurrencyBoundSendsOnly() {
        #expect(Self.controller(adaptive: false).concurrencyBound, "unpaced")
        #expect(!Self.controller(concurrency: 8, startRate: 10).concurrencyBound, "10/s × 50 ms is far below 8 slots")
        #expect(Self.controller(concurrency: 8, startRate: 1000).concurrencyBound, "1000/s needs more than 8 at 50 ms")
    }

    @Test func theSummarySaysHowOftenAndHowLowAndWhereItEnded() {
        var controller = Self.controller(startRate: 100)
        #expect(controller.summary == PacingSummary())
        Self.replies(&controller, count: 100, from: 0, to: 1)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        let summary = controller.summary
        #expect(summary.throttleEvents == 1)
        // The start's rewind replays the climb: the lowest is the rate it climbs back to, 0.99 of
        // the 100 the window took, not the replay's first step.
        #expect(Self.close(summary.lowestRate, 99, within: 1e-6), "\(String(describing: summary.lowestRate))")
        #expect(summary.finalRate == controller.effectiveRate)
        let capped = Self.controller(rateCap: 5)
        #expect(capped.summary.finalRate == nil, "at the cap: not throttled")
    }
}
