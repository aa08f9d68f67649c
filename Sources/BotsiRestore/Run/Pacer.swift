/// Spaces request starts about 1/rate apart. Unused time is not saved up beyond a few
/// milliseconds (to absorb timer lateness), so there is no burst at the start or after a pause:
/// upstream limits enforced over short windows punish bursts.
struct Pacer {
    static let allowedLag = 0.010
    private(set) var nextSendAt: Double = 0

    /// Takes a send slot at `now` under `rate` (nil = unlimited); false when it is too early.
    mutating func take(now: Double, rate: Double?) -> Bool {
        guard now >= nextSendAt else { return false }
        guard let rate, rate > 0 else { return true }
        nextSendAt = max(nextSendAt, now - Self.allowedLag) + 1 / rate
        return true
    }
}
