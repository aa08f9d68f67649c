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
