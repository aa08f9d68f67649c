import BotsiAPI
import Foundation
import Testing

@testable import BotsiRestore

/// Where each reaction's evidence begins and ends: which replies count since a cut, how long a
/// refusal is remembered, when a rate at the cap is the cap's and not the replies', and what the
/// latency follows. (The controller's sweep of hand-written mutants found these unheld.)
extension RateControllerTests {
    /// `--rate 50`, a start refused at it, and the probe back up to it: the cap paces the run
    /// again, not the replies, and the summary says it ended unthrottled.
    @Test func aRateProbedBackUpToTheCapIsNotThrottled() {
        var controller = Self.controller(rateCap: 50, startRate: 100)
        Self.replies(&controller, count: 100, from: 0, to: 1)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        #expect(controller.isThrottled, "the start's rewind holds it under the cap")
        Self.ticks(&controller, from: 1.25, to: 15)
        #expect(controller.effectiveRate == 50, "probed back up to the cap")
        #expect(!controller.isThrottled, "at the cap: the cap's pace, not the replies'")
        #expect(controller.summary.finalRate == nil)
    }

    /// The latency is a moving average of accepted replies' durations, each weighing a tenth: ten
    /// replies of 1.05 s take it from 0.05 s to 1.05 − 0.9¹⁰. A refusal's duration is the
    /// limiter's answer, not the service's work, and does not count.
    @Test func theLatencyFollowsAcceptedRepliesAtATenthEach() {
        var controller = Self.controller()
        #expect(controller.latency == 0.05)
        Self.replies(&controller, count: 10, from: 0, to: 1, latency: 1.05)
        let expected = 1.05 - pow(0.9, 10)
        #expect(Self.close(controller.latency, expected), "\(controller.latency) vs \(expected)")
        controller.replied(Self.refused, duration: 9, rateLimit: nil, now: 1.1)
        #expect(Self.close(controller.latency, expected), "a 429's time is not the service's")
    }

    /// After the start's rewind (at 1.0), the window is judged by the replies to requests sent
    /// since: ten accepted echoes of requests sent before it do not dilute four refusals of new
    /// ones, and a 503 is as much a refusal as a 429. Four of four refused: the window is closed,
    /// and a trickle (a twentieth of the 100/s the start found) looks for its opening.
    @Test func aWindowIsJudgedClosedByTheRepliesToRequestsSentSinceTheCutWhateverTheirStatus() {
        let trickle = 100 * Self.tuning.trickle
        var echoes = Self.rewoundAtOne()
        let cut = echoes.effectiveRate!
        Self.replies(&echoes, count: 10, from: 1.05, to: 1.15, latency: 0.3)
        Self.replies(&echoes, Self.refused, count: 4, from: 1.15, to: 1.19, latency: 0.01)
        #expect(Self.close(echoes.effectiveRate, trickle), "\(echoes.effectiveRate!): not \(cut)")
        var overloaded = Self.rewoundAtOne()
        Self.replies(&overloaded, .unavailable, count: 3, from: 1.1, to: 1.13, latency: 0.01)
        #expect(overloaded.summary.throttleEvents == 1, "three 503s among a hundred replies are no overload burst")
        overloaded.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 1.14)
        #expect(Self.close(overloaded.effectiveRate, trickle), "\(overloaded.effectiveRate!): 4 of 4 refused")
    }

    /// A 429 to a request sent before the last cut answers that cut's overshoot, however late it
    /// comes back: one that took 1.6 s, replied past the holdoff, cuts nothing.
    @Test func aLate429ToARequestSentBeforeTheCutIsStillItsEcho() {
        var controller = Self.rewoundAtOne()
        Self.ticks(&controller, from: 1.25, to: 2.5)
        Self.replies(&controller, count: 150, from: 1, to: 2.5)
        let rate = controller.effectiveRate
        controller.replied(Self.refused, duration: 1.6, rateLimit: nil, now: 2.5)
        #expect(controller.summary.throttleEvents == 1, "sent at 0.9, before the cut at 1.0")
        #expect(controller.effectiveRate == rate)
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 2.55)
        #expect(controller.summary.throttleEvents == 2, "one sent after it is an episode")
    }

    /// Once the background of scattered 429s is known, the pacer climbs again as at the start, and
    /// that climb ends only at refusals that stand out, counted over the last second: a lone 429 does
    /// not, nor do three a second and a half after three others, nor five at once (with 100 replies
    /// a second and the background's share at its 1% cap, the line is at 5.1); six at once do.
    @Test func theClimbAfterTheBackgroundShowsEndsOnlyAtASecondsRefusalsThatStandOut() throws {
        var service = ScatteredRefusals()
        service.advance(to: 1, refusingEvery: nil)
        service.controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        #expect(service.controller.isThrottled)
        while service.controller.isThrottled, service.now < 60 {
            service.advance(to: service.now + 0.25, refusingEvery: 150)
        }
        try #require(!service.controller.isThrottled, "the background showed and the climb began again")
        let events = service.controller.summary.throttleEvents
        service.advance(to: service.now + 2, refusingEvery: 150)
        #expect(service.controller.summary.throttleEvents == events, "lone 429s do not end the climb")
        service.advance(to: service.now + 1.1, refusingEvery: nil)
        for burst in 0..<2 {
            let at = service.now
            Self.replies(&service.controller, Self.refused, count: 3, from: at, to: at + 0.03)
            service.advance(to: at + 1.5, refusingEvery: nil)
            #expect(service.controller.summary.throttleEvents == events, "burst \(burst): 3 in the last second")
        }
        // The threshold is the expected noise (the background's share, at most 1%, of a second's
        // hundred replies: 1.05) and three of its standard deviations, and one: 5.1. Without the one,
        // five would stand out.
        let five = service.now
        Self.replies(&service.controller, Self.refused, count: 5, from: five, to: five + 0.05)
        service.advance(to: five + 1.1, refusingEvery: nil)
        #expect(service.controller.summary.throttleEvents == events, "five in a second")
        #expect(!service.controller.isThrottled, "still climbing")
        let at = service.now
        Self.replies(&service.controller, Self.refused, count: 6, from: at, to: at + 0.06)
        #expect(service.controller.summary.throttleEvents == events + 1, "six in a second stand out")
    }
}

extension RateControllerTests {
    /// The start found 100/s and climbed back to 99; then a slow second and a full one. A 429 past
    /// the holdoff measures what the limiter accepted by the lower of the last second's count and
    /// the last two seconds' — never less than half the rate at once.
    @Test func anEpisodeMeasuresTheLowerOfOneAndTwoSecondsButNeverLessThanHalfTheRate() {
        func afterASlowSecond(accepting slow: Int, then full: Int) -> (before: Double, cut: Double) {
            var controller = Self.rewoundAtOne()
            Self.ticks(&controller, from: 1.25, to: 3)
            if slow > 0 { Self.replies(&controller, count: slow, from: 1.05, to: 2) }
            Self.replies(&controller, count: full, from: 2, to: 3)
            let before = controller.effectiveRate!
            controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 3)
            return (before, controller.effectiveRate!)
        }
        let backoff = Self.tuning.backoff
        let twoSeconds = afterASlowSecond(accepting: 20, then: 100)
        #expect(twoSeconds.before > 98, "\(twoSeconds.before)")
        // (The meter counts in tenths of a second: a little over 60.)
        #expect(Self.close(twoSeconds.cut, 60 * backoff, within: 3), "(20 + 100) / 2 s, not 100: \(twoSeconds.cut)")
        let half = afterASlowSecond(accepting: 0, then: 30)
        #expect(
            Self.close(half.cut, half.before * 0.5 * backoff, within: 0.5),
            "15/s measured, but at most halved: \(half.cut)")
    }

    /// What a fixed window gave since its edge measures a cut only for `openingWindows` windows
    /// after the opening seen, and only when the window gave something since that edge: a refusal
    /// right at an edge found nothing counted yet, and that is not what the window gives.
    @Test func theCountSinceAWindowEdgeMeasuresOnlyNearTheOpeningAndOnlyWhenItCountedSomething() {
        var late = Self.reopenedAtTwo()
        Self.ticks(&late, from: 2.25, to: 5.5)
        for second in 2..<5 { Self.replies(&late, count: 100, from: Double(second) + 0.005, to: Double(second) + 1) }
        Self.replies(&late, count: 60, from: 5.01, to: 5.6, latency: 0.01)
        let lateBefore = late.effectiveRate!
        late.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 5.6)
        // 3.6 windows after the opening: the last seconds' 100/s, not the 60 since 5.0.
        #expect(
            Self.close(late.effectiveRate, min(lateBefore, 100) * Self.tuning.backoff, within: 1),
            "\(late.effectiveRate!)")
        var atTheEdge = Self.reopenedAtTwo()
        Self.ticks(&atTheEdge, from: 2.25, to: 3)
        Self.replies(&atTheEdge, count: 200, from: 2.1, to: 2.99, latency: 0.01)
        let edgeBefore = atTheEdge.effectiveRate!
        // Sent at 3.01, it reached the service at 3.015: nothing counted since the edge at 3.0.
        atTheEdge.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 3.02)
        #expect(
            Self.close(atTheEdge.effectiveRate, min(edgeBefore, 100) * Self.tuning.backoff, within: 1),
            "the last two seconds' 100/s, not 0 since the edge: \(atTheEdge.effectiveRate!) from \(edgeBefore)")
    }

    /// A window is judged closed on four replies since the cut at least: three refusals in a row
    /// right after it may be the overshoot still draining.
    @Test func aWindowIsJudgedClosedOnFourRepliesSinceTheCutAtLeast() {
        var controller = Self.rewoundAtOne()
        let cut = controller.effectiveRate!
        Self.replies(&controller, Self.refused, count: 3, from: 1.1, to: 1.13, latency: 0.01)
        #expect(controller.effectiveRate == cut, "three refused since the cut")
        controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 1.14)
        #expect(Self.close(controller.effectiveRate, 100 * Self.tuning.trickle), "the fourth")
    }
}

extension RateControllerTests {
    /// The background is at most `noiseShare` (1%) of replies: a service refusing a tenth of
    /// everything at random is throttling, and each second's ten refusals keep standing out and
    /// cutting, where taking the tenth for noise would stop every cut.
    @Test func aBackgroundCountsAsNoiseOnlyUpToOnePercent() {
        var service = ScatteredRefusals()
        service.advance(to: 1, refusingEvery: nil)
        service.controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 1)
        service.advance(to: 30, refusingEvery: 10)
        let events = service.controller.summary.throttleEvents
        service.advance(to: 45, refusingEvery: 10)
        let more = service.controller.summary.throttleEvents - events
        #expect(more >= 10, "a tenth refused still cuts about once a second: \(more) in 15 s")
    }

    /// The overshoot still draining within the holdoff after a cut is not background: thirteen
    /// refusals among 112 replies there leave the noise unknown, so the next 429 past the
    /// holdoff is an episode, and the replay is not restarted as a climb.
    @Test func refusalsWithinTheHoldoffAreNotBackground() {
        var controller = Self.rewoundAtOne()
        for step in 0..<112 {
            let now = 1.05 + Double(step) * 0.008
            controller.replied(step % 9 == 0 ? Self.refused : .accepted, duration: 0.01, rateLimit: nil, now: now)
        }
        #expect(controller.summary.throttleEvents == 1, "a ninth refused within the holdoff: the same overshoot")
        #expect(controller.isThrottled, "still replaying the start, not climbing again")
        controller.replied(Self.refused, duration: 0.01, rateLimit: nil, now: 2.1)
        #expect(controller.summary.throttleEvents == 2, "a 429 past the holdoff is an episode")
    }
}

extension RateControllerTests {
    /// A rate not in use proves nothing: after a cut it does not recover while rows are not held
    /// back by it, and time spent probing idle does not count toward the probe's growth.
    @Test func aRateNotInUseNeitherRecoversNorProbes() {
        var recovering = Self.rewoundAtOne()
        let cut = recovering.effectiveRate!
        Self.ticks(&recovering, from: 1.25, to: 3, inUse: false)
        #expect(recovering.effectiveRate == cut, "idle: not replayed back up")
        Self.ticks(&recovering, from: 3.25, to: 4.25)
        let plateau = 100 * Self.tuning.plateau
        #expect(Self.close(recovering.effectiveRate, plateau, within: 0.5), "in use: back to the plateau")
        // Probing since about 3.5; ten idle seconds, then one in use: the probe is about two
        // seconds old (99 + 49.5 × 0.001 × 2³ ≈ 99.4), not twelve (≈ 185).
        Self.ticks(&recovering, from: 4.5, to: 14.5, inUse: false)
        Self.ticks(&recovering, from: 14.75, to: 15.5)
        #expect(recovering.effectiveRate! < plateau + 1, "\(recovering.effectiveRate!)")
    }

    /// Concurrency cut by an overload grows back only two seconds after the cut, then by a tenth
    /// (at least one) a tick, up to `--concurrency`.
    @Test func concurrencyCutByAnOverloadRegrowsFromTwoSecondsAfterTheCut() {
        var controller = Self.controller(concurrency: 64, startRate: 100)
        Self.replies(&controller, count: 10, from: 0.5, to: 1, latency: 0.02)
        // Ten 503s 30 ms apart: the seventh (at 1.18) makes them a burst.
        for step in 0..<10 {
            controller.replied(.unavailable, duration: 0.02, rateLimit: nil, now: 1 + Double(step) * 0.03)
        }
        let cut = controller.concurrency
        #expect(cut < 64)
        Self.ticks(&controller, from: 1.25, to: 3)
        #expect(controller.concurrency == cut, "within two seconds of the cut at 1.18")
        Self.ticks(&controller, from: 3.25, to: 3.25)
        #expect(controller.concurrency == cut + max(1, cut / 10))
        Self.ticks(&controller, from: 3.5, to: 60)
        #expect(controller.concurrency == 64)
    }
}

extension RateControllerTests {
    /// The room a stated window leaves grows the rate only up to the stated cap: a rate that went
    /// on growing behind the cap (hidden by it) jumped to a new, doubled limit at once, where the
    /// room is taken in steps.
    @Test func roomGrowthStopsAtTheStatedCapSoADoubledLimitIsTakenInSteps() {
        var controller = Self.controller(startRate: 10)
        let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1)
        func run(from start: Int, to end: Int, _ info: RateLimitInfo) {
            for step in start..<end {
                let now = Double(step) / 100
                controller.replied(.accepted, duration: 0.05, rateLimit: info, now: now)
                if step % 25 == 0 { controller.tick(now: now, paceLimited: true) }
            }
        }
        run(from: 0, to: 300, info)
        controller.replied(Self.refused, duration: 0.05, rateLimit: info, now: 3)
        #expect(controller.summary.throttleEvents == 1, "the climb has ended")
        run(from: 301, to: 1000, info)
        #expect(Self.close(controller.effectiveRate, 99), "back at the cap, half the window free")
        let doubled = RateLimitInfo(quota: 200, windowSeconds: 1, remaining: 150, resetSeconds: 1)
        controller.replied(.accepted, duration: 0.05, rateLimit: doubled, now: 10)
        #expect(controller.effectiveRate! < 100, "not at 198 at once: \(controller.effectiveRate!)")
    }
}

extension RateControllerTests {
    /// 100 replies a second from `start` to `end` (in hundredths), each with the fields `info(t)`
    /// gives, and a tick every quarter second.
    static func statedReplies(
        _ controller: inout Controller, from start: Int, to end: Int, _ info: (Double) -> RateLimitInfo
    ) {
        for step in start..<end {
            let now = Double(step) / 100
            controller.replied(.accepted, duration: 0.05, rateLimit: info(now), now: now)
            if step % 25 == 0 { controller.tick(now: now, paceLimited: true) }
        }
    }

    /// A climb held at the stated cap for a second has ended there, and a 429 then is an episode —
    /// but not while the window falls from one window to the next (80, 70, then 60 left at its
    /// fullest: a bucket draining): then the 429 is still the climb's overshoot, and the rate goes
    /// back to what it sent a window before, giving the others the room back at once.
    @Test func aClimbHeldAtTheCapWhileTheWindowFallsIsStillRewoundAtA429() {
        var controller = Self.controller(startRate: 10)
        Self.statedReplies(&controller, from: 0, to: 295) {
            RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 80 - 10 * Int($0), resetSeconds: 1)
        }
        #expect(Self.close(controller.effectiveRate, 99), "held at the stated cap since about 0.7 s")
        let falling = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 60, resetSeconds: 1)
        controller.replied(Self.refused, duration: 0.05, rateLimit: falling, now: 2.95)
        #expect(controller.effectiveRate! < 10, "rewound: \(controller.effectiveRate!)")
    }

    /// The same cut for every process that sees a window emptied all through is for processes
    /// sharing it: alone at the stated cap, the window runs empty by design, and a 429 there is
    /// an ordinary episode (a cut to just under what was accepted, not to 0.9 of the rate).
    @Test func aWindowEmptiedByThisProcessAloneIsNotAnOverload() {
        var controller = Self.controller(startRate: 10)
        let half = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1)
        Self.statedReplies(&controller, from: 0, to: 300) { _ in half }
        controller.replied(Self.refused, duration: 0.05, rateLimit: half, now: 3)
        #expect(controller.summary.throttleEvents == 1, "the climb has ended")
        let empty = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 0, resetSeconds: 1)
        Self.statedReplies(&controller, from: 301, to: 420) { _ in empty }
        #expect(controller.summary.throttleEvents == 1, "its own use empties the window: no episode")
        let before = controller.effectiveRate!
        controller.replied(Self.refused, duration: 0.05, rateLimit: empty, now: 4.25)
        #expect(controller.summary.throttleEvents == 2)
        #expect(controller.effectiveRate! > before * 0.92, "\(controller.effectiveRate!) from \(before)")
    }
}

extension RateControllerTests {
    /// A long window carried from an earlier run paces from its first request only when it is a
    /// window: a record of no cycle or no rate (a journal edited by hand, a run that found nothing)
    /// starts as any run does, at the start rate, not at 0.99 of that rate or at the 0.5/s floor.
    @Test func aCarriedLongWindowOfNoCycleOrNoRateStartsAsAnyRunDoes() {
        for carried in [
            LongWindowPace(cycle: 0, rate: 5), LongWindowPace(cycle: 3600, rate: 0),
            LongWindowPace(cycle: -1, rate: 5),
        ] {
            var pacing = PacingConfiguration(concurrency: 32, rateCap: nil, adaptive: true, headroom: 0)
            pacing.carried = carried
            let controller = Controller(pacing: pacing, tuning: pacing.tuning)
            #expect(controller.effectiveRate == Self.tuning.startRate, "\(carried)")
            #expect(controller.longWindow == nil, "\(carried)")
        }
        var pacing = PacingConfiguration(concurrency: 32, rateCap: nil, adaptive: true, headroom: 0)
        pacing.carried = LongWindowPace(cycle: 3600, rate: 5)
        #expect(Controller(pacing: pacing, tuning: pacing.tuning).effectiveRate == 5 * Self.tuning.plateau)
    }
}

extension RateControllerTests {
    /// A limit of 100 a second that refuses one request whenever the probe takes the rate past it:
    /// those refusals come above the ceiling the episodes found, where a limit refuses, and are
    /// never the background, however many come. The pacer keeps cutting for them, and never takes
    /// them for noise and climbs again as at the start.
    @Test func refusalsAboveTheCeilingAreTheLimitNeverTheBackground() {
        var controller = Self.rewoundAtOne()
        var now = 1.0
        var lastRefusal = 1.0
        var climbedAgain = false
        while now < 120 {
            controller.tick(now: now, paceLimited: true)
            for index in 0..<25 {
                let at = now + 0.01 * Double(index)
                let refuse = controller.effectiveRate! > 101 && at - lastRefusal >= 1.5
                if refuse { lastRefusal = at }
                controller.replied(refuse ? Self.refused : .accepted, duration: 0.05, rateLimit: nil, now: at)
            }
            if !controller.isThrottled { climbedAgain = true }
            now += 0.25
        }
        #expect(controller.summary.throttleEvents >= 15, "\(controller.summary.throttleEvents) episodes")
        #expect(!climbedAgain, "the probe's refusals were taken for noise")
    }
}

extension RateControllerTests {
    /// A stated window that falls from one window to the next (80, 70, 60 left at its fullest, then
    /// 2: a bucket draining, spent 10 a second faster than it refills) is an episode even though
    /// this process's own use explains what the last second took, and the episode measures what
    /// this process was accepted less its part of the fall: about 101 less 10 × 101/110, 92, cut to
    /// 0.97 of that (89), not the 96 the accepted rate alone gives or the 88 the whole fall does.
    @Test func anEpisodeInAFallingStatedWindowShedsThisProcesssPartOfTheFall() {
        var controller = Self.controller(startRate: 10)
        let half = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1)
        Self.statedReplies(&controller, from: 0, to: 300) { _ in half }
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 3)
        #expect(controller.summary.throttleEvents == 1, "the climb has ended")
        Self.statedReplies(&controller, from: 301, to: 595) {
            RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 110 - 10 * Int($0), resetSeconds: 1)
        }
        #expect(controller.summary.throttleEvents == 1)
        #expect(Self.close(controller.effectiveRate, 99), "back at the cap")
        let nearlyUsed = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 2, resetSeconds: 1)
        controller.replied(.accepted, duration: 0.05, rateLimit: nearlyUsed, now: 5.95)
        #expect(controller.summary.throttleEvents == 2, "a falling window nearly used: an episode")
        let cut = controller.effectiveRate!
        #expect(cut > 88.7 && cut < 89.5, "\(cut)")
    }
}

extension RateControllerTests {
    /// The start's climb in a stated window that falls from one window to the next (80, 70, 60 left
    /// at its fullest: a bucket draining), ended by a reply finding it nearly used: the rewind's
    /// plateau is what the window took less this process's part of the fall, (99 − 10 × 101/110) ×
    /// 0.99 = 88.9 (101 a second accepted), not the 98 that would fill the draining window again.
    @Test func aStartEndedByAFallingWindowNearlyUsedReplaysToLessThanItTook() {
        var controller = Self.controller(startRate: 10)
        Self.statedReplies(&controller, from: 0, to: 295) {
            RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 80 - 10 * Int($0), resetSeconds: 1)
        }
        let nearlyUsed = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 2, resetSeconds: 1)
        controller.replied(.accepted, duration: 0.05, rateLimit: nearlyUsed, now: 2.95)
        #expect(controller.effectiveRate! < 10, "rewound: \(controller.effectiveRate!)")
        let settlesAt = (99 - 10 * 101 / 110.0) * 0.99
        #expect(Self.close(controller.summary.lowestRate, settlesAt, within: 0.05), "\(controller.summary.lowestRate!)")
    }

    /// `perSecond` accepted replies a second over [from, to), the `index`th with `remaining(index)`
    /// left of a stated 100 a second, and a tick every quarter second.
    static func pacedReplies(
        _ controller: inout Controller, from start: Double, to end: Double, perSecond: Double = 40,
        remaining: (Int) -> Int
    ) {
        var index = 0
        while start + Double(index) / perSecond < end {
            let now = start + Double(index) / perSecond
            let info = RateLimitInfo(quota: 100, windowSeconds: 1, remaining: remaining(index), resetSeconds: 1)
            controller.replied(.accepted, duration: 0.05, rateLimit: info, now: now)
            if index % Int(perSecond / 4) == 0 { controller.tick(now: now, paceLimited: true) }
            index += 1
        }
    }

    /// Alone on a stated window at 40 replies a second, cut twice (to 48, then to 0.97 of the 40
    /// accepted): a rate well under the cap, where the room the window leaves is what it grows by.
    static func cutUnderTheRoom() -> Controller {
        var controller = Self.controller(startRate: 10)
        Self.pacedReplies(&controller, from: 0, to: 3) { _ in 58 }
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 3)
        Self.pacedReplies(&controller, from: 3.01, to: 4.1) { _ in 58 }
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 4.1)
        return controller
    }

    /// A window that falls 10 a window (90/80, 70, 60, then 50 left at its fullest) has less room
    /// than its fullest moment shows: in the last second the room counts two windows' fall less,
    /// 0.5 − 2 × 0.1, and the rate grows by 0.2 × 100 × (0.3 − 0.02 kept) = 5.6 a second (7.6 with
    /// one window's fall, 9.6 with none).
    @Test func roomInAFallingWindowCountsTwoWindowsFallLess() {
        var controller = Self.cutUnderTheRoom()
        #expect(Self.close(controller.effectiveRate, 38.8, within: 0.01))
        let start = 4.11
        Self.pacedReplies(&controller, from: start, to: 7.11) { index in
            let now = start + Double(index) / 40
            return now < 4.5 ? 90 : 90 - 10 * (Int(now) - 3)
        }
        // The last tick was at 6.86; the next four, 7.11 to 7.86, grow the rate over one second.
        let before = controller.effectiveRate!
        Self.pacedReplies(&controller, from: 7.11, to: 8) { _ in 50 }
        let growth = controller.effectiveRate! - before
        #expect(growth > 5.2 && growth < 6.0, "grew \(growth) in the last second")
    }

    /// A window that a sender sees only now and then falls in steps between its replies (here 10
    /// at a time, 60, 50, 40, 30 and back): its fullest moment may lie between two of them, so half
    /// the typical step (7.5 of 100) is taken off the room seen: 0.2 × 100 × (0.3 − 0.0375 − 0.02)
    /// = 4.85 a second, not the 5.6 the lowest seen gives.
    @Test func roomSeenInStepsLeavesHalfAStepUnseen() {
        var controller = Self.cutUnderTheRoom()
        Self.pacedReplies(&controller, from: 4.11, to: 7.11) { 60 - 10 * ($0 % 4) }
        let before = controller.effectiveRate!
        Self.pacedReplies(&controller, from: 7.11, to: 8) { 60 - 10 * ($0 % 4) }
        let growth = controller.effectiveRate! - before
        #expect(growth > 4.6 && growth < 5.2, "grew \(growth) in the last second")
    }
}

extension RateControllerTests {
    /// A climb refused half a second in, in a stated window others fill too (80 of 100 used, this
    /// process's 40 a second over half a second being 20 of those): what it took of the window is
    /// its share, and the replay climbs back to a quarter of the stated cap (24.5), not to the 40 it
    /// was accepted, which would fill the window again for everyone.
    @Test func aStartRefusedInAWindowOthersFillReplaysToItsShareOfTheWindow() {
        var controller = Self.controller(startRate: 10, startStopsForOthers: false)
        Self.pacedReplies(&controller, from: 0, to: 0.5) { _ in 20 }
        controller.replied(Self.refused, duration: 0.05, rateLimit: nil, now: 0.5)
        #expect(controller.summary.throttleEvents == 1)
        let settlesAt = 99 * (40 * 0.5 / 80) * 0.99
        #expect(Self.close(controller.summary.lowestRate, settlesAt, within: 0.5), "\(controller.summary.lowestRate!)")
    }
}
