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

    @Test func shardsAreStableDisjointAndCoverEveryProfile() {
        // Fixed values: the hash is documented and must never change between versions.
        #expect(shardIndex(profileId: "fff3c120-0ca8-480f-9b19-3955a5428e39", shardCount: 4) == 0)
        #expect(shardIndex(profileId: "", shardCount: 4) == 1, "the FNV-1a offset basis modulo 4")
        // Modulo 1000 the prime shows too (modulo 4 two hashes agree more often than not); the
        // UTF-8 bytes of a non-ASCII id are hashed, not its characters.
        #expect(shardIndex(profileId: "a", shardCount: 1000) == 996, "FNV-1a 64 of 'a' is 0xaf63dc4c8601ec8c")
        #expect(shardIndex(profileId: "fff3c120-0ca8-480f-9b19-3955a5428e39", shardCount: 1000) == 312)
        #expect(shardIndex(profileId: "Ωmega", shardCount: 1000) == 86)
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
            SELECT count(*), sum(http_status = 429) FROM attempts_readable
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

    /// A part of a bucket counts as the whole bucket: the last 0.15 s reach into the bucket before.
    @Test func aCountOverPartOfABucketTakesTheWholeBucket() {
        var meter = SendMeter()
        meter.record(now: 10.05)
        meter.record(now: 10.15)
        #expect(meter.count(now: 10.15, over: 0.15) == 2)
        #expect(meter.count(now: 10.15, over: 0.1) == 1)
    }

    /// Replies are timed on several threads: one stamped a moment before the last is counted in
    /// the current bucket, and the meter never steps back and empties a bucket it already filled.
    @Test func anEarlierTimeNeverStepsTheMeterBack() {
        var meter = SendMeter()
        meter.record(now: 10.0)
        meter.record(now: 9.95)
        #expect(meter.count(now: 10.0, over: 2) == 2)
    }
}

/// Rates come out of products like 100 × 0.99: equal within rounding.
private func close(_ value: Double?, _ expected: Double) -> Bool {
    value.map { abs($0 - expected) < 1e-9 } ?? false
}
