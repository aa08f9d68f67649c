import Dispatch

/// A `ServerLoop`'s deadlines (reply delays, stall ends, trickle ticks, idle timeouts): one Dispatch
/// timer source over a min-heap, instead of a timer per reply, so 256 connections at 50 ms cost a heap
/// push and pop per request, not a kernel timer each. Used only on the loop's queue.
struct LoopTimers {
    private var heap = DeadlineHeap()
    private var source: DispatchSourceTimer?
    private var armedDeadline: UInt64 = .max
    /// Moving average of how late the source fires, in nanoseconds.
    private var lateness: UInt64 = 0

    /// Creates the timer source on `queue`; `fire` runs there when a deadline may be due.
    mutating func start(on queue: DispatchQueue, fire: @escaping () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler(handler: fire)
        // Fires once, soon, for nothing: Dispatch opens its timer descriptor the first time it arms a timer
        // for the future, and at the descriptor limit that fails silently: the accept back-off's timer
        // would then never fire.
        timer.schedule(deadline: .now() + .milliseconds(100), leeway: .nanoseconds(0))
        source = timer
        timer.resume()
    }

    /// Cancels the source and forgets every deadline.
    mutating func stop() {
        source?.cancel()
        source = nil
        heap = DeadlineHeap()
    }

    /// When a reply (or a stall's end) delayed `nanoseconds` from `arrival` (or now) is due. The timer
    /// source wakes a little late (the wake-up travels through Dispatch's event thread to the loop's
    /// queue), so the deadline is brought forward by the lateness measured so far, capped at a tenth of
    /// the delay: replies then leave on average after the configured latency rather than a millisecond
    /// after it, which 256 connections at 50 ms notice.
    func replyDeadline(after nanoseconds: UInt64, from arrival: UInt64?) -> UInt64 {
        let now = DispatchTime.now().uptimeNanoseconds
        let start = min(arrival ?? now, now)
        let compensation = min(lateness, nanoseconds / 10)
        return max(start &+ nanoseconds &- compensation, now)
    }

    mutating func push(_ deadline: Deadline) {
        heap.push(deadline)
        if deadline.time < armedDeadline { arm(deadline.time) }
    }

    /// Called first when the source fires: deadlines pushed while the due ones are handled arm it anew.
    mutating func disarm() {
        armedDeadline = .max
    }

    /// The next deadline due by `now`, taken off the heap, or nil when none is.
    mutating func popDue(now: UInt64) -> Deadline? {
        guard let next = heap.peek(), next.time <= now + 100_000 else { return nil }
        heap.pop()
        // Moving average of how late timers fire (1/16 weight for the newest sample).
        let late = now > next.time ? now - next.time : 0
        lateness = lateness - lateness / 16 + min(late, 5_000_000) / 16
        return next
    }

    /// Called last when the source fires: arms it for the earliest deadline left.
    mutating func rearm() {
        if let next = heap.peek() { arm(next.time) }
    }

    private mutating func arm(_ deadline: UInt64) {
        armedDeadline = deadline
        source?.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .nanoseconds(0))
    }
}

struct Deadline {
    enum Kind {
        /// A reply's delay, a stall's end or a trickle's tick; stale once the connection's generation moved on.
        case reply
        /// The connection's idle deadline (see `ServerLoop.startIdleClock`).
        case idle
    }

    let time: UInt64
    let kind: Kind
    let connectionId: UInt64
    let generation: UInt64
}

/// A binary min-heap of deadlines; stale entries (closed connections, replies already sent) are skipped
/// when they come due instead of being searched out.
struct DeadlineHeap {
    private var items: [Deadline] = []

    func peek() -> Deadline? {
        items.first
    }

    mutating func push(_ item: Deadline) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].time < items[parent].time else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].time < items[smallest].time { smallest = left }
            if right < items.count, items[right].time < items[smallest].time { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
