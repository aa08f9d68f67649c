import BotsiAPI
import Dispatch
import Synchronization

/// Hands results from the curl thread to the runner's queue in batches: one hop to the queue
/// per batch instead of a thread wake-up per request.
final class ResultHandOff: Sendable {
    private let arrivals = Mutex<[RestoreResult]>([])
    private let queue: DispatchQueue
    private let handle: @Sendable ([RestoreResult]) -> Void

    /// `handle` runs on `queue`, once per batch, with the results in arrival order.
    init(queue: DispatchQueue, handle: @escaping @Sendable ([RestoreResult]) -> Void) {
        self.queue = queue
        self.handle = handle
    }

    /// Called on the curl thread.
    func deliver(_ result: RestoreResult) {
        let first = arrivals.withLock { arrivals in
            arrivals.append(result)
            return arrivals.count == 1
        }
        guard first else { return }
        queue.async { [self] in
            let batch = arrivals.withLock { arrivals in
                let batch = arrivals
                arrivals.removeAll(keepingCapacity: true)
                return batch
            }
            handle(batch)
        }
    }
}
