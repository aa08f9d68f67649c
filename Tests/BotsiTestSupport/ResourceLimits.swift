import Foundation

/// Lowers this process's own limits, for exit tests (which run in a child process of their own):
/// never call it in the process that runs the other tests.
public enum ResourceLimits {
    /// Every descriptor below the limit is taken: the next one anything asks for fails with EMFILE.
    public static func leaveNoDescriptorFree() {
        let free = dup(2)
        close(free)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = rlim_t(free)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The address space as it is now plus `bytes`.
    public static func leaveAddressSpace(_ bytes: Int) {
        let pages =
            (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ").first
            .flatMap { Int($0) } ?? 0
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        limit.rlim_cur = rlim_t(pages * Int(getpagesize()) + bytes)
        setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
    }
}

/// Whether scripts/sanitize.sh runs the tests (it sets BOTSI_UNDER_SANITIZER, as the rate tests
/// read it): a sanitizer maps terabytes of shadow memory, so a lowered address-space limit stops
/// its runtime, not the code under test.
public enum Sanitizer {
    public static var isActive: Bool { ProcessInfo.processInfo.environment["BOTSI_UNDER_SANITIZER"] != nil }
}
