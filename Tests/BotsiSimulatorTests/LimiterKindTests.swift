import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiSimulator

/// The limiter's kinds (`--limit-kind`), a quota that changes while it runs, and the live traffic
/// the simulator spends from its own limit (`--live-rate`).
@Suite("Limiter kinds and live traffic")
struct LimiterKindTests {
    private static let second: UInt64 = 1_000_000_000
    private static let millisecond: UInt64 = 1_000_000

    /// Admission times (ms from 0) of a request every millisecond for `seconds`.
    private static func admitted(_ limiter: inout RateLimiter, seconds: Int) -> [UInt64] {
        (0..<(seconds * 1000)).compactMap { step in
            let now = UInt64(step) * millisecond
            return limiter.admit(now: now).admitted ? UInt64(step) : nil
        }
    }

    @Test("fixed: the quota per window, back to back, so two windows' edges can admit twice it in a second")
    func fixedWindows() {
        var limiter = RateLimiter(kind: .fixed, quota: 10, windowSeconds: 1)
        let times = Self.admitted(&limiter, seconds: 3)
        #expect(times.count == 30)
        for window in 0..<3 {
            #expect(times.filter { $0 / 1000 == UInt64(window) } == (0..<10).map { UInt64(window * 1000 + $0) })
        }
        // Idle until 0.995 s, then a request a millisecond: the last 5 ms of one window and the next's
        // first ms admit 10 + 10 within 20 ms.
        var edge = RateLimiter(kind: .fixed, quota: 10, windowSeconds: 1)
        let burst = (990..<1010).filter { edge.admit(now: UInt64($0) * Self.millisecond).admitted }
        #expect(burst.count == 20)
        let outcome = edge.admit(now: 1500 * Self.millisecond)
        #expect(!outcome.admitted && outcome.remaining == 0 && outcome.resetNanoseconds == 500 * Self.millisecond)
    }

    @Test("bucket: a full bucket's burst, then one token per quota-th of the window")
    func tokenBucket() {
        var limiter = RateLimiter(kind: .bucket, quota: 10, windowSeconds: 1)
        let times = Self.admitted(&limiter, seconds: 3)
        #expect(Array(times.prefix(10)) == (0..<10).map { UInt64($0) }, "the burst: one window's quota at once")
        #expect(times.count == 10 + 29, "then 10 a second: a token every 100 ms")
        let gaps = zip(times.dropFirst(10), times.dropFirst(11)).map { $1 - $0 }
        #expect(gaps.allSatisfy { (99...101).contains($0) }, "\(gaps)")
        var fresh = RateLimiter(kind: .bucket, quota: 4, windowSeconds: 1)
        let first = fresh.admit(now: 0)
        #expect(first.admitted && first.remaining == 3)
        for _ in 0..<3 { _ = fresh.admit(now: 0) }
        let empty = fresh.admit(now: 0)
        #expect(!empty.admitted && empty.remaining == 0 && empty.resetNanoseconds == 250 * Self.millisecond)
    }

    @Test("every kind admits exactly its quota per window in the long run", arguments: RateLimiterKind.allCases)
    func longRunRate(kind: RateLimiterKind) {
        var limiter = RateLimiter(kind: kind, quota: 50, windowSeconds: 1)
        let count = Self.admitted(&limiter, seconds: 20).count
        // The bucket also starts full: one window's burst more.
        #expect(count == (kind == .bucket ? 1000 + 50 - 1 : 1000), "\(kind): \(count)")
    }

    @Test(
        "a quota that halves keeps what was admitted; one that doubles admits more at once",
        arguments: RateLimiterKind.allCases)
    func quotaChanges(kind: RateLimiterKind) {
        var limiter = RateLimiter(kind: kind, quota: 20, windowSeconds: 1)
        let before = (0..<1000).filter { limiter.admit(now: UInt64($0) * Self.millisecond).admitted }.count
        #expect(before >= 20)
        limiter.setQuota(10, now: 1000 * Self.millisecond)
        var second = 0
        for step in 1000..<2000 where limiter.admit(now: UInt64(step) * Self.millisecond).admitted { second += 1 }
        #expect(second <= 10, "\(kind): \(second) admitted in the second after the halving")
        limiter.setQuota(40, now: 2000 * Self.millisecond)
        var third = 0
        for step in 3000..<4000 where limiter.admit(now: UInt64(step) * Self.millisecond).admitted { third += 1 }
        // A bucket idle for a second is full again: its new burst, then the new rate.
        #expect(third == (kind == .bucket ? 40 + 39 : 40), "\(kind): \(third) admitted a second after the doubling")
    }

    @Test("a sliding log that grows keeps its admissions oldest first, however its ring had wrapped")
    func slidingLogGrowsInOrder() {
        var limiter = RateLimiter(kind: .sliding, quota: 3, windowSeconds: 1)
        for step: UInt64 in [0, 100, 200, 1000] {
            #expect(limiter.admit(now: step * Self.millisecond).admitted, "at \(step) ms")
        }
        // The ring now holds 1000, 100, 200 with its oldest at 100; grown, the log is 100, 200, 1000.
        limiter.setQuota(4, now: 1050 * Self.millisecond)
        let next = limiter.admit(now: 1050 * Self.millisecond)
        #expect(next.admitted && next.remaining == 0 && next.resetNanoseconds == 50 * Self.millisecond)
        // At 1100 ms the admission of 100 ms leaves: one more fits, and the next leaves at 1200 ms.
        let after = limiter.admit(now: 1100 * Self.millisecond)
        #expect(after.admitted && after.resetNanoseconds == 100 * Self.millisecond, "\(after)")
    }

    @Test("live traffic arrives at random (Poisson), the same for one seed, and counts what the limiter refused it")
    func liveTraffic() {
        // 100 s at 30/s against a limit it never reaches: about 3,000 requests (σ ≈ 55), and the
        // counts of single seconds spread as a Poisson count does (variance ≈ mean). Evenly
        // spaced requests would count 30 in every second: a variance of 0.
        var limiter = RateLimiter(quota: 1000, windowSeconds: 1)
        var live = LiveTraffic(rate: 30, startingAt: 0, seed: 7)
        var perSecond: [Int] = []
        for second in 1...100 {
            let before = live.requests
            live.catchUp(to: UInt64(second) * Self.second - 1, limiter: &limiter)
            perSecond.append(live.requests - before)
        }
        #expect((2780...3220).contains(live.requests) && live.refused == 0, "\(live.requests) requests")
        let mean = Double(live.requests) / 100
        let variance = perSecond.map { (Double($0) - mean) * (Double($0) - mean) }.reduce(0, +) / 99
        #expect((0.6...1.4).contains(variance / mean), "variance \(variance) of counts whose mean is \(mean)")
        // The same seed, the same arrivals.
        var again = LiveTraffic(rate: 30, startingAt: 0, seed: 7)
        var other = RateLimiter(quota: 1000, windowSeconds: 1)
        again.catchUp(to: 100 * Self.second - 1, limiter: &other)
        #expect(again.requests == live.requests)
        // A window filled before them refuses every one that arrives within it.
        var full = RateLimiter(quota: 2, windowSeconds: 1)
        _ = full.admit(now: 0)
        _ = full.admit(now: 0)
        var refused = LiveTraffic(rate: 30, startingAt: 0, seed: 1)
        refused.catchUp(to: 900 * Self.millisecond, limiter: &full)
        #expect(
            refused.requests > 10 && refused.refused == refused.requests, "\(refused.refused) of \(refused.requests)")
    }

    @Test("over the wire: the stats count the live requests and the ones refused; without a limit it is refused")
    func liveTrafficOverTheWire() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.limitRate = 10
            options.liveRate = 10
        }
        defer { simulator.stop() }
        // After a window, the live traffic holds the whole limit: 10 in any second.
        usleep(1_100_000)
        let client = try TestClient(port: port)
        let statuses = try (0..<5).map { _ in try client.restoreResponse("p-1", "2000000000000002").status }
        let stats = simulator.stats()
        #expect(statuses.filter { $0 == 429 }.count >= 1, "the live traffic spends the whole limit: \(statuses)")
        #expect((stats.liveRequests ?? 0) >= 3, "\(String(describing: stats.liveRequests))")
        #expect(stats.liveRefused != nil)
        var options = SimulatorOptions()
        options.liveRate = 5
        #expect(throws: SimulatorError.self) { try options.validate() }
        options.limitRate = 4
        #expect(throws: SimulatorError.self, "more live traffic than the limit") { try options.validate() }
        options.liveRate = 4
        #expect(throws: Never.self) { try options.validate() }
        #expect(SimulatorOptions().limitKind == .sliding)
    }
}
