import BotsiBasics
import Foundation
import Testing

@testable import BotsiRestore

/// The record a stated window keeps of this process's own admissions: counted by thousandths of
/// the window, so an hourly window at a bulk API's pace costs a bounded memory, and counts that
/// are exact but for the two bins a span's ends fall in.
struct StatedWindowTests {
    /// Seeded, nearly ordered instants (each up to 5 ms before the last, as replies of different
    /// durations arrive), dropped as they age, and counted over random spans against the exact
    /// count: off by no more than what the two end bins hold.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func binnedCountsAreExactButForTheEndBins(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var binned = BinnedTimes()
        binned.binWidth = 0.01
        var exact: [Double] = []
        var now = 0.0
        var droppedThrough = -Double.infinity
        for step in 0..<20_000 {
            now += Double(random.next() % 1000) / 100_000
            let time = now - Double(random.next() % 500) / 100_000
            binned.insert(time)
            exact.append(time)
            if step % 50 == 0 {
                droppedThrough = now - 1.5
                binned.drop(through: droppedThrough)
            }
            let start = max(now - Double(random.next() % 1000) / 1000, droppedThrough + binned.binWidth)
            let end = now - Double(random.next() % 100) / 1000
            let inSpan = exact.filter { $0 > start && $0 <= end }.count
            let endBins = [bin(start, binned), bin(end, binned)]
            let inEndBins = exact.filter { endBins.contains(bin($0, binned)) }
            let counted = binned.count(after: start, through: end)
            #expect(
                abs(counted - inSpan) <= inEndBins.count,
                "seed \(seed), step \(step): \(counted) counted in (\(start), \(end)], \(inSpan) there")
            if abs(counted - inSpan) > inEndBins.count { return }
            exact.removeAll { $0 < droppedThrough - 1 }
        }
    }

    private func bin(_ time: Double, _ binned: BinnedTimes) -> Int64 {
        Int64((time / binned.binWidth).rounded(.down))
    }

    /// A span reaching back past what was dropped counts what is kept in it: the running totals
    /// start from what was dropped, not from zero.
    @Test func aCountFromBeforeTheKeptBinsCountsOnlyWhatIsKept() {
        var binned = BinnedTimes()
        binned.binWidth = 0.001
        for index in 0..<3000 { binned.insert(Double(index) / 1000 + 0.0005) }
        binned.drop(through: 2)
        #expect(binned.binCount == 1000)
        #expect(binned.count(after: 1, through: 3) == 1000)
        #expect(binned.count(after: 2.4999, through: 3) == 500)
    }

    @Test func aNewBinWidthRegroupsWhatIsKeptWithoutLosingAny() {
        var binned = BinnedTimes()
        binned.binWidth = 0.001
        for index in 0..<1000 { binned.insert(Double(index) / 1000 + 0.0005) }
        #expect(binned.binCount == 1000)
        binned.binWidth = 0.1
        #expect(binned.binCount == 10, "a hundred old bins to each new one")
        #expect(binned.count(after: -1, through: 2) == 1000)
        #expect(binned.count(after: 0.25, through: 0.75) == 500, "(0.3, 0.8) by bins of a tenth")
    }

    /// A thousand admissions a second for three two-second windows keep the last window and a
    /// half's 1,500 thousandths, not its 3,000 instants (at an hour's window, millions).
    @Test func ownAdmissionsAreKeptByThousandthsOfTheWindow() {
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        for index in 0..<6000 {
            let now = Double(index) / 1000
            window.observe(
                quota: 100_000, window: 2, remaining: 50_000, admittedAt: now - 0.005, accepted: true, now: now,
                countsChangesFrom: 0, tuning: tuning)
        }
        #expect(window.keptOwnAdmissions <= 1502, "\(window.keptOwnAdmissions) kept (the two end bins with them)")
        #expect(window.keptOwnAdmissions >= 1499, "the last window and a half: \(window.keptOwnAdmissions)")
    }

    /// One process's view of a 100-a-second window used by others at `others(t)` a second and by
    /// its own 20 requests a second, a reply every 0.05 s; counted over the last second, as a log
    /// keeps it, or (`fixed`) from each whole second on.
    private func watch(
        until end: Double, fixed: Bool = false, others: (Double) -> Double
    ) -> (rate: [Int: Double], steady: [Int: Double?]) {
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        var steady: [Int: Double?] = [:]
        var rate: [Int: Double] = [:]
        for step in 1...Int((end * 20).rounded()) {
            let now = Double(step) / 20
            let sinceEdge = Double(step % 20) / 20
            let own = fixed ? step % 20 + 1 : min(step, 20)
            let othersCount = fixed ? others(now) * sinceEdge : others(now)
            window.observe(
                quota: 100, window: 1, remaining: max(0, 100 - own - Int(othersCount.rounded())),
                admittedAt: now - 0.01, accepted: true, now: now, countsChangesFrom: nil, tuning: tuning)
            // By hundredths of a second.
            steady[step * 5] = window.steadyOthersRate(tuning: tuning)
            rate[step * 5] = window.othersRate
        }
        return (rate, steady)
    }

    /// Others' use that holds over three quarters of a window is the live app's, there before this
    /// process: its rate is known. Use that grows as this process's climb does (shards starting
    /// together), a window near full, or use too small to matter is not.
    @Test func othersUseThatHoldsIsSteadyAndUseThatClimbsIsNot() {
        let live = watch(until: 1.5) { _ in 30 }
        #expect(live.steady[50]! == nil, "three samples a quarter window apart are needed first")
        #expect(live.steady[100]!.map { abs($0 - 30) <= 1 } ?? false, "\(String(describing: live.steady[100]!))")
        // Shards that started with this one climb as it does: ×32 a second, ×2.4 a quarter window.
        let climbing = watch(until: 1.5) { t in 3 * pow(32, t) }
        #expect(climbing.steady.values.allSatisfy { $0 == nil }, "others climbing ×32 a second are not steady")
        let few = watch(until: 1.5) { _ in 8 }
        #expect(few.steady.values.allSatisfy { $0 == nil }, "8 of 100 a second: under a tenth")
        let full = watch(until: 1.5) { _ in 60 }
        #expect(full.steady[150]! == nil, "a window with under a quarter left admits whoever sends")
    }

    /// In a fixed window others' count restarts at each edge, and early in a window it is a small
    /// part of their rate: what remaining falls by between samples, less this process's own,
    /// measures their arrivals, edges and all.
    @Test func aFixedWindowsOthersAreMeasuredByWhatRemainingFalls() {
        let live = watch(until: 2.5, fixed: true) { _ in 40 }
        for at in [115, 215] {
            // A sample that spans the edge misses what arrived between it and the next reply.
            let rate = live.rate[at] ?? 0
            #expect(rate >= 24 && rate <= 48, "others at 40 a second measured \(rate) just after an edge (\(at))")
        }
        let rate = live.rate[250] ?? 0
        #expect(rate >= 32 && rate <= 48, "others at 40 a second measured \(rate) mid-window")
        #expect(live.steady[250]! != nil, "and steady: \(String(describing: live.steady[250]!))")
    }

    /// A process alone at 2,000 requests a second, its replies back 5–15 ms after their requests
    /// reached the limiter, so out of order: remaining rises and falls again between them. Only new
    /// lows are falls, so there are no others to see; each rise counted as a fall saw hundreds a
    /// second of them.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func repliesOutOfOrderShowNoOthers(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var replies: [(at: Double, admittedAt: Double, remaining: Int)] = []
        for index in 0..<3000 {
            let admittedAt = Double(index) / 2000
            let remaining = 10_000 - min(index + 1, 2000)
            replies.append((admittedAt + Double.random(in: 0.005...0.015, using: &random), admittedAt, remaining))
        }
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        var highest = 0.0
        for reply in replies.sorted(by: { $0.at < $1.at }) {
            window.observe(
                quota: 10_000, window: 1, remaining: reply.remaining, admittedAt: reply.admittedAt, accepted: true,
                now: reply.at, countsChangesFrom: nil, tuning: tuning)
            highest = max(highest, window.othersRate ?? 0)
        }
        #expect(highest <= 100, "others seen at \(highest) a second (seed \(seed))")
    }

    /// A slow reply just after a sample's moment was admitted long before it: the arrivals since the
    /// last sample are counted over the time since that sample, not over the few milliseconds
    /// between the two admissions.
    @Test func aSlowReplyDoesNotShortenTheSpanOthersAreCountedOver() {
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        // Others at 40 a second, no own requests: remaining falls by 4 each tenth of a second.
        for step in 1...5 {
            let now = Double(step) / 10
            window.observe(
                quota: 100, window: 1, remaining: 100 - 4 * step, admittedAt: now - 0.01, accepted: false, now: now,
                countsChangesFrom: nil, tuning: tuning)
        }
        // The next sample's reply took 0.35 s: admitted at 0.4 s, 10 ms after the last sample's, it
        // arrives at 0.75 s.
        window.observe(
            quota: 100, window: 1, remaining: 84, admittedAt: 0.4, accepted: false, now: 0.75,
            countsChangesFrom: nil, tuning: tuning)
        let rate = window.othersRate ?? 0
        #expect(rate <= 60, "others at 40 a second read as \(rate)")
    }
}
