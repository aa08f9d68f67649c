import BotsiBasics
import Foundation

/// The kinds of limiter the simulator can be, as real services build them. Raw values are what
/// `--limit-kind` accepts. Each admits `quota` requests per window in the long run; they differ in
/// the bursts they let through and in how a burst is paid for afterwards.
public enum RateLimiterKind: String, Sendable, CaseIterable {
    /// A log of admission times: at most `quota` in any window, wherever it starts. The strictest: a
    /// burst is paid for exactly one window later, when its admissions leave the log.
    case sliding
    /// A counter per window, windows back to back from the limiter's start: at most `quota` in each.
    /// A burst at the end of one window and another at the start of the next admit twice the quota
    /// within one window's time.
    case fixed
    /// A token bucket holding one window's quota (the burst), refilled evenly at `quota` per window;
    /// each admission takes a token.
    case bucket
}

/// The `limitRate` limiter. A refused request takes no quota, so the long-run rate admitted is
/// exactly `quota / window` whatever the kind. `quota` may change while it runs (the pacing model
/// halves and doubles a limit mid-run); admissions already made keep counting.
struct RateLimiter: Sendable {
    struct Outcome {
        let admitted: Bool
        /// Requests that would still be admitted now, after this one.
        let remaining: Int
        /// Until `remaining` next grows: the oldest admission leaves the log, the window ends, or the
        /// bucket holds one more whole token.
        let resetNanoseconds: UInt64
    }

    static let largestQuota = 1_000_000

    let kind: RateLimiterKind
    private(set) var quota: Int
    let windowNanoseconds: UInt64
    /// `sliding`: admission times in a ring, oldest at `oldest`; the ring grows with the quota.
    private var times: [UInt64] = []
    private var oldest = 0
    private var count = 0
    /// `fixed`: the window in progress (its index from the clock's zero) and its admissions.
    private var windowIndex: UInt64 = 0
    /// `bucket`: whole and fractional tokens, and when they were last topped up.
    private var tokens: Double
    private var refilledAt: UInt64?

    init(kind: RateLimiterKind = .sliding, quota: Int, windowSeconds: Int) {
        self.kind = kind
        self.quota = max(1, min(quota, Self.largestQuota))
        windowNanoseconds = UInt64(max(1, windowSeconds)) * 1_000_000_000
        tokens = Double(self.quota)
        if kind == .sliding { times = [UInt64](repeating: 0, count: self.quota) }
    }

    /// `now` must not go backwards between calls (the core reads the clock under its lock).
    mutating func admit(now: UInt64) -> Outcome {
        switch kind {
        case .sliding: admitSliding(now: now)
        case .fixed: admitFixed(now: now)
        case .bucket: admitBucket(now: now)
        }
    }

    /// A new quota per window from `now` on. A sliding log keeps its admissions (a halved limit
    /// admits nothing until enough of them age out), a fixed window its count, a bucket its tokens
    /// (at most the new burst).
    mutating func setQuota(_ newQuota: Int, now: UInt64) {
        let newQuota = max(1, min(newQuota, Self.largestQuota))
        switch kind {
        case .sliding:
            if newQuota > times.count {
                let ordered = (0..<count).map { times[(oldest + $0) % times.count] }
                times = ordered + [UInt64](repeating: 0, count: newQuota - ordered.count)
                oldest = 0
            }
        case .fixed: break
        case .bucket:
            refill(now: now)
            tokens = min(tokens, Double(newQuota))
        }
        quota = newQuota
    }

    private mutating func admitSliding(now: UInt64) -> Outcome {
        while count > 0, times[oldest] &+ windowNanoseconds <= now {
            oldest = (oldest + 1) % times.count
            count -= 1
        }
        let admitted = count < quota
        if admitted {
            times[(oldest + count) % times.count] = now
            count += 1
        }
        // `count` is at least 1 here: this request was admitted, or `quota` others fill the window.
        return Outcome(
            admitted: admitted, remaining: max(0, quota - count),
            resetNanoseconds: times[oldest] &+ windowNanoseconds - now)
    }

    private mutating func admitFixed(now: UInt64) -> Outcome {
        let index = now / windowNanoseconds
        if index != windowIndex {
            windowIndex = index
            count = 0
        }
        let admitted = count < quota
        if admitted { count += 1 }
        return Outcome(
            admitted: admitted, remaining: max(0, quota - count),
            resetNanoseconds: (index + 1) * windowNanoseconds - now)
    }

    private mutating func admitBucket(now: UInt64) -> Outcome {
        refill(now: now)
        let admitted = tokens >= 1
        if admitted { tokens -= 1 }
        let whole = tokens.rounded(.down)
        let nanosecondsPerToken = Double(windowNanoseconds) / Double(quota)
        return Outcome(
            admitted: admitted, remaining: Int(whole),
            resetNanoseconds: UInt64(((whole + 1 - tokens) * nanosecondsPerToken).rounded(.up)))
    }

    private mutating func refill(now: UInt64) {
        if let refilledAt, now > refilledAt {
            let elapsed = Double(now - refilledAt)
            tokens = min(Double(quota), tokens + elapsed * Double(quota) / Double(windowNanoseconds))
        }
        refilledAt = max(refilledAt ?? now, now)
    }
}

/// `liveRate`: the app's own traffic on the limit, which a batch job cannot see. Its users arrive
/// at random, so the simulator spends these requests at Poisson times (independent exponential
/// gaps, mean 1/rate, from a seeded stream) and counts the ones its limiter refused: what the
/// app's users would have seen answered 429. Evenly spaced requests would rehearse a kinder app
/// than any real one: a sender with a fixed period finds its own admissions of a window ago
/// leaving just as it arrives, and keeps its slots however full the window is; one whose period is
/// a few nanoseconds short of dividing the window (30/s rounded to whole nanoseconds) loses every
/// one of them to the batch instead.
struct LiveTraffic: Sendable {
    let rate: Double
    private var random: SplitMix64
    /// The next request's time, kept fractional so the gaps do not drift by their rounding.
    private var nextAt: Double
    private(set) var requests = 0
    private(set) var refused = 0

    init(rate: Double, startingAt start: UInt64, seed: UInt64) {
        self.rate = rate
        random = SplitMix64(seed: seed)
        nextAt = Double(start)
        nextAt += gap()
    }

    /// Spends the live requests due by `now` from `limiter`, each at its own time and in order, so
    /// the limiter sees them before a request that arrives at `now`.
    mutating func catchUp(to now: UInt64, limiter: inout RateLimiter) {
        while UInt64(nextAt) <= now {
            requests += 1
            if !limiter.admit(now: UInt64(nextAt)).admitted { refused += 1 }
            nextAt += gap()
        }
    }

    /// An exponential gap in nanoseconds (1 − u is in (0, 1], so the logarithm is finite).
    private mutating func gap() -> Double {
        -log(1 - random.nextUnit()) / rate * 1e9
    }
}
