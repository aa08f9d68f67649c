import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiFiles

@Suite struct JournalFileTests {
    @Test func everySpellingOfThePathLeadsToOneResolvedNameAndOneFile() throws {
        let scratch = Workspace()
        let journal = try JournalFile(path: scratch.file("j.sqlite"), access: .create)
        defer { journal.close() }
        #expect(journal.wasCreated && permissions(journal.path) == 0o600)
        mkdir(scratch.file("sub"), 0o700)
        symlink("j.sqlite", scratch.file("link.sqlite"))
        symlink(scratch.path, scratch.file("dirlink"))
        for spelling in ["link.sqlite", "sub/../j.sqlite", "dirlink/link.sqlite", "./sub/../dirlink/j.sqlite"] {
            let other = try JournalFile(path: scratch.file(spelling), access: .read)
            #expect(other.path == journal.path && other.identity == journal.identity, "\(spelling)")
            #expect(other.typedPath == scratch.file(spelling) && !other.wasCreated)
            other.close()
        }
    }

    @Test func aNewJournalIsOnlyEverANewFile() throws {
        let scratch = Workspace()
        scratch.write("taken.sqlite", "")
        expectRefusal("already exists") { _ = try JournalFile(path: scratch.file("taken.sqlite"), access: .createNew) }
        expectRefusal("does not exist", kind: .missing) {
            _ = try JournalFile(path: scratch.file("no.sqlite"), access: .read)
        }
        expectRefusal("does not exist", kind: .missing) {
            _ = try JournalFile(path: scratch.file("none/j.sqlite"), access: .create)
        }
        expectRefusal("does not name a file") { _ = try JournalFile(path: scratch.file("new/"), access: .create) }
        #expect(scratch.names == ["taken.sqlite"])
    }

    @Test func whatIsNotARegularFileIsRefusedWithoutBeingOpened() throws {
        let scratch = Workspace()
        mkfifo(scratch.file("fifo"), 0o600)  // opening it for reading would block
        mkdir(scratch.file("folder"), 0o700)
        symlink(scratch.file("nowhere/j.sqlite"), scratch.file("dangling"))
        for (path, kind) in [
            (scratch.file("fifo"), "a FIFO"), (scratch.file("folder"), "a directory"),
            ("/dev/null", "a character device"),
        ] {
            for access in [JournalFile.Access.read, .create] {
                expectRefusal("not a regular file (it is \(kind))") { _ = try JournalFile(path: path, access: access) }
            }
        }
        expectRefusal("symbolic link to a missing file") {
            _ = try JournalFile(path: scratch.file("dangling"), access: .create)
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("nowhere")))
    }

    @Test func aDirectoryOthersCanWriteIsRefused() throws {
        let scratch = Workspace()
        for mode: mode_t in [0o777, 0o1777, 0o757] {
            let directory = scratch.file("shared-\(String(mode, radix: 8))")
            mkdir(directory, 0o700)
            chmod(directory, mode)
            expectRefusal("other users can write the directory") {
                _ = try JournalFile(path: directory + "/j.sqlite", access: .create)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test(.needsRoot) func aGroupMayWriteTheDirectoryOnlyWhenTheUserIsInIt() throws {
        let scratch = Workspace()
        let directory = scratch.file("group")
        mkdir(directory, 0o775)
        chmod(directory, 0o2775)
        chown(directory, 0, getegid())  // the user's own group: a Debian private group, a pod's fsGroup
        try JournalFile(path: directory + "/j.sqlite", access: .create).close()
        let other = gid_t(54_321)  // a group the test process is not in
        chown(directory, 0, other)
        expectRefusal("other users can write the directory") {
            _ = try JournalFile(path: directory + "/j.sqlite", access: .read)
        }
    }

    @Test(.needsRoot) func anotherUsersJournalOrDirectoryIsRefusedAndNeverChmodded() throws {
        let scratch = Workspace()
        let theirs = scratch.write("theirs.sqlite", "", mode: 0o666)
        chown(theirs, Root.otherUser, Root.otherUser)
        for access in [JournalFile.Access.read, .write, .create] {
            expectRefusal("belongs to uid 65534") { _ = try JournalFile(path: theirs, access: access) }
        }
        #expect(permissions(theirs) == 0o666)
        let directory = scratch.file("their-directory")
        mkdir(directory, 0o755)
        chown(directory, Root.otherUser, Root.otherUser)
        expectRefusal("belongs to uid 65534") { _ = try JournalFile(path: directory + "/j.sqlite", access: .create) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func aJournalAndItsSideFilesAreNarrowedToTheOwnersBitsAndSaySoOnce() throws {
        collectNotices()
        let scratch = Workspace()
        let wide = scratch.write("wide.sqlite", "", mode: 0o664)
        scratch.write("wide.sqlite-wal", "", mode: 0o644)
        let readOnly = scratch.write("read-only.sqlite", "", mode: 0o444)
        // Empty: not set up yet, and a reader changes nothing (it says "nothing was changed").
        try JournalFile(path: wide, access: .read).close()
        #expect(permissions(wide) == 0o664 && noticesNaming(wide).isEmpty)
        try JournalFile(path: wide, access: .write).close()
        try JournalFile(path: readOnly, access: .write).close()
        #expect(permissions(wide) == 0o600 && permissions(wide + "-wal") == 0o600)
        #expect(permissions(readOnly) == 0o400, "narrowing must never add a permission")
        try JournalFile(path: wide, access: .read).close()
        #expect(noticesNaming(wide).count == 2, "\(noticesNaming(wide))")
        #expect(noticesNaming(wide).contains { $0.contains("was mode 0664") && $0.contains("now 0600") })
    }

    @Test func onlyAJournalIsEverNarrowedNotAnotherFileALinkLeadsTo() throws {
        collectNotices()
        let scratch = Workspace()
        let passwd = scratch.write("passwd", "root:x:0:0::/root:/bin/sh\n", mode: 0o644)
        var header = [UInt8]("SQLite format 3\0".utf8) + [UInt8](repeating: 0, count: 84)
        header[68..<72] = [0x12, 0x34, 0x56, 0x78]  // another application's id
        let database = scratch.file("other.db")
        _ = FileManager.default.createFile(atPath: database, contents: Data(header))
        chmod(database, 0o644)
        symlink(passwd, scratch.file("link.sqlite"))
        for path in [scratch.file("link.sqlite"), database] {
            try JournalFile(path: path, access: .write).close()
        }
        #expect(permissions(passwd) == 0o644 && permissions(database) == 0o644)
        #expect(noticesNaming(scratch.path).isEmpty)
    }

    @Test func aLinkInADirectoryOthersCanWriteIsNotFollowed() throws {
        let scratch = Workspace()
        let journal = try JournalFile(path: scratch.file("j.sqlite"), access: .create)
        journal.close()
        let shared = scratch.file("shared")
        mkdir(shared, 0o777)
        chmod(shared, 0o1777)
        symlink(journal.path, shared + "/j.sqlite")
        expectRefusal("other users can write the directory \(shared)") {
            _ = try JournalFile(path: shared + "/j.sqlite", access: .write)
        }
    }

    @Test func sideFilesSQLiteWouldUseAsTheJournalsMustBeItsOwnPlainFiles() throws {
        let scratch = Workspace()
        let journal = scratch.write("j.sqlite", "")
        let victim = scratch.write("victim", "precious")
        let cases: [(String, () -> Void, String)] = [
            ("-wal", { _ = symlink(victim, journal + "-wal") }, "a symbolic link"),
            ("-wal", { _ = link(victim, journal + "-wal") }, "another hard link"),
            ("-shm", { _ = mkfifo(journal + "-shm", 0o600) }, "a FIFO"),
            ("-journal", { _ = mkdir(journal + "-journal", 0o700) }, "a directory"),
        ]
        for (suffix, plant, phrase) in cases {
            plant()
            expectRefusal(phrase) { _ = try JournalFile(path: journal, access: .write) }
            _ = unlink(journal + suffix) == 0 || rmdir(journal + suffix) == 0
        }
        #expect(scratch.text("victim") == "precious")
        try JournalFile(path: journal, access: .write).close()
        // A new journal refused for what lies beside it is not left behind either.
        symlink(victim, scratch.file("new.sqlite-shm"))
        expectRefusal("a symbolic link") { _ = try JournalFile(path: scratch.file("new.sqlite"), access: .create) }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("new.sqlite")))
    }

    @Test(.needsRoot) func anotherUsersSideFileIsRefused() throws {
        let scratch = Workspace()
        let journal = scratch.write("j.sqlite", "")
        let wal = scratch.write("j.sqlite-wal", "", mode: 0o666)
        chown(wal, Root.otherUser, Root.otherUser)
        expectRefusal("belongs to uid 65534") { _ = try JournalFile(path: journal, access: .read) }
        #expect(permissions(wal) == 0o666)
    }

    @Test func theRunLockIsTheFilesOwnAndProbingItTakesNothing() throws {
        let scratch = Workspace()
        let first = try JournalFile(path: scratch.file("j.sqlite"), access: .create)
        symlink("j.sqlite", scratch.file("link.sqlite"))
        let second = try JournalFile(path: scratch.file("link.sqlite"), access: .read)
        #expect(!second.isRunLockHeldElsewhere)
        #expect(first.tryRunLock() && first.holdsRunLock)
        #expect(!second.tryRunLock(), "two opens of one file must not both hold the run lock")
        #expect(second.isRunLockHeldElsewhere && !first.isRunLockHeldElsewhere)
        let holder = try #require(second.runLockHolder(), "/proc/locks does not name the holder")
        #expect(holder.pid == getpid())
        let started = try #require(holder.startedAt)
        #expect(started <= Date() && started > Date().addingTimeInterval(-86_400 * 30))
        #expect(first.tryRunLock(), "probing must not have taken or dropped the lock")
        first.close()
        #expect(!second.isRunLockHeldElsewhere && second.tryRunLock())
        second.close()
        #expect(scratch.names == ["j.sqlite", "link.sqlite"], "the lock made a file")
    }

    /// The POSIX-lock pitfall: closing any descriptor of a file drops every POSIX lock this process
    /// holds on it (SQLite's included). A closed `JournalFile` parks its descriptor while another
    /// of the same file is open.
    @Test func closingOneJournalFileKeepsThisProcesssPOSIXLocksWhileAnotherIsOpen() throws {
        let scratch = Workspace()
        let path = scratch.file("j.sqlite")
        let keeper = try JournalFile(path: path, access: .create)
        // Stands in for SQLite's descriptor and the lock it holds.
        let sqlite = open(path, O_RDWR | O_CLOEXEC)
        defer { close(sqlite) }
        var lock = flock(l_type: Int16(F_WRLCK), l_whence: Int16(SEEK_SET), l_start: 1 << 30, l_len: 1, l_pid: 0)
        try #require(fcntl(sqlite, F_SETLK, &lock) == 0)
        #expect(isLockedForOthers(path))

        let passer = try JournalFile(path: path, access: .read)
        passer.close()
        #expect(isLockedForOthers(path), "closing a second JournalFile dropped this process's POSIX lock")
        #expect(PinnedDescriptors.parkedCount(keeper.identity) == 1)

        keeper.close()  // the last one: its descriptors are closed now, and the lock goes with them
        #expect(!isLockedForOthers(path))
    }

    /// Whether an open file description other than this process's would conflict at byte 2^30
    /// (an OFD lock query sees this process's POSIX locks as another owner's).
    private func isLockedForOthers(_ path: String) -> Bool {
        let probe = open(path, O_RDONLY | O_CLOEXEC)
        var query = flock(l_type: Int16(F_WRLCK), l_whence: Int16(SEEK_SET), l_start: 1 << 30, l_len: 1, l_pid: 0)
        let result = fcntl(probe, 36 /* F_OFD_GETLK */, &query)
        // Left open on purpose: closing it would drop the very locks being looked at.
        return result == 0 && query.l_type != Int16(F_UNLCK)
    }

    @Test func aPrivateDirectoryIsNewEachTimeAndOnlyOurs() throws {
        let first = try Files.makePrivateDirectory(prefix: "botsi-files-test")
        let second = try Files.makePrivateDirectory(prefix: "botsi-files-test")
        #expect(first != second)
        #expect(permissions(first) == 0o700)
        symlink("/etc/hostname", first + "/link")
        _ = FileManager.default.createFile(atPath: first + "/file", contents: Data())
        Files.removePrivateDirectory(first)
        Files.removePrivateDirectory(second)
        #expect(!FileManager.default.fileExists(atPath: first) && !FileManager.default.fileExists(atPath: second))
        #expect(FileManager.default.fileExists(atPath: "/etc/hostname"))
    }
}
