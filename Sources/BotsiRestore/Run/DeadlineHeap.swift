/// Row timers as one binary min-heap of deadlines: the runner arms one timer for the earliest
/// instead of one per waiting row. Equal deadlines come due in the order they were pushed.
struct DeadlineHeap {
    struct Timer: Equatable {
        let deadline: Double
        let sequence: Int64
        /// Push order, so that equal deadlines keep it.
        fileprivate let order: Int64
    }

    private var timers: [Timer] = []
    private var pushes: Int64 = 0

    var count: Int { timers.count }
    var isEmpty: Bool { timers.isEmpty }
    /// The earliest timer.
    var first: Timer? { timers.first }

    mutating func push(_ sequence: Int64, at deadline: Double) {
        timers.append(Timer(deadline: deadline, sequence: sequence, order: pushes))
        pushes += 1
        var child = timers.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.isEarlier(timers[child], timers[parent]) else { break }
            timers.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func popFirst() -> Timer? {
        guard !timers.isEmpty else { return nil }
        timers.swapAt(0, timers.count - 1)
        let first = timers.removeLast()
        var parent = 0
        while true {
            let left = parent * 2 + 1
            let right = left + 1
            var earliest = parent
            if left < timers.count && Self.isEarlier(timers[left], timers[earliest]) { earliest = left }
            if right < timers.count && Self.isEarlier(timers[right], timers[earliest]) { earliest = right }
            guard earliest != parent else { break }
            timers.swapAt(parent, earliest)
            parent = earliest
        }
        return first
    }

    mutating func removeAll() { timers.removeAll() }

    private static func isEarlier(_ lhs: Timer, _ rhs: Timer) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.order < rhs.order
    }
}
