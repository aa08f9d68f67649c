import Dispatch

/// The run's serial executor: a Dispatch queue whose isolation the runtime checks. The run's state
/// lives in the `ActiveRun` actor that runs on it; curl, timer and signal callbacks enter it with
/// `ActiveRun.enter`, which hops onto the queue and asserts it is there: `assumeIsolated` calls
/// `checkIsolated`, which traps when run state is touched off the queue. (A `DispatchSerialQueue`
/// cannot be an executor on Linux, hence this small one.)
final class RunExecutor: SerialExecutor {
    let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
    }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
