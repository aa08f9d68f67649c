import Foundation
import Glibc

/// A failed system call for something the client needs from the machine, as an error that names
/// the resource and what usually lacks: descriptors (with the limit), memory, threads.
func localResourceError(_ what: String, _ code: Int32) -> ClientError {
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
    return ClientError("Could not start the client: \(what): \(reason) (\(hint)).", kind: .localResource)
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
