/// Events per second over the last two seconds, in 100 ms buckets. The rate divides by the time
/// the buckets really cover (the current bucket only as far as it has run, and never more than
/// since the first event), so a steady rate reads as itself rather than up to a tenth low.
struct SendMeter {
    static let bucketCount = 20
    private var buckets = [Int](repeating: 0, count: bucketCount)
    private var currentBucket: Int64 = 0
    private var firstAt: Double?

    mutating func record(now: Double) {
        advance(to: now)
        if firstAt == nil { firstAt = now }
        buckets[Int(currentBucket % Int64(Self.bucketCount))] += 1
    }

    mutating func ratePerSecond(now: Double) -> Double {
        advance(to: now)
        return Double(buckets.reduce(0, +)) / span(now: now)
    }

    /// The rate over the last `seconds` only (at most two): what the latest change did.
    mutating func ratePerSecond(now: Double, over seconds: Double) -> Double {
        let total = count(now: now, over: seconds)
        let covered = Double(bucketsCovering(seconds) - 1) / 10 + (now * 10 - (now * 10).rounded(.down)) / 10
        return Double(total) / max(0.1, min(covered, now - (firstAt ?? now)))
    }

    /// Events in the last `seconds` (at most two, in whole 100 ms buckets).
    mutating func count(now: Double, over seconds: Double) -> Int {
        advance(to: now)
        var total = 0
        for back in 0..<bucketsCovering(seconds) {
            total += buckets[Int((currentBucket - Int64(back) + Int64(Self.bucketCount) * 2) % Int64(Self.bucketCount))]
        }
        return total
    }

    private func bucketsCovering(_ seconds: Double) -> Int {
        max(1, min(Self.bucketCount, Int((seconds * 10).rounded(.up))))
    }

    /// The seconds the rate is measured over: up to two, less early in a run.
    func span(now: Double) -> Double {
        let covered = Double(Self.bucketCount - 1) / 10 + (now * 10 - (now * 10).rounded(.down)) / 10
        return max(0.1, min(covered, now - (firstAt ?? now)))
    }

    private mutating func advance(to now: Double) {
        let bucket = Int64(now * 10)
        let count = Int64(Self.bucketCount)
        if bucket - currentBucket >= count {
            buckets = [Int](repeating: 0, count: Self.bucketCount)
        } else if bucket > currentBucket {
            for index in (currentBucket + 1)...bucket { buckets[Int(index % count)] = 0 }
        }
        currentBucket = max(currentBucket, bucket)
    }
}
