import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiFiles

@Suite struct OutputFileTests {
    private func write(
        _ path: String, _ text: String, mode: mode_t = 0o600, protecting: ProtectedFiles = ProtectedFiles()
    ) throws {
        let output = try OutputFile(path: path, role: "report", mode: mode, protecting: protecting)
        output.write(text)
        try output.commit()
    }

    @Test func aNewFileGetsExactlyItsModeAndNoTemporaryStays() throws {
        let scratch = Workspace()
        try write(scratch.file("report.csv"), "a,b\n")
        try write(scratch.file("metrics.prom"), "up 1\n", mode: 0o644)
        // 0666 survives the umask: the mode is set on the descriptor, not asked of open(2).
        try write(scratch.file("wide"), "x", mode: 0o666)
        #expect(permissions(scratch.file("report.csv")) == 0o600 && scratch.text("report.csv") == "a,b\n")
        #expect(permissions(scratch.file("metrics.prom")) == 0o644)
        #expect(permissions(scratch.file("wide")) == 0o666)
        #expect(scratch.names == ["report.csv", "metrics.prom", "wide"])
    }

    @Test func anExistingFileIsReplacedByRenameAndStaysWholeUntilCommit() throws {
        let scratch = Workspace()
        let path = scratch.write("report.csv", "old\n", mode: 0o644)
        var before = stat()
        lstat(path, &before)
        let output = try OutputFile(path: path, role: "report", mode: 0o600, protecting: ProtectedFiles())
        output.write(String(repeating: "new line\n", count: 20_000))
        #expect(scratch.text("report.csv") == "old\n", "the target changed before commit")
        // While it is written, a stop by a signal knows to remove it; once in place, not any more.
        let hidden = scratch.names.filter { $0.hasPrefix(".report.csv.") }.map { scratch.file($0) }
        #expect(hidden.count == 1 && TemporaryFiles.registered.isSuperset(of: hidden), "\(hidden)")
        try output.commit()
        #expect(TemporaryFiles.registered.isDisjoint(with: hidden))
        var after = stat()
        lstat(path, &after)
        #expect(after.st_ino != before.st_ino && permissions(path) == 0o600)
        #expect(scratch.text("report.csv")?.count == 180_000)

        let abandoned = try OutputFile(path: path, role: "report", mode: 0o600, protecting: ProtectedFiles())
        abandoned.write("half")
        #expect(TemporaryFiles.registered.contains { $0.hasPrefix(scratch.file(".report.csv.")) })
        abandoned.discard()
        #expect(!TemporaryFiles.registered.contains { $0.hasPrefix(scratch.file(".report.csv.")) })
        #expect(scratch.text("report.csv")?.count == 180_000 && scratch.names == ["report.csv"])
    }

    @Test func aLinkAtTheTargetIsReplacedAndWhatItLeadsToIsUntouched() throws {
        let scratch = Workspace()
        let victim = scratch.write("victim.txt", "precious", mode: 0o644)
        symlink(victim, scratch.file("out.csv"))
        symlink(scratch.file("nowhere"), scratch.file("dangling.csv"))
        try write(scratch.file("out.csv"), "report")
        try write(scratch.file("dangling.csv"), "report")
        #expect(scratch.text("victim.txt") == "precious" && permissions(victim) == 0o644)
        #expect(scratch.text("out.csv") == "report" && permissions(scratch.file("out.csv")) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("nowhere")))
    }

    @Test func whatIsNotARegularFileIsRefusedAndKeepsItsMode() throws {
        let scratch = Workspace()
        mkfifo(scratch.file("fifo"), 0o644)  // opening it for writing would block
        mkdir(scratch.file("folder"), 0o755)
        symlink("fifo", scratch.file("fifo-link"))
        for (name, kind) in [("fifo", "a FIFO"), ("folder", "a directory"), ("fifo-link", "a symbolic link to a FIFO")]
        {
            expectRefusal("it is \(kind)") { try write(scratch.file(name), "x") }
        }
        expectRefusal("it is a character device") { try write("/dev/null", "x") }
        #expect(permissions(scratch.file("fifo")) == 0o644)
        #expect(scratch.names == ["fifo", "folder", "fifo-link"], "a temporary file was left")
    }

    @Test(.needsRoot) func aDeviceIsRefusedAndNotChmodded() throws {
        let scratch = Workspace()
        let device = scratch.file("null")
        try #require(mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0)
        chmod(device, 0o666)
        expectRefusal("it is a character device") { try write(device, "x") }
        #expect(permissions(device) == 0o666)
    }

    @Test func theJournalUnderAnyNameAndTheFilesBesideItAreRefused() throws {
        let scratch = Workspace()
        let journal = try JournalFile(path: scratch.file("j.sqlite"), access: .create)
        defer { journal.close() }
        scratch.write("j.sqlite-shm", "")
        symlink("j.sqlite", scratch.file("link.sqlite"))
        mkdir(scratch.file("sub"), 0o700)
        var byFile = ProtectedFiles()
        byFile.add(journal)
        var byPath = ProtectedFiles()
        byPath.add(journalAt: scratch.file("link.sqlite"))
        let targets = [
            "j.sqlite", "link.sqlite", "sub/../j.sqlite", "j.sqlite-wal", "j.sqlite-shm", "j.sqlite-journal",
            "j.sqlite.lock",
        ]
        for protected in [byFile, byPath] {
            for target in targets {
                expectRefusal("journal /") { try write(scratch.file(target), "x", protecting: protected) }
            }
        }
        #expect(scratch.names == ["j.sqlite", "j.sqlite-shm", "link.sqlite", "sub"])
        #expect(permissions(journal.path) == 0o600)
    }

    @Test func anySQLiteDatabaseIsRefused() throws {
        let scratch = Workspace()
        let database = scratch.write("other.db", "SQLite format 3\0" + String(repeating: "\0", count: 84), mode: 0o644)
        expectRefusal("an SQLite database") { try write(database, "x") }
        #expect(scratch.text("other.db")?.hasPrefix("SQLite format 3") == true)
    }

    @Test func aNewOnlyTargetIsNeverReplaced() throws {
        let scratch = Workspace()
        scratch.write("taken", "keep")
        expectRefusal("already exists") {
            _ = try OutputFile.checkTarget(
                scratch.file("taken"), role: "merged journal", protecting: .init(), mustBeNew: true)
        }
        // Even when the name is taken between the check and the move.
        let target = try OutputFile.checkTarget(
            scratch.file("late"), role: "merged journal", protecting: .init(), mustBeNew: true)
        let temporary = OutputFile.temporarySibling(of: target)
        scratch.write((temporary as NSString).lastPathComponent, "new")
        scratch.write("late", "appeared meanwhile")
        expectRefusal("it appeared meanwhile") {
            try OutputFile.moveIntoPlace(temporary, target, role: "merged journal", replacing: false)
        }
        #expect(scratch.text("late") == "appeared meanwhile" && scratch.names == ["taken", "late"])
    }

    @Test func temporarySiblingsAreHiddenUnpredictableAndBesideTheTarget() throws {
        let scratch = Workspace()
        let target = try ResolvedPath.resolveParent(scratch.file("report.csv"), role: "report")
        let names = Set((0..<100).map { _ in OutputFile.temporarySibling(of: target) })
        #expect(names.count == 100)
        #expect(names.allSatisfy { $0.hasPrefix(scratch.path + "/.report.csv.") && $0.hasSuffix(".tmp") })
    }
}
