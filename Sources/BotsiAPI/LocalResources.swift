import Foundation
import Glibc

/// A failed system call for something the client needs from the machine, as an error that names
/// the resource and what usually lacks: descriptors (with the limit), memory, threads.
func localResourceError(_ what: String, _ code: Int32) -> ClientError {
    ClientError("Could not start the client: \(what): \(localResourceReason(code)).", kind: .localResource)
}

/// `strerror(code)` with what usually lacks: "Too many open files (this process may have …)".
func localResourceReason(_ code: Int32) -> String {
    let reason = String(cString: strerror(code))
    let hint: String
    switch code {
    case EMFILE:
        let limit = DescriptorLimit.current.map { "at most \($0) files" } ?? "no more files"
        hint = "this process may have \(limit) open; raise the limit (ulimit -n) or lower --concurrency"
    case ENFILE:
        hint = "the system's table of open files is full; close other programs' files or raise fs.file-max"
    case ENOMEM, EAGAIN:
        hint = "the machine is short of memory or threads (ulimit -v, ulimit -u, a container's limits)"
    default:
        hint = "a resource of this machine ran out"
    }
    return "\(reason) (\(hint))"
}

/// RLIMIT_NOFILE as the process sees it.
public enum DescriptorLimit {
    /// The soft limit: how many descriptors the process may have open; nil when unlimited or unknown.
    public static var current: Int? {
        var limit = rlimit()
        // RLIM_INFINITY is all ones, which Swift cannot import as a constant; an Int cannot hold it.
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else {
            return nil
        }
        return Int(limit.rlim_cur)
    }
}

/// The driver's thread, made with pthread_create so that a failure (no memory for its stack, the
/// thread limit) is an error the run reports, not a thread that silently never runs.
enum DriverThread {
    private final class Body {
        let handOver: DriverHandOver
        init(_ handOver: DriverHandOver) { self.handOver = handOver }
    }

    static func start(_ handOver: DriverHandOver) throws(ClientError) {
        let body = Unmanaged.passRetained(Body(handOver)).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                // At most 15 characters, the kernel's limit for a thread's name (a longer one is refused).
                Thread.current.name = "botsi-curl"
                body.handOver.driver.run()
                return nil
            }, body)
        guard code == 0 else {
            Unmanaged<Body>.fromOpaque(body).release()
            throw localResourceError("could not create the client's thread", code)
        }
        pthread_detach(thread)
    }
}

/// How many requests a run can keep in flight within the descriptor limit (RLIMIT_NOFILE). Past
/// the limit every new connection fails with EMFILE, which looks like a server that refuses
/// connections; so the run asks for what it needs up front, and fits its concurrency to what it
/// may have when the hard limit is lower.
public enum DescriptorBudget {
    /// What a run holds besides its connections: the standard streams, the journal with its log,
    /// index and lock, a read-only journal for metrics, the client's epoll set and eventfd,
    /// Dispatch's epoll set, eventfd, timers and signal descriptors, each input, and a margin.
    public static func reserve(inputs: Int) -> Int { 32 + inputs }
    /// Per connection: its socket, a second one while it tries IPv4 and IPv6 at once, and a pair
    /// for the threaded resolver while a name is looked up.
    public static let perConnection = 3

    /// Descriptors a run of `concurrency` connections may hold at once.
    public static func needed(concurrency: Int, inputs: Int) -> Int {
        reserve(inputs: inputs) + perConnection * max(concurrency, 1)
    }

    public enum Fit: Sendable, Equatable {
        /// The limit allows `concurrency` connections (after raising the soft limit towards the
        /// hard one, if that was needed).
        case fits
        /// The hard limit allows only `concurrency` connections.
        case lowered(concurrency: Int, limit: Int)
        /// Not even one connection fits beside what the run holds.
        case tooLow(limit: Int, needed: Int)
    }

    /// Raises the soft limit to what `concurrency` connections need, as far as the hard limit
    /// allows, and says how many fit.
    public static func fit(concurrency: Int, inputs: Int) -> Fit {
        let reserve = reserve(inputs: inputs)
        let needed = needed(concurrency: concurrency, inputs: inputs)
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(needed) else { return .fits }
        // Raising the soft limit up to the hard one needs no privilege. Every descriptor here is
        // waited on with epoll, never select(2), so numbers above 1024 are safe.
        let raised = min(limit.rlim_max, rlim_t(needed))
        if raised > limit.rlim_cur {
            var wanted = limit
            wanted.rlim_cur = raised
            if setrlimit(resource, &wanted) == 0 { limit = wanted }
        }
        guard limit.rlim_cur < rlim_t(needed) else { return .fits }
        let available = Int(limit.rlim_cur)
        let connections = (available - reserve) / perConnection
        guard connections >= 1 else {
            return .tooLow(limit: available, needed: Self.needed(concurrency: 1, inputs: inputs))
        }
        return .lowered(concurrency: connections, limit: available)
    }
}
