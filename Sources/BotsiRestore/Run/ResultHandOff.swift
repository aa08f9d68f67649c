import BotsiAPI
import Synchronization

/// Hands results from the curl thread to the run in batches: one hop onto the run's queue per
/// batch instead of a thread wake-up per request. The client exists before the run it reports
/// to (setup makes it), so the run attaches itself before it sends anything.
final class ResultHandOff: Sendable {
    private struct State {
        var arrivals: [RestoreResult] = []
        var post: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// `post` is called (on the curl thread) when results arrive and none were waiting; it hops
    /// onto the run's queue and calls `takeBatch()` there.
    func attach(post: @escaping @Sendable () -> Void) {
        let waiting = state.withLock { state in
            state.post = post
            return !state.arrivals.isEmpty
        }
        if waiting { post() }
    }

    /// Called on the curl thread.
    func deliver(_ result: RestoreResult) {
        let post = state.withLock { state -> (@Sendable () -> Void)? in
            state.arrivals.append(result)
            return state.arrivals.count == 1 ? state.post : nil
        }
        post?()
    }

    /// The results that arrived since the last batch, in arrival order.
    func takeBatch() -> [RestoreResult] {
        state.withLock { state in
            let batch = state.arrivals
            state.arrivals.removeAll(keepingCapacity: true)
            return batch
        }
    }
}
