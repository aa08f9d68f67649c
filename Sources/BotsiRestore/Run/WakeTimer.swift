import Dispatch

/// One timer on the runner's queue for the scheduler's next wake-up (a retry coming due, the
/// pacer's next slot), instead of one per waiting row. Used only on that queue, which is what
/// makes the `@unchecked Sendable` true.
final class WakeTimer: @unchecked Sendable {
    private let source: DispatchSourceTimer
    private var armedAt: Double?

    init(queue: DispatchQueue, fire: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.setEventHandler { [weak self] in
            self?.armedAt = nil
            fire()
        }
        // Idle until armed; a source must be resumed before it may be released.
        source.schedule(deadline: .distantFuture)
        source.resume()
    }

    /// Fires at `deadline` (monotonic seconds, as `monotonicSeconds()`), in place of any earlier arming.
    func arm(at deadline: Double) {
        guard deadline != armedAt else { return }
        armedAt = deadline
        let nanoseconds = UInt64(max(1, (deadline * 1_000_000_000).rounded(.up)))
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: nanoseconds), leeway: .nanoseconds(0))
    }

    func cancel() { source.cancel() }
}
