import Dispatch

/// Seconds on the monotonic clock: pacing must not jump when the wall clock does.
func monotonicSeconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
}
