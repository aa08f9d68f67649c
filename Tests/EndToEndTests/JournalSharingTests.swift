import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// One journal, one run at a time, whatever path names it (issue 8, problem 2; issue 12, problem 2).
@Suite("the run lock belongs to the journal file", .serialized)
struct JournalSharingTests {
    @Test func aSecondRunThroughAnySpellingOfThePathIsRefusedAndChangesNothing() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 150 }
        defer { simulator.stop() }
        let rows = Pair.generate(120)
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "2"])
        let first = try Child(arguments, key: Simulator.defaultKey, in: workspace)
        defer {
            first.send(SIGKILL)
            _ = first.wait(timeout: 30)
        }
        try #require(eventually(timeout: 30) { simulator.stats().requests > 0 }, "\(first.stderrSoFar)")

        // Every way to name the same file: a symlink, a hard link, `..`, relative paths, a linked directory.
        symlink("journal.sqlite", workspace.file("link.sqlite"))
        link(workspace.journal, workspace.file("hard.sqlite"))
        mkdir(workspace.file("sub"), 0o700)
        symlink(workspace.path, workspace.file("dirlink"))
        let spellings = [
            workspace.file("link.sqlite"), workspace.file("hard.sqlite"), workspace.file("sub/../journal.sqlite"),
            "journal.sqlite", "./sub/../link.sqlite", workspace.file("dirlink/hard.sqlite"),
        ]
        let others = Pair.generate(5, prefix: "second")
        let secondInput = workspace.csv(others, name: "second.csv")
        let before = names(in: workspace.path)
        for spelling in spellings {
            let second = try botsi(
                ["run", secondInput, "--journal", spelling, "--base-url", simulator.baseURL],
                key: Simulator.defaultKey, in: workspace)
            #expect(second.status == 75, "\(spelling): \(second.stderr)")
            #expect(second.stderr.contains("in use by another run"), "\(spelling): \(second.stderr)")
            #expect(
                second.stderr.contains("pid \(first.pid)"), "\(spelling) does not name the holder: \(second.stderr)")
            #expect(second.stderr.contains(ProcessInfo.processInfo.hostName), "no host: \(second.stderr)")
            #expect(second.stderr.contains("started 20"), "no start time: \(second.stderr)")
        }
        // A second name would give the journal a second -wal and -shm: readers are refused it too.
        let reader = try botsi(["status", "--journal", "hard.sqlite"], key: nil, in: workspace)
        #expect(reader.status == 73 && reader.stderr.contains("hard links"), "stderr: \(reader.stderr)")
        unlink(workspace.file("hard.sqlite"))
        let status = try botsi(["status", "--journal", "link.sqlite"], key: nil, in: workspace)
        #expect(status.stdout.contains("running, alive (pid \(first.pid)"), "status: \(status.stdout)\(status.stderr)")
        try #require(first.isRunning, "the first run ended before every spelling was tried: slow it down")

        let finished = first.wait(timeout: 60)
        #expect(finished.status == 0, "the refused runs disturbed the first: \(finished.stderr)")
        let requests = simulator.requestsByPair()
        #expect(others.allSatisfy { requests[$0] == nil }, "a refused run sent requests")
        let twice = rows.filter { (requests[$0] ?? 0) != 1 }
        #expect(twice.isEmpty, "rows not sent exactly once: \(twice.prefix(5))")
        let journal = try Journal(path: workspace.journal, create: false, readOnly: true)
        defer { journal.close() }
        #expect(try journal.runs().count == 1, "a refused run recorded itself")
        #expect(JournalView.read(workspace.journal)?.items.count == rows.count, "a refused run added rows")
        let after = names(in: workspace.path)
        #expect(after == before.subtracting(["hard.sqlite"]), "refused runs left files: \(after.subtracting(before))")
    }

    @Test func refusingAFileThatIsNotAJournalLeavesNoFileBehind() throws {
        let workspace = Workspace()
        let notes = workspace.write("notes.txt", "not a journal\n")
        let input = workspace.csv(Pair.generate(3))
        let before = names(in: workspace.path)
        let refused = try botsi(
            ["run", input, "--journal", notes, "--base-url", "http://127.0.0.1:9"], key: "k", in: workspace)
        #expect(refused.status == 73, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("not a botsi-restore journal"), "stderr: \(refused.stderr)")
        #expect(names(in: workspace.path) == before, "left: \(names(in: workspace.path).subtracting(before))")
        #expect(workspace.bytes("notes.txt") == Data("not a journal\n".utf8))
    }

    @Test func aPathThatIsNotARegularFileIsRefusedAsAJournal() throws {
        let workspace = Workspace()
        let input = workspace.csv(Pair.generate(3))
        mkfifo(workspace.file("fifo.sqlite"), 0o600)
        mkdir(workspace.file("folder.sqlite"), 0o700)
        // The old lock file beside the path: /dev/stdin.lock and /dev/null.lock appeared, as root.
        let lockFiles = ["/dev/stdin.lock", "/dev/null.lock"].filter { !FileManager.default.fileExists(atPath: $0) }
        for journal in ["/dev/stdin", "/dev/null", workspace.file("fifo.sqlite"), workspace.file("folder.sqlite")] {
            for command in [["run", input, "--base-url", "http://127.0.0.1:9"], ["status"], ["report"]] {
                let refused = try botsi(command + ["--journal", journal], key: "k", in: workspace, timeout: 20)
                #expect(refused.status == 73, "\(command[0]) --journal \(journal): \(refused.stderr)")
                #expect(refused.stderr.contains("not a regular file"), "\(journal): \(refused.stderr)")
            }
        }
        for lockFile in lockFiles {
            #expect(!FileManager.default.fileExists(atPath: lockFile), "a run created \(lockFile)")
        }
        #expect(names(in: workspace.path) == ["in.csv", "fifo.sqlite", "folder.sqlite"])
    }

    @Test func aJournalLinkToNothingIsRefusedRatherThanCreatedAtItsTarget() throws {
        let workspace = Workspace()
        symlink(workspace.file("elsewhere/target.sqlite"), workspace.file("dangling.sqlite"))
        let refused = try botsi(
            [
                "run", workspace.csv(Pair.generate(2)), "--journal", "dangling.sqlite", "--base-url",
                "http://127.0.0.1:9",
            ],
            key: "k", in: workspace)
        #expect(refused.status == 73, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("symbolic link to a missing file"), "stderr: \(refused.stderr)")
    }
}
