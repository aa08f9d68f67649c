import Dispatch

/// Seconds on the monotonic clock: pacing must not jump when the wall clock does.
func monotonicSeconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
}

/// Spaces request starts about 1/rate apart. Unused time is not saved up beyond a few
/// milliseconds (to absorb timer lateness), so there is no burst at the start or after a pause:
/// upstream limits enforced over short windows punish bursts.
struct Pacer {
    static let allowedLag = 0.010
    private(set) var nextSendAt: Double = 0

    /// Takes a send slot at `now` under `rate` (nil = unlimited); false when it is too early.
    mutating func take(now: Double, rate: Double?) -> Bool {
        guard let rate, rate > 0 else { return true }
        guard now >= nextSendAt else { return false }
        nextSendAt = max(nextSendAt, now - Self.allowedLag) + 1 / rate
        return true
    }
}

/// Requests sent per second over the last second, in 100 ms buckets.
struct SendMeter {
    private var buckets = [Int](repeating: 0, count: 10)
    private var currentBucket: Int64 = 0

    mutating func record(now: Double) {
        advance(to: now)
        buckets[Int(currentBucket % 10)] += 1
    }

    mutating func ratePerSecond(now: Double) -> Double {
        advance(to: now)
        return Double(buckets.reduce(0, +))
    }

    private mutating func advance(to now: Double) {
        let bucket = Int64(now * 10)
        if bucket - currentBucket >= 10 {
            buckets = [Int](repeating: 0, count: 10)
        } else if bucket > currentBucket {
            for index in (currentBucket + 1)...bucket { buckets[Int(index % 10)] = 0 }
        }
        currentBucket = max(currentBucket, bucket)
    }
}

/// Adaptive throttling in the manner of the AWS SDKs' adaptive retry mode: a throttling reply
/// (429, or a burst of 503s) cuts the send rate and the concurrency multiplicatively; every quiet
/// second raises them a little, never above `--rate` / `--concurrency`. The job settles just under
/// the upstream limit instead of provoking a storm of 429s.
struct AdaptiveThrottle {
    static let decreaseFactor = 0.8
    /// Well below the rate that last drew a 429 the rate climbs back fast; near it, slowly.
    static let fastIncrease = 1.05
    static let slowIncrease = 1.005
    static let quietSeconds = 2.0
    static let unavailableBurst = 3
    static let unavailableShare = 0.25
    /// 429s must be at least this share of a second's replies to count: a real limiter answers
    /// more and more of them as the rate climbs past it, while a stray 429 now and then (or a
    /// constant trickle unrelated to our rate) would otherwise ratchet the rate down forever.
    static let tooManyShare = 0.03
    /// A cut never goes below this share of the best accepted rate of the last minute.
    static let floorShare = 0.5

    let enabled: Bool
    let rateCap: Double?
    let concurrencyCap: Int
    /// The adaptive rate limit in force; nil while nothing has throttled the run.
    private(set) var rate: Double?
    private(set) var concurrency: Int
    private(set) var events = 0
    private(set) var lowestRate: Double?
    private var lastDecreaseAt = -Double.infinity
    private var lastThrottleAt = -Double.infinity
    private var lastIncreaseAt = -Double.infinity
    private var recentUnavailable: [Double] = []
    private var recentTooMany: [Double] = []
    private var acceptedPeaks: [(time: Double, rate: Double)] = []
    /// The rate limit in force when the last throttle came: where the upstream limit lies.
    private var lastThrottledRate: Double?

    init(enabled: Bool, rateCap: Double?, concurrencyCap: Int) {
        self.enabled = enabled
        self.rateCap = rateCap
        self.concurrencyCap = concurrencyCap
        concurrency = concurrencyCap
    }

    /// The send rate limit now: the adaptive one, never above the cap.
    var effectiveRate: Double? {
        switch (rate, rateCap) {
        case (let adaptive?, let cap?): return min(adaptive, cap)
        case (let adaptive?, nil): return adaptive
        case (nil, let cap): return cap
        }
    }

    var isThrottled: Bool { rate != nil && (rateCap == nil || rate! < rateCap!) }

    /// A 429. `acceptedRate` is how many replies per second the service answered without
    /// throttling over the last second — the best estimate of its limit — and `latency` the
    /// typical request duration, which sets the concurrency that rate needs.
    mutating func tooManyRequests(now: Double, acceptedRate: Double, latency: Double) {
        recentTooMany.append(now)
        recentTooMany.removeAll { now - $0 > 1 }
        let count = Double(recentTooMany.count)
        if count >= Self.tooManyShare * (count + acceptedRate) {
            throttled(now: now, acceptedRate: acceptedRate, latency: latency)
        }
    }

    /// A signal to slow down: cut the rate (at most once a second) and the concurrency.
    private mutating func throttled(now: Double, acceptedRate: Double, latency: Double) {
        guard enabled else { return }
        lastThrottleAt = now
        // One cut per second: the many 429s of one burst are one signal, not many.
        guard now - lastDecreaseAt >= 1 else { return }
        lastDecreaseAt = now
        events += 1
        // A burst can leave a sliding-window limiter refusing everything for a while, so the accepted
        // rate of the last second may be near zero: never cut below half the current rate at once.
        let base = max(1, min(rate ?? .infinity, max(acceptedRate, (rate ?? acceptedRate) * 0.5)))
        lastThrottledRate = base
        let floor = (acceptedPeaks.map(\.rate).max() ?? 0) * Self.floorShare
        rate = max(0.5, floor, base * Self.decreaseFactor)
        // Keep enough requests in flight for that rate at the observed latency, and no more.
        let needed = Int((rate! * max(latency, 0.001) * 2).rounded(.up)) + 1
        concurrency = max(1, min(concurrency, needed))
        lowestRate = min(lowestRate ?? .infinity, rate!)
    }

    /// A 503: only a burst of them counts as throttling — at least a few within a second, and a
    /// large share of that second's replies. A steady trickle of 503s among many successes is
    /// an unreliable service, which retries and the retry budget handle, not an overloaded one.
    mutating func unavailable(now: Double, acceptedRate: Double, latency: Double) {
        recentUnavailable.append(now)
        recentUnavailable.removeAll { now - $0 > 1 }
        let count = Double(recentUnavailable.count)
        if recentUnavailable.count >= Self.unavailableBurst && count >= Self.unavailableShare * (count + acceptedRate) {
            recentUnavailable.removeAll()
            throttled(now: now, acceptedRate: acceptedRate, latency: latency)
        }
    }

    /// Called several times a second: remember the accepted rate, and after a quiet spell raise
    /// the limits a little.
    mutating func tick(now: Double, acceptedRate: Double) {
        acceptedPeaks.removeAll { now - $0.time > 60 }
        if acceptedPeaks.last.map({ now - $0.time >= 1 }) ?? true {
            acceptedPeaks.append((now, acceptedRate))
        }
        guard enabled, let current = rate, now - lastThrottleAt >= Self.quietSeconds,
            now - lastIncreaseAt >= 1
        else { return }
        lastIncreaseAt = now
        let nearLimit = lastThrottledRate.map { current >= $0 * 0.9 } ?? false
        let raised = current * (nearLimit ? Self.slowIncrease : Self.fastIncrease) + (nearLimit ? 0.05 : 0.5)
        if let cap = rateCap, raised >= cap {
            rate = cap
        } else {
            rate = raised
        }
        if concurrency < concurrencyCap {
            concurrency = min(concurrencyCap, concurrency + max(1, concurrency / 10))
        }
    }
}

/// Which of N machines handles a profile: FNV-1a (64-bit) of the profileId's UTF-8 bytes, modulo
/// N. Stable across versions and platforms, so every row of one profile lands on one shard.
public func shardIndex(profileId: String, shardCount: Int) -> Int {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in profileId.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    return Int(hash % UInt64(shardCount))
}
