import BotsiBasics
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
}
