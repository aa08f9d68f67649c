import Glibc

/// Whether this process can start a thread at all, asked once before any work. Dispatch starts its
/// worker threads on demand and, when `pthread_create` fails for want of memory (an address-space
/// limit, `ulimit -v`, too small for a thread's stack), sleeps a second and tries again, forever:
/// a run under such a limit hung, ignoring SIGTERM. Asked first, the same failure is a message and
/// exit 71 (issue 20, item 3).
public enum ThreadStart {
    /// Nil when a thread started and ended; else why not, as a sentence that says what to raise.
    public static func problem() -> String? {
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { _ in nil }, nil)
        guard started != 0 else {
            pthread_join(thread, nil)
            return nil
        }
        var addressSpace = rlimit()
        var stack = rlimit()
        getrlimit(Int32(RLIMIT_AS.rawValue), &addressSpace)
        getrlimit(Int32(RLIMIT_STACK.rawValue), &stack)
        func megabytes(_ value: rlim_t) -> String { value == rlim_t.max ? "unlimited" : "\(value >> 20) MiB" }
        return "cannot start a thread (\(String(cString: strerror(started)))): the address space is limited to "
            + "\(megabytes(addressSpace.rlim_cur)) (ulimit -v) and each thread's stack takes "
            + "\(megabytes(stack.rlim_cur)) (ulimit -s); raise the first or lower the second, and run again"
    }
}
