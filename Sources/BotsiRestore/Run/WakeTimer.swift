import Dispatch

/// One timer on the run's queue for the scheduler's next wake-up (a retry coming due, the pacer's
/// next slot), instead of one per waiting row. Owned by the run (its state is the run's), so
/// it needs no lock: its handler enters the run, which calls `fired()` first.
struct WakeTimer {
    private let source: DispatchSourceTimer
    private var armedAt: Double?

    init(queue: DispatchQueue) {
        source = DispatchSource.makeTimerSource(queue: queue)
        // Idle until armed; a source must be resumed before it may be released.
        source.schedule(deadline: .distantFuture)
        source.resume()
    }

    func setHandler(_ fire: @escaping @Sendable () -> Void) { source.setEventHandler(handler: fire) }

    /// Fires at `deadline` (monotonic seconds, as `monotonicSeconds()`), in place of any earlier arming.
    mutating func arm(at deadline: Double) {
        guard deadline != armedAt else { return }
        armedAt = deadline
        let nanoseconds = UInt64(max(1, (deadline * 1_000_000_000).rounded(.up)))
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: nanoseconds), leeway: .nanoseconds(0))
    }

    /// The timer fired: the next arming, even at the same instant, schedules it again.
    mutating func fired() { armedAt = nil }

    func cancel() { source.cancel() }
}
