import BotsiAPI
import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiRestore

@Suite struct PacerUnitTests {
    @Test func sendsAreSpacedByOneOverTheRateWithNoBurstAfterAPause() {
        var pacer = Pacer()
        let sends = [100, 100.05, 100.1, 200, 200].map { pacer.take(now: $0, rate: 10) }
        // A long pause saves nothing up: only one send is allowed at its end.
        #expect(sends == [true, false, true, true, false])
    }

    @Test func unlimitedWithoutARate() {
        var pacer = Pacer()
        let sends = (0..<1000).map { _ in pacer.take(now: 1, rate: nil) }
        #expect(sends.allSatisfy { $0 })
    }

    @Test func throttleCutsOnceASecondAndClimbsBackSlowlyNeverAboveTheCap() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: 100, concurrencyCap: 64)
        #expect(throttle.effectiveRate == 100)
        throttle.tooManyRequests(now: 10, acceptedRate: 20, latency: 0.05)
        #expect(close(throttle.effectiveRate, 19.8), "just under the accepted rate")
        #expect(throttle.concurrency < 64)
        throttle.tooManyRequests(now: 10.5, acceptedRate: 10, latency: 0.05)
        #expect(close(throttle.effectiveRate, 19.8), "a second 429 of the same burst does not cut again")
        throttle.tick(now: 11, acceptedRate: 16)
        #expect(close(throttle.effectiveRate, 19.8), "no increase before a quiet spell")
        for second in 13...400 { throttle.tick(now: Double(second), acceptedRate: 64) }
        #expect(throttle.effectiveRate == 100)
        #expect(throttle.concurrency == 64)
        #expect(throttle.events == 1)
    }

    @Test func disabledThrottleNeverChangesTheLimits() {
        var throttle = AdaptiveThrottle(enabled: false, rateCap: nil, concurrencyCap: 8)
        throttle.tooManyRequests(now: 1, acceptedRate: 5, latency: 0.1)
        #expect(throttle.effectiveRate == nil)
        #expect(throttle.concurrency == 8)
    }

    @Test func aBurstOf503sCountsAsThrottlingButOneDoesNot() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 8)
        throttle.unavailable(now: 1, acceptedRate: 8, latency: 0.01)
        #expect(throttle.effectiveRate == nil)
        throttle.unavailable(now: 1.1, acceptedRate: 8, latency: 0.01)
        throttle.unavailable(now: 1.2, acceptedRate: 8, latency: 0.01)
        #expect(throttle.effectiveRate == 6.4)
    }

    @Test func aStray429AmongManySuccessesDoesNotCutButAShareOfThemDoes() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 8)
        for step in 0..<50 {
            throttle.tooManyRequests(now: 1 + Double(step) * 0.2, acceptedRate: 500, latency: 0.02)
        }
        #expect(throttle.effectiveRate == nil, "one 429 in 100 replies is noise")
        for step in 0..<20 { throttle.tooManyRequests(now: 20 + Double(step) * 0.01, acceptedRate: 500, latency: 0.02) }
        #expect(close(throttle.effectiveRate, 495))
    }

    @Test func cutsNeverGoBelowHalfTheBestRateOfTheLastMinute() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 8)
        throttle.tick(now: 1, acceptedRate: 100)
        for second in 2..<30 {
            throttle.tooManyRequests(now: Double(second), acceptedRate: 10, latency: 0.02)
        }
        #expect(throttle.effectiveRate == 50)
        #expect(throttle.lowestRate == 50)
    }

    @Test func aSteadyTrickleOf503sAmongManySuccessesIsNotThrottling() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 8)
        for step in 0..<100 {
            throttle.unavailable(now: 1 + Double(step) * 0.03, acceptedRate: 800, latency: 0.02)
        }
        #expect(throttle.effectiveRate == nil)
        #expect(throttle.events == 0)
    }

    @Test func shardsAreStableDisjointAndCoverEveryProfile() {
        // Fixed values: the hash is documented and must never change between versions.
        #expect(shardIndex(profileId: "fff3c120-0ca8-480f-9b19-3955a5428e39", shardCount: 4) == 0)
        #expect(shardIndex(profileId: "", shardCount: 4) == 1, "the FNV-1a offset basis modulo 4")
        var counts = [0, 0, 0, 0]
        for index in 0..<4000 { counts[shardIndex(profileId: "profile-\(index)", shardCount: 4)] += 1 }
        #expect(counts.allSatisfy { $0 > 800 })
    }
}

@Suite(.serialized) struct PacingRunTests {
    @Test(.timingHolds) func theRateCapIsNeverExceededByMoreThanTenPercent() throws {
        // A server that refuses anything above 110/s over any one-second window: not one 429
        // means the 100/s cap held within 10% throughout.
        let harness = try Harness { $0.limitRate = 110 }
        defer { harness.simulator.stop() }
        let rows = (0..<300).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let started = Date()
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.rate = 100
            options.adaptive = false
            options.concurrency = 32
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(summary.exitCode == 0)
        #expect(harness.simulator.stats().rateLimited == 0)
        #expect(elapsed >= 300.0 / 110, "300 requests at 100/s cannot finish sooner")
    }

    @Test(.timingHolds) func adaptiveThrottlingSettlesUnderAnUpstreamLimitWithFewThrottledRequests() throws {
        let harness = try Harness { options in
            options.limitRate = 100
            options.retryAfterSeconds = 1
        }
        defer { harness.simulator.stop() }
        let rows = (0..<2000).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.concurrency = 32
            options.maxAttempts = 10
            options.retryAfterCap = 2
        }
        #expect(summary.exitCode == 0)
        #expect(summary.throttleEvents >= 1)
        // Count 429s among the requests sent after the first 10 seconds.
        let output = try SQLiteTool.execute(
            harness.journalPath,
            """
            SELECT count(*), sum(http_status = 429) FROM attempts
            WHERE started_at > strftime('%Y-%m-%dT%H:%M:%fZ', (SELECT started_at FROM runs WHERE id = 1), '+10 seconds')
            """)
        let numbers = output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap {
            Int($0)
        }
        try #require(numbers.count == 2)
        let (late, throttled) = (numbers[0], numbers[1])
        #expect(late > 300, "the run must last well past 10 s at ~100/s")
        #expect(Double(throttled) < Double(late) * 0.05)
    }

    @Test func theTimeWindowDrainsExitsSeventyFiveAndTheNextRunFinishes() throws {
        let harness = try Harness { $0.latencyMilliseconds = 20 }
        defer { harness.simulator.stop() }
        let rows = (0..<400).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let input = harness.scratch.csv(rows: rows)
        let first = try harness.run([input]) { options in
            options.rate = 100
            options.deadline = Date().addingTimeInterval(1)
        }
        #expect(first.exitCode == 75)
        #expect(first.finished > 0 && first.finished < 400)
        #expect(try harness.records().allSatisfy { $0.status != .inFlight })
        let second = try harness.run([input])
        #expect(second.exitCode == 0)
        #expect(try harness.records().allSatisfy { $0.status == .restored })
        #expect(harness.simulator.stats().pairs.allSatisfy { $0.requests == 1 })
    }

    @Test func theFailureThresholdStopsTheRunWithSixtyNine() throws {
        let harness = try Harness { options in
            options.faultRate = 1
            options.faults = [.internalError]
            options.retryAfterSeconds = 0
        }
        defer { harness.simulator.stop() }
        let rows = (0..<300).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.maxAttempts = 1
            options.minSample = 50
            options.maxFailureRate = 20
            options.concurrency = 4
        }
        #expect(summary.exitCode == 69)
        #expect(summary.requests < 100)
        let records = try harness.records()
        #expect(records.allSatisfy { $0.status == .pending }, "unsent rows stay pending, never failed")
    }

    @Test func shardsOfOneInputAreDisjointAndTogetherCoverIt() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let rows = (0..<200).map { ("profile-\($0 % 60)", String(2_000_000_000_000_002 + $0 * 10)) }
        let input = harness.scratch.csv(rows: rows)
        var sent = 0
        for shard in 0..<3 {
            let summary = try harness.run([input]) { options in
                options.shardIndex = shard
                options.shardCount = 3
                options.journalPath = harness.scratch.file("shard-\(shard).sqlite")
            }
            #expect(summary.exitCode == 0)
            #expect(summary.otherShards + summary.requests == 200)
            sent += summary.requests
        }
        #expect(sent == 200)
        #expect(harness.simulator.stats().pairs.allSatisfy { $0.requests == 1 })
    }
}

extension Trait where Self == ConditionTrait {
    /// Rate tests measure when requests reach the server. Under a sanitizer the client stalls and
    /// then delivers bursts, which says nothing about the pacer, so scripts/sanitize.sh skips them.
    static var timingHolds: Self {
        .enabled(
            if: ProcessInfo.processInfo.environment["BOTSI_UNDER_SANITIZER"] == nil,
            "request timing under a sanitizer's slowdown does not test the pacer")
    }
}

@Suite struct PacingNearTheLimitTests {
    @Test func aRateLearnedAfterABurstChargesTheBurst() {
        var pacer = Pacer()
        let burst = (0..<32).map { _ in pacer.take(now: 10, rate: nil) }
        #expect(burst.allSatisfy { $0 })
        pacer.chargeUnpacedBurst(rate: 100)
        let early = pacer.take(now: 10.3, rate: 100)
        let due = pacer.take(now: 10.32, rate: 100)
        #expect(!early, "32 sends at 100/s last until 10.32")
        #expect(due)
    }

    @Test func aHoldStopsSendsUntilItsTime() {
        var pacer = Pacer()
        pacer.hold(until: 5)
        let early = pacer.take(now: 4.9, rate: nil)
        let due = pacer.take(now: 5, rate: nil)
        #expect(!early)
        #expect(due)
    }

    @Test func statedLimitsSetTheRateJustUnderThem() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 32)
        let first = throttle.advertised(RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 50, resetSeconds: 1))
        #expect(first)
        #expect(close(throttle.effectiveRate, 99))
        let again = throttle.advertised(RateLimitInfo(quota: 200, windowSeconds: 2))
        #expect(!again, "said once")
        #expect(close(throttle.effectiveRate, 99))
        #expect(throttle.concurrency == 32, "a stated limit needs no cut in concurrency")
        var capped = AdaptiveThrottle(enabled: true, rateCap: 20, concurrencyCap: 32)
        _ = capped.advertised(RateLimitInfo(quota: 100, windowSeconds: 1))
        #expect(capped.effectiveRate == 20, "--rate still caps")
        var off = AdaptiveThrottle(enabled: false, rateCap: nil, concurrencyCap: 32)
        let ignored = off.advertised(RateLimitInfo(quota: 100, windowSeconds: 1))
        #expect(!ignored)
        #expect(off.effectiveRate == nil, "--no-adaptive ignores them")
    }

    @Test func withoutAStatedWindowTheLongestResetIsTheWindow() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 32)
        _ = throttle.advertised(RateLimitInfo(quota: 5000, remaining: 4999, resetSeconds: 3599.6))
        #expect(close(throttle.effectiveRate, 5000.0 / 3599 * 0.99))
        _ = throttle.advertised(RateLimitInfo(quota: 5000, remaining: 10, resetSeconds: 12))
        #expect(close(throttle.effectiveRate, 5000.0 / 3599 * 0.99), "a later, shorter reset is not the window")
    }

    @Test func theFirstBurstWaitsItsRetryAfterAndCountsTheWaitInTheRate() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 32)
        // 100 accepted in the first 0.25 s, then refusals asking for 1 s.
        for step in 0..<20 {
            throttle.tooManyRequests(
                now: 0.3 + Double(step) * 0.01, acceptedRate: 400, latency: 0.05, acceptedSpan: 0.25, retryAfter: 1)
        }
        #expect(close(throttle.holdUntil, 0.42 + 1), "from the 13th 429, the first that made 3% of the replies")
        #expect(close(throttle.effectiveRate, 400 * 0.25 / 1.25 * 0.99))
        #expect(throttle.events == 1)
    }

    @Test func nearAFoundLimitTheRateCreepsAndFarBelowItClimbsFast() throws {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 32)
        // The first cut (4 429s make 3% of the replies) sets a floor only.
        for step in 0..<5 { throttle.tooManyRequests(now: 1 + Double(step) * 0.01, acceptedRate: 100, latency: 0.05) }
        for second in 4...10 { throttle.tick(now: Double(second), acceptedRate: 100) }
        let climbed = try #require(throttle.effectiveRate)
        #expect(climbed > 120, "the first burst's estimate is climbed from fast")
        for step in 0..<5 { throttle.tooManyRequests(now: 11 + Double(step) * 0.01, acceptedRate: 100, latency: 0.05) }
        #expect(close(throttle.effectiveRate, 99), "a steady run's 429s put the rate just under what was accepted")
        for second in 14...18 { throttle.tick(now: Double(second), acceptedRate: 99) }
        let crept = try #require(throttle.effectiveRate)
        #expect(crept > 99 && crept < 100.2, "five quiet seconds near the limit: \(crept)")
    }

    @Test func aLowReadingAtA429NearTheLimitDoesNotDragTheRateDown() {
        var throttle = AdaptiveThrottle(enabled: true, rateCap: nil, concurrencyCap: 32)
        for step in 0..<5 { throttle.tooManyRequests(now: 1 + Double(step) * 0.01, acceptedRate: 100, latency: 0.05) }
        for step in 0..<5 { throttle.tooManyRequests(now: 3 + Double(step) * 0.01, acceptedRate: 100, latency: 0.05) }
        #expect(close(throttle.effectiveRate, 99))
        // A 429 from jitter while the accepted rate reads 90: the limit found decays by 2%, no more.
        for step in 0..<5 { throttle.tooManyRequests(now: 5 + Double(step) * 0.01, acceptedRate: 90, latency: 0.05) }
        #expect(close(throttle.effectiveRate, 98 * 0.99))
    }

    @Test func theMeterReadsASteadyRateAsItselfAndAFirstBurstAsShort() {
        var meter = SendMeter()
        for index in 0..<1000 { meter.record(now: 100 + Double(index) * 0.01) }
        let rate = meter.ratePerSecond(now: 109.995)
        #expect(abs(rate - 100) < 1.5, "\(rate)")
        var burst = SendMeter()
        for _ in 0..<100 { burst.record(now: 50) }
        #expect(burst.span(now: 50.25) == 0.25)
        let burstRate = burst.ratePerSecond(now: 50.25)
        #expect(burstRate == 400)
    }
}

/// Rates come out of products like 100 × 0.99: equal within rounding.
private func close(_ value: Double?, _ expected: Double) -> Bool {
    value.map { abs($0 - expected) < 1e-9 } ?? false
}
