import Foundation

/// What an output must never be written over: journals, under any name, and the files SQLite keeps
/// beside them (and the lock file older versions kept there); and the inputs runs read.
public struct ProtectedFiles: Sendable {
    private var names: [String: String] = [:]
    private var identities: [FileIdentity: String] = [:]

    public init() {}

    public init(_ journals: [JournalFile]) {
        for journal in journals { add(journal) }
    }

    public mutating func add(_ journal: JournalFile) {
        add(path: journal.path, typed: journal.typedPath, identity: journal.identity)
    }

    /// A journal by the path given for it, without opening it (so an output can be refused before
    /// the journal is even read). One not there yet (a first run creates it) is protected by its
    /// name and its side files' names: a metrics file named so was refused only at each write.
    public mutating func add(journalAt typed: String) {
        if let resolved = try? ResolvedPath.resolve(typed, role: "journal"), resolved.exists {
            add(path: resolved.path, typed: typed, identity: FileStatus.ofTarget(resolved.path)?.identity)
        } else if let planned = try? ResolvedPath.resolveParent(typed, role: "journal") {
            add(path: planned.path, typed: typed, identity: nil)
        }
    }

    /// An input, by the path given for it (links followed, compared by device and inode, so any
    /// other name of it is refused too); `-` is standard input, protected when it is a regular
    /// file. A relative path is taken from `directory` when one is given, else from the working
    /// directory. `description` names it in the refusal ("the input export.csv"). An input that
    /// does not exist protects nothing.
    public mutating func add(inputAt typed: String, as description: String, relativeTo directory: String? = nil) {
        if typed == "-" {
            if let status = FileStatus.ofDescriptor(0), status.isRegular { identities[status.identity] = description }
            return
        }
        let path = directory.map { typed.hasPrefix("/") ? typed : $0 + "/" + typed } ?? typed
        guard let status = FileStatus.ofTarget(path), status.isRegular else { return }
        identities[status.identity] = identities[status.identity] ?? description
        if let real = ResolvedPath.realPath(path) { names[real] = names[real] ?? description }
    }

    private mutating func add(path: String, typed: String, identity: FileIdentity?) {
        if let identity { identities[identity] = "the journal \(typed)" }
        names[path] = "the journal \(typed)"
        let sides = JournalFile.sideFiles + [(suffix: ".lock", name: "lock file")]
        for (suffix, what) in sides {
            let description = "the \(what) of journal \(typed)"
            names[path + suffix] = description
            if let status = FileStatus.ofName(path + suffix) { identities[status.identity] = description }
        }
    }

    func describe(path: String) -> String? { names[path] }
    func describe(_ identity: FileIdentity) -> String? { identities[identity] }
}

/// An output file written the way git and OpenSSH write theirs: into a new temporary sibling
/// (`O_CREAT|O_EXCL|O_NOFOLLOW`, so nothing prepared there is followed), given its mode by
/// `fchmod` on that descriptor, synced, then renamed over the target. The target is never opened
/// for writing: a link there is replaced, not written through; a device, FIFO, directory, journal
/// or SQLite database there is refused first. Until `commit()` the target is untouched, so a
/// failure half-way leaves the old file whole. Reports use mode 0600; a metrics file 0644.
public final class OutputFile {
    public let target: ResolvedPath
    private let role: String
    private let temporaryPath: String
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private var writeError: Int32 = 0
    private var finished = false

    public init(path: String, role: String, mode: mode_t, protecting protected: ProtectedFiles) throws(FileError) {
        target = try Self.checkTarget(path, role: role, protecting: protected)
        self.role = role
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<8 {
            temporary = Self.temporarySibling(of: target)
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else {
            let code = errno
            throw FileError(
                FileError.kind(of: code), path: path,
                "cannot write the \(role) in \(target.directory): \(Files.reason(code)); nothing was changed")
        }
        // Our own new regular file: the only kind of file this tool ever chmods.
        guard fchmod(descriptor, mode) == 0 else {
            let code = errno
            close(descriptor)
            unlink(temporary)
            throw FileError(.failed, path: path, "cannot set the mode of the \(role): \(Files.reason(code))")
        }
        temporaryPath = temporary
        self.descriptor = descriptor
        TemporaryFiles.register(temporary)
    }

    deinit { discard() }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    public func write(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes what is left, syncs, and renames the file over the target.
    public func commit() throws(FileError) {
        guard !finished else { return }
        flush()
        if writeError == 0 && fsync(descriptor) != 0 { writeError = errno }
        close(descriptor)
        descriptor = -1
        guard writeError == 0 else {
            discard()
            throw FileError(
                FileError.kind(of: writeError), path: target.typed,
                "cannot write the \(role) to \(target.typed): \(Files.reason(writeError)); "
                    + (target.exists ? "the file there is unchanged" : "nothing was written"))
        }
        do {
            try Self.moveIntoPlace(temporaryPath, target, role: role, replacing: true)
        } catch {
            discard()
            throw error
        }
        TemporaryFiles.unregister(temporaryPath)
        finished = true
    }

    /// Drops the temporary file; the target stays as it was.
    public func discard() {
        guard !finished else { return }
        finished = true
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        unlink(temporaryPath)
        TemporaryFiles.unregister(temporaryPath)
    }

    private func flush() {
        guard !buffer.isEmpty, writeError == 0 else {
            buffer.removeAll(keepingCapacity: true)
            return
        }
        var offset = 0
        buffer.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    writeError = errno
                    return
                }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: Targets

    /// Refuses a target that must not be replaced and returns where the output goes. `mustBeNew`
    /// refuses any existing file (a merged journal is always a new file).
    public static func checkTarget(
        _ path: String, role: String, protecting protected: ProtectedFiles, mustBeNew: Bool = false
    ) throws(FileError) -> ResolvedPath {
        let target = try ResolvedPath.resolveParent(path, role: role)
        func refuse(_ why: String) -> FileError {
            FileError(
                .refused, path: path,
                "cannot write the \(role) to \(path): \(why); nothing was changed — give another path")
        }
        if let what = protected.describe(path: target.path) { throw refuse("it is \(what)") }
        // A directory no file can be written in is said now, not after a run or a report's work
        // (a metrics file on a read-only volume was only warned about, twice, after the run).
        if access(target.directory, W_OK) != 0 && (errno == EROFS || errno == EACCES) {
            throw refuse(
                errno == EROFS ? "its directory is on a read-only file system" : "you may not write in its directory")
        }
        guard let named = FileStatus.ofName(target.path) else { return target }
        var status = named
        if named.isLink {
            // The link itself is replaced; still, refuse what it leads to if that is refused as a name.
            guard let followed = FileStatus.ofTarget(target.path) else { return target }
            if let real = ResolvedPath.realPath(target.path), let what = protected.describe(path: real) {
                throw refuse("it is a link to \(what)")
            }
            status = followed
        }
        let through = named.isLink ? "a symbolic link to " : ""
        guard status.isRegular else { throw refuse("it is \(through)\(status.kindName)") }
        if let what = protected.describe(status.identity) {
            throw refuse("it is \(through)\(what) (under another name)")
        }
        if mustBeNew { throw refuse("it already exists, and the \(role) is always a new file") }
        if isSQLiteDatabase(ResolvedPath.realPath(target.path) ?? target.path) {
            throw refuse("it is \(through)an SQLite database, perhaps another journal")
        }
        return target
    }

    /// A hidden, unpredictable name beside the target.
    public static func temporarySibling(of target: ResolvedPath) -> String {
        let name = String(target.path[target.path.index(after: target.path.lastIndex(of: "/")!)...])
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        return target.directory + (target.directory == "/" ? "" : "/") + ".\(name).\(random).tmp"
    }

    /// rename(2) of a finished temporary file over the target. Without `replacing`, an existing
    /// target is never replaced: link(2) fails when the name is taken, atomically.
    public static func moveIntoPlace(
        _ temporary: String, _ target: ResolvedPath, role: String, replacing: Bool
    ) throws(FileError) {
        let result = replacing ? rename(temporary, target.path) : link(temporary, target.path)
        let code = errno
        if result != 0 || !replacing { unlink(temporary) }
        guard result != 0 else { return }
        let why = code == EEXIST ? "it appeared meanwhile" : Files.reason(code)
        throw FileError(
            code == EEXIST ? .refused : FileError.kind(of: code), path: target.typed,
            "cannot put the \(role) at \(target.typed): \(why); nothing was changed")
    }

    /// The first 16 bytes of every SQLite 3 database.
    static func isSQLiteDatabase(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var header = [UInt8](repeating: 0, count: 16)
        guard read(descriptor, &header, 16) == 16 else { return false }
        return header == Array("SQLite format 3\0".utf8)
    }
}
