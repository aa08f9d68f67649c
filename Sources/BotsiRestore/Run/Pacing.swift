import BotsiAPI
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
    /// Sends taken without a rate in the last second: the burst a newly learned rate must pay for.
    private var burstStartedAt = -Double.infinity
    private var burstSends = 0

    /// Takes a send slot at `now` under `rate` (nil = unlimited); false when it is too early.
    mutating func take(now: Double, rate: Double?) -> Bool {
        guard now >= nextSendAt else { return false }
        guard let rate, rate > 0 else {
            if now - burstStartedAt > 1 {
                burstStartedAt = now
                burstSends = 0
            }
            burstSends += 1
            return true
        }
        nextSendAt = max(nextSendAt, now - Self.allowedLag) + 1 / rate
        return true
    }

    /// A rate just became known (from a server's rate-limit fields): the unpaced sends of the last
    /// second are charged as if they had been paced at it, so they and the paced ones after them
    /// never together exceed the rate over one window.
    mutating func chargeUnpacedBurst(rate: Double) {
        guard rate > 0, burstSends > 0 else { return }
        nextSendAt = max(nextSendAt, burstStartedAt + Double(burstSends) / rate)
        burstSends = 0
    }

    /// No send before `time` (a server's Retry-After after a burst).
    mutating func hold(until time: Double?) {
        guard let time else { return }
        nextSendAt = max(nextSendAt, time)
    }
}

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

/// Adaptive throttling in the manner of the AWS SDKs' adaptive retry mode, tuned to sit within a
/// hair of a limit rather than well under it. A throttling reply (a share of 429s, or a burst of
/// 503s) cuts the send rate: after a 429 to just under the rate the service accepted meanwhile
/// (a limiter refusing the excess accepts exactly its limit), after 503s multiplicatively; quiet
/// seconds raise it again, slowly near the rate that last drew a 429, faster away from it, never
/// above `--rate`. A server that states its limit in rate-limit fields is paced by them instead.
struct AdaptiveThrottle {
    static let decreaseFactor = 0.8
    /// The share of the accepted rate a 429 cut settles at, and of a stated limit the pacer uses.
    static let limitShare = 0.99
    static let fastIncrease = 1.05
    /// Near the rate that last drew a 429 the rate creeps, so that crossing the limit again costs a
    /// few 429s, not a storm.
    static let creepIncrease = 1.002
    /// Past that rate with no 429, the limit has grown: climb faster.
    static let probeIncrease = 1.02
    static let quietSeconds = 2.0
    static let unavailableBurst = 3
    static let unavailableShare = 0.25
    /// 429s must be at least this share of a second's replies to count: a real limiter answers
    /// more and more of them as the rate climbs past it, while a stray 429 now and then (or a
    /// constant trickle unrelated to our rate) would otherwise ratchet the rate down forever.
    static let tooManyShare = 0.03
    /// Near a limit already found, a smaller share counts: the creep crosses it by a fraction.
    static let tooManyShareNearLimit = 0.01
    /// How much a limit found earlier still counts at the next 429.
    static let limitDecay = 0.98
    /// The longest pause a first burst's Retry-After buys.
    static let longestBurstPause = 2.0
    /// A cut never goes below this share of the best accepted rate of the last minute.
    static let floorShare = 0.5

    let enabled: Bool
    let rateCap: Double?
    let concurrencyCap: Int
    /// The adaptive rate limit in force; nil while nothing has throttled the run.
    private(set) var rate: Double?
    /// The rate the server's rate-limit fields allow (times `limitShare`); nil until a reply states it.
    private(set) var advertisedRate: Double?
    private(set) var concurrency: Int
    private(set) var events = 0
    private(set) var lowestRate: Double?
    /// No send before this: the first burst's 429 said when the service takes requests again.
    private(set) var holdUntil: Double?
    private var lastDecreaseAt = -Double.infinity
    private var lastThrottleAt = -Double.infinity
    private var lastIncreaseAt = -Double.infinity
    private var recentUnavailable: [Double] = []
    private var recentTooMany: [Double] = []
    private var acceptedPeaks: [(time: Double, rate: Double)] = []
    /// The accepted rate when the last 429 cut came: where the upstream limit lies.
    private var lastThrottledRate: Double?
    /// The longest reset seen, in whole seconds: the window, for servers that do not state it.
    private var longestReset = 0.0

    init(enabled: Bool, rateCap: Double?, concurrencyCap: Int) {
        self.enabled = enabled
        self.rateCap = rateCap
        self.concurrencyCap = concurrencyCap
        concurrency = concurrencyCap
    }

    /// The send rate limit now: the lowest of the adaptive one, the advertised one and the cap.
    var effectiveRate: Double? {
        [rate, advertisedRate, rateCap].compactMap { $0 }.min()
    }

    var isThrottled: Bool { rate != nil && (rateCap == nil || rate! < rateCap!) }

    /// A reply's rate-limit fields. Returns true when they first state a rate: the caller charges
    /// what it sent before at that rate.
    mutating func advertised(_ info: RateLimitInfo) -> Bool {
        guard enabled else { return false }
        if let reset = info.resetSeconds { longestReset = max(longestReset, reset.rounded(.down)) }
        guard let quota = info.quota else { return false }
        let window = info.windowSeconds ?? max(1, longestReset)
        let stated = Double(quota) / window * Self.limitShare
        let first = advertisedRate == nil
        advertisedRate = max(stated, 0.01)
        return first
    }

    /// A 429. `acceptedRate` is how many replies per second the service answered without
    /// throttling over the last `acceptedSpan` seconds — the best estimate of its limit — and
    /// `latency` the typical request duration, which sets the concurrency that rate needs.
    /// `retryAfter` is the reply's, in seconds.
    mutating func tooManyRequests(
        now: Double, acceptedRate: Double, latency: Double, acceptedSpan: Double = 1, retryAfter: Double? = nil
    ) {
        recentTooMany.append(now)
        recentTooMany.removeAll { now - $0 > 1 }
        let count = Double(recentTooMany.count)
        let share = lastThrottledRate == nil ? Self.tooManyShare : Self.tooManyShareNearLimit
        guard count >= share * (count + acceptedRate), enabled else { return }
        lastThrottleAt = now
        guard now - lastDecreaseAt >= 1 else { return }
        var estimate = acceptedRate
        let firstBurst = rate == nil && advertisedRate == nil
        if firstBurst {
            // The first burst: the service took what it allows in one window at once and refuses the
            // rest until the window moves on. Wait as it asks, and count that wait in the rate.
            let pause = min(retryAfter ?? 0, Self.longestBurstPause)
            if pause > 0 { holdUntil = now + pause }
            estimate = acceptedRate * acceptedSpan / (acceptedSpan + pause)
        }
        // A first burst's estimate is only a floor (the wait may be longer than the window): climb
        // fast from it until the limit shows itself in a steady run.
        // Near the limit a 429 can come from jitter at a rate just under it, when the accepted rate
        // reads low: the limit found before decays slowly rather than following such a reading down.
        if !firstBurst {
            estimate = max(estimate, (lastThrottledRate ?? 0) * Self.limitDecay)
            lastThrottledRate = estimate
        }
        // The cap is no evidence of where the limit lies; the rate in force is.
        let current = rate ?? advertisedRate ?? estimate
        // A limiter that refused everything for a while leaves the accepted rate near zero: never
        // cut below half the current rate at once.
        cut(now: now, to: min(current, max(estimate * Self.limitShare, current * 0.5)), latency: latency)
    }

    private mutating func cut(now: Double, to newRate: Double, latency: Double) {
        lastDecreaseAt = now
        events += 1
        let floor = (acceptedPeaks.map(\.rate).max() ?? 0) * Self.floorShare
        rate = max(0.5, floor, newRate)
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
        guard enabled, recentUnavailable.count >= Self.unavailableBurst,
            count >= Self.unavailableShare * (count + acceptedRate)
        else { return }
        recentUnavailable.removeAll()
        lastThrottleAt = now
        // One cut per second: the many 503s of one burst are one signal, not many.
        guard now - lastDecreaseAt >= 1 else { return }
        let base = max(1, min(rate ?? .infinity, max(acceptedRate, (rate ?? acceptedRate) * 0.5)))
        cut(now: now, to: base * Self.decreaseFactor, latency: latency)
    }

    /// Called several times a second: remember the accepted rate, and after a quiet spell raise
    /// the limits a little. A rate measured over less than a second (a run's first burst) is no peak.
    mutating func tick(now: Double, acceptedRate: Double, acceptedSpan: Double = 2) {
        acceptedPeaks.removeAll { now - $0.time > 60 }
        if acceptedSpan >= 1, acceptedPeaks.last.map({ now - $0.time >= 1 }) ?? true {
            acceptedPeaks.append((now, acceptedRate))
        }
        guard enabled, let current = rate, now - lastThrottleAt >= Self.quietSeconds,
            now - lastIncreaseAt >= 1
        else { return }
        lastIncreaseAt = now
        let raised: Double
        switch lastThrottledRate {
        case let limit? where current < limit * 0.97: raised = current * Self.fastIncrease + 0.5
        case let limit? where current < limit * 1.03: raised = current * Self.creepIncrease + 0.01
        case _?: raised = current * Self.probeIncrease + 0.1
        case nil: raised = current * Self.fastIncrease + 0.5
        }
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
