/// The `limitRate` limiter: a sliding-window log.
///
/// At most `quota` requests are admitted in any window of `windowNanoseconds`: a request at time `t` is
/// admitted when fewer than `quota` were admitted in the half-open interval `(t - window, t]`. A refused
/// request takes no quota. So the long-run rate is exactly `quota / window`, the largest burst is `quota`
/// back to back, and after a burst the next request is admitted as soon as the oldest admitted one is a
/// whole window old. The log holds at most `quota` times, in a ring.
struct RateLimiter: Sendable {
    struct Outcome {
        let admitted: Bool
        /// Requests that would still be admitted now, after this one.
        let remaining: Int
        /// Until the oldest admitted request leaves the window, i.e. until `remaining` next grows.
        let resetNanoseconds: UInt64
    }

    static let largestQuota = 1_000_000

    let quota: Int
    let windowNanoseconds: UInt64
    private var times: [UInt64]
    private var oldest = 0
    private var count = 0

    init(quota: Int, windowSeconds: Int) {
        self.quota = max(1, min(quota, Self.largestQuota))
        windowNanoseconds = UInt64(max(1, windowSeconds)) * 1_000_000_000
        times = [UInt64](repeating: 0, count: self.quota)
    }

    /// `now` must not go backwards between calls (the core reads the clock under its lock).
    mutating func admit(now: UInt64) -> Outcome {
        while count > 0, times[oldest] &+ windowNanoseconds <= now {
            oldest = (oldest + 1) % quota
            count -= 1
        }
        let admitted = count < quota
        if admitted {
            times[(oldest + count) % quota] = now
            count += 1
        }
        // `count` is at least 1 here: this request was admitted, or `quota` others fill the window.
        return Outcome(
            admitted: admitted, remaining: quota - count, resetNanoseconds: times[oldest] &+ windowNanoseconds - now)
    }
}
