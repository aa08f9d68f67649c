import Foundation

/// The journal file itself: its path resolved once, checked, and held open by a descriptor that
/// carries the run lock and outlives every SQLite connection to it in this process.
///
/// What it guarantees before SQLite sees the path (docs/journal.md, "File and locking"):
/// - the path resolves to a regular file owned by the running user, or to a name not taken yet in
///   a directory that is the user's and that no one else can write; a new journal is created here,
///   `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600 (a journal only read on a file system mounted
///   read-only may be in any directory: no one can write there);
/// - a journal (or its `-wal`/`-shm`) that others could read or write is made 0600, and says so
///   (on a file system mounted read-only it is left as it is, and says that);
/// - no `-wal`, `-shm` or `-journal` beside it is a link, a device, another user's file or a file
///   with a second hard link (SQLite itself refuses a symbolic link there, not the others);
/// - a journal only read where SQLite could not make its `-wal` or `-shm` (read-only media, or a
///   directory the user cannot write) is read as it is (`readsImmutable`), or refused when a
///   write-ahead log beside it holds commits SQLite could not read there;
/// - the run lock is an exclusive `flock` on this descriptor: it belongs to the file, so every
///   spelling of the path meets the same lock, and taking or probing it creates nothing.
///
/// Not Sendable: it belongs to the journal that opened it.
public final class JournalFile {
    public enum Access: Sendable {
        /// An existing journal, read only (reports).
        case read
        /// An existing journal, read and written.
        case write
        /// An existing journal, or a new one.
        case create
        /// A new journal only: a name that is taken is refused.
        case createNew
    }

    /// The files SQLite keeps beside a journal, by their suffix.
    public static let sideFiles: [(suffix: String, name: String)] = [
        ("-wal", "write-ahead log"), ("-shm", "shared-memory index"), ("-journal", "rollback journal"),
    ]

    public let resolved: ResolvedPath
    public let identity: FileIdentity
    /// True when this open created the file.
    public let wasCreated: Bool
    /// True when SQLite must open the journal `immutable=1` to read it (docs/journal.md, "Read-only
    /// media"): a command that only reads it, where SQLite could not make its `-wal` or `-shm`,
    /// and with no write-ahead log beside it that holds anything. SQLite's own read-only open
    /// needs both files, and fails there; no run can write the journal there either.
    public let readsImmutable: Bool
    public private(set) var holdsRunLock = false
    private var descriptor: Int32

    /// The resolved path: what SQLite opens.
    public var path: String { resolved.path }
    /// The path as the person gave it: what messages name.
    public var typedPath: String { resolved.typed }

    public init(path typed: String, access: Access) throws(FileError) {
        let resolved = try ResolvedPath.resolve(typed, role: "journal")
        // On a file system mounted read-only no one can plant a file beside the journal or swap it
        // while it is read: a snapshot or an archive of a shared directory can be audited.
        let placesRead = [resolved.directory] + (resolved.linkDirectory.map { [$0] } ?? [])
        if access != .read || !placesRead.allSatisfy(Files.isOnReadOnlyFileSystem) {
            try resolved.checkDirectoryIsPrivate(role: "journal")
        }
        var descriptor: Int32 = -1
        var created = false
        if !resolved.exists {
            guard access == .create || access == .createNew else {
                throw FileError(.missing, path: typed, "journal \(typed) does not exist")
            }
            descriptor = open(resolved.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            created = descriptor >= 0
            if !created && (errno != EEXIST || access == .createNew) {
                let code = errno
                throw FileError(
                    FileError.kind(of: code), path: typed, "cannot create journal \(typed): \(Files.reason(code))")
            }
        } else if access == .createNew {
            throw FileError(.refused, path: typed, "\(typed) already exists; nothing was changed — give a new name")
        }
        if !created {
            // Someone else's FIFO or device is never even opened: opening can block or act.
            guard let named = FileStatus.ofName(resolved.path) else {
                let code = errno
                throw FileError(
                    FileError.kind(of: code), path: typed, "cannot open journal \(typed): \(Files.reason(code))")
            }
            guard named.isRegular else { throw Self.notRegular(typed, named) }
            let mode = access == .read ? O_RDONLY : O_RDWR
            descriptor = open(resolved.path, mode | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else {
                let code = errno
                throw FileError(
                    FileError.kind(of: code), path: typed, "cannot open journal \(typed): \(Files.reason(code))")
            }
        }
        guard let status = FileStatus.ofDescriptor(descriptor) else {
            let code = errno
            Glibc.close(descriptor)
            throw FileError(.failed, path: typed, "cannot inspect journal \(typed): \(Files.reason(code))")
        }
        PinnedDescriptors.retain(status.identity)
        var immutable = false
        do throws(FileError) {
            guard status.isRegular else { throw Self.notRegular(typed, status) }
            guard FileStatus.ofName(resolved.path)?.identity == status.identity else {
                throw FileError(
                    .refused, path: typed, "journal \(typed) changed while it was being opened; nothing was changed")
            }
            guard status.isOwnedByUser else { throw Self.foreign(typed, "journal", status) }
            // Only a journal is ever narrowed: a link to any other file of the user's (/etc/passwd,
            // for root) must not make the tool chmod it. SQLite refuses the file later.
            let isJournal = Self.isJournalOrEmpty(descriptor)
            // An empty file is not set up yet: a command that only reads it changes nothing (it
            // says so); the run that sets it up narrows it.
            let readsEmpty = access == .read && status.size == 0
            // Read-only media: nothing can change there (a write would fail), so nothing is tried.
            let fixed = Self.isOnReadOnlyFileSystem(descriptor)
            if isJournal && !readsEmpty {
                try Self.makePrivate(descriptor, status, name: "journal \(typed)", readOnlyMedia: fixed)
            }
            try Self.checkSideFiles(
                of: resolved, identity: status.identity, narrowing: isJournal && !readsEmpty, readOnlyMedia: fixed)
            if access == .read { immutable = try Self.readsImmutable(resolved) }
        } catch {
            // A refused open leaves nothing behind, not even the file it just made.
            if created { unlink(resolved.path) }
            PinnedDescriptors.release(status.identity, descriptor: descriptor)
            throw error
        }
        self.resolved = resolved
        self.identity = status.identity
        self.descriptor = descriptor
        wasCreated = created
        readsImmutable = immutable
    }

    deinit { close() }

    /// Lets go of the run lock and of the descriptor (closed once no other journal of this process
    /// has the same file open). Call it after closing the SQLite connection.
    public func close() {
        guard descriptor >= 0 else { return }
        releaseRunLock()
        PinnedDescriptors.release(identity, descriptor: descriptor)
        descriptor = -1
    }

    // MARK: The run lock

    /// Takes the run lock if no other open of this file holds it (in any process, this one too).
    public func tryRunLock() -> Bool {
        if holdsRunLock { return true }
        guard descriptor >= 0, flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        holdsRunLock = true
        return true
    }

    public func releaseRunLock() {
        guard holdsRunLock else { return }
        flock(descriptor, LOCK_UN)
        holdsRunLock = false
    }

    /// True while another open of this file holds the run lock. Probes with this descriptor, so it
    /// opens and closes nothing (a close would drop SQLite's locks).
    public var isRunLockHeldElsewhere: Bool {
        guard !holdsRunLock, descriptor >= 0 else { return false }
        guard flock(descriptor, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// The process holding the run lock and when it started, from /proc (a `flock` is local to
    /// this kernel, so every holder is there); nil when it cannot be told.
    public func runLockHolder() -> (pid: Int32, startedAt: Date?)? {
        guard let pid = ProcLocks.exclusiveFlockHolder(of: identity) else { return nil }
        return (pid, ProcLocks.startTime(of: pid))
    }

    /// Refuses a journal with a second name (hard link). SQLite keeps the `-wal` and `-shm` beside
    /// the name it opened, so two names give one journal two logs, and a reader or writer through
    /// the other name sees or makes a different journal. Asked after the run lock, so that a run
    /// through the other name while one works is told the journal is busy.
    public func checkSingleName() throws(FileError) {
        guard let status = FileStatus.ofDescriptor(descriptor), status.linkCount > 1 else { return }
        throw FileError(
            .refused, path: typedPath,
            "journal \(typedPath) has \(status.linkCount) names (hard links), and SQLite would keep a separate "
                + "log beside each; nothing was changed — remove the other names "
                + "(find / -xdev -samefile \(path)) or use a copy")
    }

    /// True while the resolved path still names this file (SQLite opens it by that name).
    public var isStillAtItsPath: Bool { FileStatus.ofName(path)?.identity == identity }

    /// False once the resolved path names nothing or another file: the journal was removed, moved
    /// or replaced (`rm`, `mv`) while this process has it open. A name it cannot look at (EACCES,
    /// an NFS hiccup) is not taken for gone.
    public var isGoneFromItsPath: Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return errno == ENOENT || errno == ENOTDIR }
        return !isStillAtItsPath
    }

    // MARK: Checks

    static func notRegular(_ typed: String, _ status: FileStatus) -> FileError {
        FileError(
            .refused, path: typed,
            "journal \(typed) is not a regular file (it is \(status.kindName)); nothing was changed — "
                + "give the path of a journal file, or of a new one")
    }

    static func foreign(_ typed: String, _ role: String, _ status: FileStatus) -> FileError {
        FileError(
            .refused, path: typed,
            "\(role) \(typed) belongs to \(Accounts.describe(status.owner)), not to you "
                + "(\(Accounts.describe(geteuid()))); nothing was changed — run it as its owner, "
                + "or copy the journal to a file of your own")
    }

    /// chmod only ever here: on a descriptor of a regular file the user owns, narrowing to what
    /// the owner had (0644 → 0600, 0444 → 0400). On `readOnlyMedia` nothing is tried (it would
    /// fail, and a file there changes for no one): it only says the file stays open to others.
    static func makePrivate(
        _ descriptor: Int32, _ status: FileStatus, name: String, readOnlyMedia: Bool = false
    ) throws(FileError) {
        guard status.permissions & 0o077 != 0, status.isRegular, status.isOwnedByUser else { return }
        let narrowed = status.permissions & 0o600
        guard !readOnlyMedia else {
            Files.notice(
                "\(name) is mode \(Files.octal(status.permissions)), open to other users, on a file system "
                    + "mounted read-only: it was left as it is")
            return
        }
        guard fchmod(descriptor, narrowed) == 0 else {
            throw FileError(
                .failed, path: name,
                "cannot make \(name) private (mode \(Files.octal(narrowed))): \(Files.reason(errno))")
        }
        Files.notice(
            "\(name) was mode \(Files.octal(status.permissions)), open to other users; it is now "
                + "\(Files.octal(narrowed))")
    }

    /// `PRAGMA application_id` of a botsi-restore journal ('BRST'); Schema.applicationID is the same.
    public static let applicationID: UInt32 = 0x4252_5354

    /// Empty (a journal not set up yet), or an SQLite database whose header carries our
    /// application id.
    static func isJournalOrEmpty(_ descriptor: Int32) -> Bool {
        var header = [UInt8](repeating: 0, count: 100)
        let count = pread(descriptor, &header, header.count, 0)
        if count == 0 { return true }
        guard count == 100, header[0..<16].elementsEqual("SQLite format 3\0".utf8) else { return false }
        return header[68..<72].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == applicationID
    }

    /// True when the file system holding `descriptor`'s file is mounted read-only.
    static func isOnReadOnlyFileSystem(_ descriptor: Int32) -> Bool {
        var info = statvfs()
        return fstatvfs(descriptor, &info) == 0 && info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// The size of a write-ahead log's header: a `-wal` no longer than this holds no commit.
    static let walHeaderSize: Int64 = 32

    /// Whether a journal opened to be read must be opened `immutable=1` (see `readsImmutable`).
    /// SQLite reads a journal in WAL mode through its `-wal` and `-shm`, and makes them when they
    /// are missing; where it cannot (a file system mounted read-only, a directory the user cannot
    /// write), its read-only open fails unless both are there already. Read as immutable, it reads
    /// the journal file alone: right when no `-wal` holds a commit, and wrong otherwise — the
    /// journal would be read as it was before the commits in the log, which is refused, plainly.
    static func readsImmutable(_ resolved: ResolvedPath) throws(FileError) -> Bool {
        let wal = FileStatus.ofName(resolved.path + "-wal")
        // Both there: SQLite reads the log itself (from 3.22, without writing the -shm).
        if wal != nil && FileStatus.ofName(resolved.path + "-shm") != nil { return false }
        // Where SQLite can make them, it does, as ever.
        if faccessat(AT_FDCWD, resolved.directory, W_OK | X_OK, AT_EACCESS) == 0 { return false }
        // A run stopped while it set the journal up left a rollback journal: a reader says so.
        if let rollback = FileStatus.ofName(resolved.path + "-journal"), rollback.size > 0 { return false }
        guard let wal, wal.size > walHeaderSize else { return true }
        let typed = resolved.typed
        let place =
            Files.isOnReadOnlyFileSystem(resolved.directory)
            ? "on a file system mounted read-only" : "in a directory you cannot write"
        throw FileError(
            .refused, path: typed,
            "journal \(typed) has a write-ahead log beside it (\(typed)-wal, \(wal.size) bytes) that may hold its "
                + "latest commits, and SQLite cannot read that log \(place) without the -shm file that should be "
                + "beside it; read alone, the journal would show what it held before them, so nothing was read "
                + "and nothing was changed — copy the journal and its -wal together to a writable directory "
                + "(cp \(typed) \(typed)-wal DIR/) and read the copy")
    }

    private static func checkSideFiles(
        of resolved: ResolvedPath, identity: FileIdentity, narrowing: Bool, readOnlyMedia: Bool
    ) throws(FileError) {
        for (suffix, what) in sideFiles {
            let path = resolved.path + suffix
            let typed = resolved.typed + suffix
            guard let status = FileStatus.ofName(path) else {
                if errno == ENOENT { continue }
                throw FileError(.failed, path: typed, "cannot inspect \(typed): \(Files.reason(errno))")
            }
            let advice = "nothing was changed — SQLite would use it as the journal's \(what); remove it and run again"
            guard status.isRegular else {
                throw FileError(.refused, path: typed, "\(typed) is \(status.kindName), not a regular file; \(advice)")
            }
            guard status.isOwnedByUser else { throw foreign(typed, "the journal's \(what)", status) }
            guard status.linkCount == 1 else {
                throw FileError(.refused, path: typed, "\(typed) has another hard link to it; \(advice)")
            }
            guard narrowing, status.permissions & 0o077 != 0 else { continue }
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            // Parked, not closed: SQLite may hold locks on this file in this process.
            defer { PinnedDescriptors.park(descriptor, for: identity) }
            if let opened = FileStatus.ofDescriptor(descriptor), opened.identity == status.identity {
                try makePrivate(descriptor, opened, name: typed, readOnlyMedia: readOnlyMedia)
            }
        }
    }
}

/// /proc/locks: which process holds an exclusive `flock` on a file. A `flock` is local to one
/// kernel, so this answers for every run that can hold the lock.
enum ProcLocks {
    static func exclusiveFlockHolder(of identity: FileIdentity) -> Int32? {
        guard let data = FileManager.default.contents(atPath: "/proc/locks") else { return nil }
        let device = identity.device
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        let wanted = "\(hex(major)):\(hex(minor)):\(identity.inode)"
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 4242 fe:00:123456 0 EOF"; waiters have "->" after the number.
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "WRITE", fields[5] == wanted else { continue }
            return Int32(fields[4])
        }
        return nil
    }

    /// When process `pid` started: field 22 of /proc/PID/stat (clock ticks after boot) and the
    /// boot time in /proc/stat.
    static func startTime(of pid: Int32) -> Date? {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
            let system = FileManager.default.contents(atPath: "/proc/stat")
        else { return nil }
        // The command name, field 2, is in parentheses and may hold spaces: count after its end.
        let text = String(decoding: stat, as: UTF8.self)
        guard let end = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        let boot = String(decoding: system, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
        guard let boot else { return nil }
        return Date(timeIntervalSince1970: boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return digits.count < 2 ? "0" + digits : digits
    }
}
