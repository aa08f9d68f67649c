/// When each request on the wire left, so progress can say how many slots wait on slow replies:
/// a server that holds a reply keeps its slot busy until `--timeout`, and throughput falls with
/// nothing else to show why. Pure: instants are monotonic seconds passed in.
struct ReplyWaits {
    private var sentAt: [Int64: Double] = [:]

    /// A wait longer than this is slow: 10 s, or half the timeout when that is shorter.
    static func slowAfter(timeout: Double) -> Double { min(10, timeout / 2) }

    mutating func sent(_ tag: Int64, at now: Double) { sentAt[tag] = now }
    mutating func replied(_ tag: Int64) { sentAt[tag] = nil }

    /// What progress shows of the waits at `now` under `--timeout`.
    func report(now: Double, timeout: Double) -> SlowReplies {
        let slowAfter = Self.slowAfter(timeout: timeout)
        let (count, longest) = slow(now: now, threshold: slowAfter)
        return SlowReplies(count: count, longest: longest, slowAfter: slowAfter, timeout: timeout)
    }

    /// Requests waiting longer than `threshold` at `now`, and the longest wait of all.
    func slow(now: Double, threshold: Double) -> (count: Int, longest: Double) {
        var count = 0
        var longest = 0.0
        for start in sentAt.values {
            let wait = now - start
            if wait > threshold { count += 1 }
            longest = max(longest, wait)
        }
        return (count, longest)
    }
}

/// Requests on the wire longer than `slowAfter` seconds, the longest wait, and the timeout.
struct SlowReplies: Equatable {
    var count = 0
    var longest: Double = 0
    var slowAfter: Double = 10
    var timeout: Double = 30
}
