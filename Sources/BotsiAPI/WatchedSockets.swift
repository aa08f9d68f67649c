/// What the driver's epoll set holds: each socket curl asked it to watch, and for what.
///
/// When a transfer ends, curl keeps its connection for the next one and says the socket is no
/// longer needed; the next transfer on it asks for it again. Taking it out of the epoll set and
/// putting it back cost two system calls a request. A socket watched for input only stays in the
/// set instead, parked: the next transfer wants it for input again, which needs no call at all.
/// A parked socket that reports anything was closed (or written to) by the server while idle: it
/// leaves the set then, and curl finds the connection dead when it next picks it. curl closes its
/// sockets through the driver (`CURLOPT_CLOSESOCKETFUNCTION`), so a closed socket leaves the table
/// and a reused descriptor number starts afresh.
struct WatchedSockets {
    /// The epoll call a change needs.
    enum Change: Equatable {
        case none, add, modify, remove
    }

    /// curl's `CURL_POLL_IN`: the only interest a socket keeps while parked (one watched for output
    /// would report ready at once, and forever).
    static let input: Int32 = 1

    private var watched: [Int32: (interest: Int32, parked: Bool)] = [:]

    /// curl wants `socket` watched for `interest` (its `CURL_POLL_IN`, `_OUT` or `_INOUT` bits).
    mutating func want(_ socket: Int32, for interest: Int32) -> Change {
        let current = watched.updateValue((interest, false), forKey: socket)
        guard let current else { return .add }
        return current.interest == interest ? .none : .modify
    }

    /// curl no longer needs `socket` (`CURL_POLL_REMOVE`).
    mutating func release(_ socket: Int32) -> Change {
        guard let current = watched[socket] else { return .none }
        if current.interest == Self.input {
            watched[socket] = (current.interest, true)
            return .none
        }
        watched[socket] = nil
        return .remove
    }

    /// Whether `socket` is parked; if it is, it leaves the table (the caller removes it from the set).
    mutating func takeParked(_ socket: Int32) -> Bool {
        guard watched[socket]?.parked == true else { return false }
        watched[socket] = nil
        return true
    }

    /// curl closes `socket`; closing it takes it out of the epoll set.
    mutating func closed(_ socket: Int32) {
        watched[socket] = nil
    }

    var count: Int { watched.count }
    var parkedCount: Int { watched.values.count(where: \.parked) }
}
