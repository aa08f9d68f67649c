internal import CCurl
import Glibc

/// What the process does while it holds the key.
public enum KeyCustody {
    /// No core file, no `ptrace` and no reading of `/proc/<pid>/environ` or `mem` by other processes
    /// of the same user (`prctl(PR_SET_DUMPABLE, 0)`, `RLIMIT_CORE` 0). Call before the key is read;
    /// it lasts until the process ends. Returns false when the kernel refused, which leaves the
    /// process as exposed as any other and is not worth stopping a run for.
    @discardableResult
    public static func protectProcess() -> Bool {
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        let limited = setrlimit(Int32(RLIMIT_CORE.rawValue), &noCore) == 0
        return ccurl_forbid_dumps() == 0 && limited
    }

    /// False once `protectProcess` ran.
    public static var isDumpable: Bool { ccurl_is_dumpable() == 1 }
}
