import Foundation

/// Who holds a journal: written into the lock file so a second run can say whom it waits for.
public struct LockHolder: Sendable, Codable, Equatable {
    public let pid: Int32
    public let host: String
    public let startedAt: String

    public init(pid: Int32, host: String, startedAt: String) {
        self.pid = pid
        self.host = host
        self.startedAt = startedAt
    }
}

/// An exclusive `flock` on `<journal>.lock`. The kernel drops it when the process dies, however it
/// dies, so a crashed run never leaves a stale lock behind.
public final class RunLock {
    public let path: String
    private var descriptor: Int32

    /// Takes the lock or throws `JournalError.locked` naming the holder.
    public init(journalPath: String, holder: LockHolder) throws(JournalError) {
        path = journalPath + ".lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            if errno == EACCES || errno == EROFS { throw .readOnly(path: journalPath) }
            throw .cannotOpen(path: journalPath, reason: "lock file \(path): \(reason)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = RunLock.readHolder(descriptor: descriptor)
            Glibc.close(descriptor)
            throw .locked(path: journalPath, holder: holder)
        }
        let data = (try? JSONEncoder().encode(holder)) ?? Data()
        _ = ftruncate(descriptor, 0)
        _ = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    deinit { release() }

    public func release() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// The holder of a journal's lock when a live process holds it, nil when nobody does.
    public static func currentHolder(journalPath: String) -> LockHolder? {
        let descriptor = open(journalPath + ".lock", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return nil
        }
        return readHolder(descriptor: descriptor)
    }

    private static func readHolder(descriptor: Int32) -> LockHolder? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(LockHolder.self, from: Data(buffer[0..<count]))
    }
}
