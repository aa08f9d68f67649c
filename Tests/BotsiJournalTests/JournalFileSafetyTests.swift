import BotsiFiles
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// What SQLite 3.40 itself does with links beside the journal, and what `Journal` adds on top.
@Suite struct JournalFileSafetyTests {
    /// `SQLITE_OPEN_NOFOLLOW` (extended code 1550, `SQLITE_CANTOPEN_SYMLINK`) covers a link anywhere
    /// in the journal's own path. SQLite opens `-wal` and `-shm` with `O_NOFOLLOW` whatever the flag,
    /// so a symbolic link there fails too; a hard link, a FIFO or another user's file there it uses.
    @Test func noFollowCoversTheJournalsPathAndSQLiteRefusesLinkedSideFilesButNotHardLinks() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        try Journal(path: path).close()
        symlink(path, directory.file("link.sqlite"))
        symlink(directory.path, directory.file("dirlink"))
        for linked in [directory.file("link.sqlite"), directory.file("dirlink/j.sqlite")] {
            #expect {
                _ = try SQLiteConnection(path: linked, readOnly: true)
            } throws: { error in
                (error as? SQLiteError)?.code == 1550
            }
        }

        let victim = directory.file("victim")
        let precious = Data("precious".utf8)
        _ = FileManager.default.createFile(atPath: victim, contents: precious)
        // A symbolic link as the -wal: SQLite's own O_NOFOLLOW refuses it.
        symlink(victim, path + "-wal")
        let refusing = try SQLiteConnection(path: path)
        #expect(throws: SQLiteError.self) { try refusing.execute("INSERT INTO runs DEFAULT VALUES") }
        refusing.close()
        #expect(FileManager.default.contents(atPath: victim) == precious)
        unlink(path + "-wal")

        // A hard link as the -wal: SQLite writes its log into the other file.
        link(victim, path + "-wal")
        #expect {
            _ = try Journal(path: path)
        } throws: { error in
            "\(error)".contains("another hard link")
        }
        #expect(FileManager.default.contents(atPath: victim) == precious)
        let writing = try SQLiteConnection(path: path)
        try writing.execute("PRAGMA journal_mode=WAL")
        try writing.execute("CREATE TABLE scratch (x); INSERT INTO scratch VALUES (1)")
        #expect(FileManager.default.contents(atPath: victim) != precious, "SQLite no longer writes through a hard link")
        writing.close()
    }

    @Test func theFileRulesKnowTheJournalsApplicationID() {
        #expect(Int64(JournalFile.applicationID) == Schema.applicationID)
    }

    @Test func aFIFOBesideTheJournalIsRefusedBeforeSQLiteWouldFailOnIt() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        try Journal(path: path).close()
        mkfifo(path + "-shm", 0o600)
        #expect {
            _ = try Journal(path: path, create: false, readOnly: true)
        } throws: { error in
            "\(error)".contains("is a FIFO")
        }
    }

    /// The POSIX-lock pitfall with real connections: another journal object on the same file,
    /// opened and closed in this process, must not drop the locks the first connection holds.
    @Test func closingASecondJournalInThisProcessKeepsTheFirstConnectionsLocks() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let first = try Journal.openForRun(path: path)
        defer { first.close() }
        try first.begin()
        _ = try first.startRun(
            startedAt: Date(), toolVersion: "test", host: "h", pid: getpid(), optionsJSON: "{}")
        let held = posixLocks(onFileAt: path)
        try #require(!held.isEmpty, "the open write transaction holds no POSIX lock on the journal")

        symlink(path, directory.file("link.sqlite"))
        for _ in 0..<3 {
            let reader = try Journal(path: directory.file("link.sqlite"), create: false, readOnly: true)
            #expect(reader.runLockHolder() != nil)
            reader.close()
        }
        #expect(posixLocks(onFileAt: path) == held, "closing the reader dropped the writer's locks")
        try first.commit()
    }

    /// This process's POSIX lock ranges on the file at `path`, from /proc/locks.
    private func posixLocks(onFileAt path: String) -> [String] {
        var status = stat()
        guard stat(path, &status) == 0, let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            return []
        }
        let suffix = ":\(status.st_ino)"
        return text.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count >= 8, fields[1] == "POSIX", fields[4] == "\(getpid())", fields[5].hasSuffix(suffix)
            else { return nil }
            return fields[3...].joined(separator: " ")
        }.sorted()
    }
}
