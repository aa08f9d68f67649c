import BotsiJournal
import Foundation

/// Latencies in logarithmic buckets: each bucket is 2% wider than the one below, so any
/// percentile read from it, the bucket's geometric middle, is within 1% of the true value, in a
/// fixed 3.6 KB whatever the number of samples (from 0.05 ms to an hour; beyond, the ends).
public struct LatencyHistogram: Sendable, Equatable {
    public static let lowest = 0.05
    public static let growth = 1.02
    /// The most a percentile is off, relative to the true value: half a bucket, √1.02 − 1.
    public static let relativeError = growth.squareRoot() - 1
    static let bucketCount = Int((log(3_600_000 / lowest) / log(growth)).rounded(.up)) + 2
    private static let logGrowth = log(growth)

    private var counts: [UInt32]
    public private(set) var count = 0
    public private(set) var minimum: Double?
    public private(set) var maximum: Double?

    public init() { counts = Array(repeating: 0, count: Self.bucketCount) }

    /// Bucket 0 holds what is below `lowest`; bucket i ≥ 1 holds [lowest·g^(i−1), lowest·g^i).
    static func bucket(of milliseconds: Double) -> Int {
        guard milliseconds >= lowest else { return 0 }
        let index = Int(log(milliseconds / lowest) / logGrowth) + 1
        return min(index, bucketCount - 1)
    }

    /// The value a bucket stands for: its geometric middle.
    static func middle(of bucket: Int) -> Double {
        bucket == 0 ? lowest / 2 : lowest * pow(growth, Double(bucket) - 0.5)
    }

    public mutating func add(_ milliseconds: Double) {
        guard milliseconds.isFinite, milliseconds >= 0 else { return }
        counts[Self.bucket(of: milliseconds)] &+= 1
        count += 1
        minimum = Swift.min(minimum ?? milliseconds, milliseconds)
        maximum = Swift.max(maximum ?? milliseconds, milliseconds)
    }

    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
        count += other.count
        if let low = other.minimum { minimum = Swift.min(minimum ?? low, low) }
        if let high = other.maximum { maximum = Swift.max(maximum ?? high, high) }
    }

    /// The nearest-rank percentile `fraction` (0.5 for p50), within `relativeError`; nil when empty.
    public func percentile(_ fraction: Double) -> Double? {
        guard count > 0, let minimum, let maximum else { return nil }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += Int(bucketCount)
            if seen >= rank { return Swift.min(Swift.max(Self.middle(of: index), minimum), maximum) }
        }
        return maximum
    }

    /// Counts between the edges given (ascending, in ms), a bucket going where its middle falls;
    /// `edges.count + 1` counts, the first below `edges[0]`, the last at or above the last edge.
    public func counts(between edges: [Double]) -> [Int] {
        var result = Array(repeating: 0, count: edges.count + 1)
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            let middle = Self.middle(of: index)
            let slot = edges.firstIndex { middle < $0 } ?? edges.count
            result[slot] += Int(bucketCount)
        }
        return result
    }
}

/// Builds a `RunSeries` from a run's attempts as they stream by: a bucket width from the run's
/// span chosen so that at most `HTMLReportLimits.buckets` buckets cover it, counts and a latency
/// histogram per bucket. Its memory is fixed by the bucket count, not by the attempts.
struct SeriesBuilder {
    /// Whole widths people read at a glance, from a second to a day; beyond, whole days.
    static let widths: [Int64] = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    ].map { $0 * 1000 }

    let start: Int64
    let end: Int64
    let width: Int64
    private var buckets: [SeriesBucket]
    private var latencies: [LatencyHistogram]
    private var pacerSamples = 0

    /// `start` and `end` in milliseconds since 1970; an attempt outside them goes to the nearest end.
    init(start: Int64, end: Int64, maximumBuckets: Int = HTMLReportLimits.buckets) {
        self.start = start
        self.end = max(end, start + 1)
        let span = self.end - start
        let needed = (span + Int64(maximumBuckets) - 1) / Int64(maximumBuckets)
        let day: Int64 = 86_400_000
        let width = Self.widths.first { $0 >= needed } ?? ((needed + day - 1) / day) * day
        self.width = width
        let count = Int((span + width - 1) / width)
        buckets = (0..<count).map { index in
            let covered = min(width, span - Int64(index) * width)
            return SeriesBucket(seconds: Double(covered) / 1000)
        }
        latencies = Array(repeating: LatencyHistogram(), count: count)
    }

    private func index(of milliseconds: Int64) -> Int {
        Int(min(max((milliseconds - start) / width, 0), Int64(buckets.count - 1)))
    }

    mutating func add(_ sample: AttemptSample) {
        let slot = index(of: sample.startedAtMilliseconds)
        buckets[slot].requests[RequestClass.of(outcome: sample.outcome, httpStatus: sample.httpStatus).rawValue] += 1
        if let duration = sample.durationMilliseconds { latencies[slot].add(duration) }
    }

    /// A pacer sample holds until the next: each bucket shows the last one taken in or before it.
    mutating func add(_ sample: PacerSample) {
        let slot = index(of: sample.atMilliseconds)
        buckets[slot].sendRateLimit = sample.sendRateLimit
        buckets[slot].concurrency = sample.concurrency
        pacerSamples += 1
    }

    func finish(rateOption: Double?, concurrencyOption: Int?) -> RunSeries {
        var buckets = buckets
        var rate: Double?
        var concurrency: Int?
        for index in buckets.indices {
            let latency = latencies[index]
            buckets[index].p50 = latency.percentile(0.5)
            buckets[index].p90 = latency.percentile(0.9)
            buckets[index].p99 = latency.percentile(0.99)
            guard pacerSamples > 0 else { continue }
            if buckets[index].concurrency != nil {
                rate = buckets[index].sendRateLimit
                concurrency = buckets[index].concurrency
            } else {
                buckets[index].sendRateLimit = rate
                buckets[index].concurrency = concurrency
            }
        }
        var series = RunSeries(startMilliseconds: start, bucketMilliseconds: width, buckets: buckets)
        series.hasPacerSamples = pacerSamples > 0
        series.rateOption = rateOption
        series.concurrencyOption = concurrencyOption
        return series
    }
}
