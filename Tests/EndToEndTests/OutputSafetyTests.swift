import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `report --output` and `merge OUT` write a new file and rename it into place; they never write
/// through a link, into a device, or over a journal (issue 8, problem 1; issue 12, problem 1).
@Suite("outputs never overwrite what they must not")
struct OutputSafetyTests {
    /// A workspace with a finished journal of `count` rows.
    private func finishedJournal(_ count: Int = 20) throws -> Workspace {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let run = try botsi(
            runArguments([workspace.csv(Pair.generate(count))], workspace, simulator), key: Simulator.defaultKey,
            in: workspace)
        try #require(run.status == 0, "stderr: \(run.stderr)")
        return workspace
    }

    private func report(_ workspace: Workspace, output: String, journal: String? = nil) throws -> Finished {
        try botsi(
            ["report", "--journal", journal ?? workspace.journal, "--format", "csv", "--output", output], key: nil,
            in: workspace, timeout: 20)
    }

    @Test func aReportOntoTheJournalUnderAnySpellingIsRefusedAndTheJournalStaysWhole() throws {
        let workspace = try finishedJournal()
        let journalBytes = try #require(workspace.bytes("journal.sqlite"))
        symlink("journal.sqlite", workspace.file("link.sqlite"))
        mkdir(workspace.file("sub"), 0o700)
        try Journal(path: workspace.file("other.sqlite")).close()
        let targets = [
            "journal.sqlite", workspace.journal, "link.sqlite", "sub/../journal.sqlite", "./sub/../link.sqlite",
            "journal.sqlite-wal", "journal.sqlite-shm", "journal.sqlite.lock", "other.sqlite",
        ]
        let before = names(in: workspace.path)
        for target in targets {
            for journal in [workspace.journal, "link.sqlite"] {
                let refused = try report(workspace, output: target, journal: journal)
                #expect(refused.status == 73, "--output \(target) --journal \(journal): \(refused.stderr)")
                #expect(refused.stderr.contains("nothing was changed"), "\(target): \(refused.stderr)")
            }
        }
        #expect(workspace.bytes("journal.sqlite") == journalBytes, "the journal changed")
        #expect(names(in: workspace.path) == before, "new files: \(names(in: workspace.path).subtracting(before))")
        #expect(JournalView.read(workspace.journal, integrity: true)?.integrity == "ok")
        for target in ["journal.sqlite", "link.sqlite", "journal.sqlite-wal", "other.sqlite"] {
            let merge = try botsi(["merge", target, "link.sqlite"], key: nil, in: workspace)
            #expect(merge.status == 73, "merge into \(target): \(merge.stderr)")
        }
        // A hard link is another name too, but one SQLite would give a log of its own: refused as a journal.
        link(workspace.journal, workspace.file("hard.sqlite"))
        let beforeHardLink = names(in: workspace.path)
        for journal in ["journal.sqlite", "hard.sqlite"] {
            let refused = try report(workspace, output: "fresh.csv", journal: journal)
            #expect(refused.status == 73 && refused.stderr.contains("hard links"), "\(journal): \(refused.stderr)")
        }
        #expect(workspace.bytes("journal.sqlite") == journalBytes, "the journal changed")
        #expect(names(in: workspace.path) == beforeHardLink)
    }

    /// `run export.csv --metrics-file export.csv` exited 0 and the input then started with
    /// `# HELP botsi_restore_rows` (issue 20, item 4). Refused now under any name of any input, stdin
    /// included, as onto the journal: exit 64, naming both, nothing sent.
    @Test func aMetricsFileOntoAnInputIsRefusedUnderAnySpellingAndTheInputStaysWhole() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(5))
        let other = workspace.csv(Pair.generate(3, prefix: "o"), name: "other.csv")
        let bytes = try #require(workspace.bytes("in.csv"))
        symlink("in.csv", workspace.file("link.csv"))
        link(input, workspace.file("hard.csv"))
        mkdir(workspace.file("sub"), 0o700)
        let inputs = [other, "in.csv"]
        for target in ["in.csv", input, "link.csv", "sub/../in.csv", "hard.csv", "./other.csv"] {
            let refused = try botsi(
                runArguments(inputs, workspace, simulator, ["--metrics-file", target]), key: Simulator.defaultKey,
                in: workspace)
            #expect(refused.status == 64, "--metrics-file \(target): \(refused.stderr)")
            #expect(
                refused.stderr.contains("cannot write the metrics file to \(target): it is ")
                    && refused.stderr.contains("the input "), "\(target): \(refused.stderr)")
        }
        // stdin that is the file itself (`run - < in.csv`).
        let child = try Child(
            ["run", "-", "--format", "csv"]
                + Array(runArguments([], workspace, simulator, ["--metrics-file", "hard.csv"]).dropFirst()),
            key: Simulator.defaultKey, in: workspace, launcher: ["/bin/sh", "-c", "exec \"$0\" \"$@\" < in.csv"])
        let fromStdin = child.wait(timeout: 60)
        #expect(fromStdin.status == 64, "stdin: \(fromStdin.stderr)")
        #expect(fromStdin.stderr.contains("it is the input stdin (under another name)"), "\(fromStdin.stderr)")
        #expect(workspace.bytes("in.csv") == bytes, "the input changed")
        // A review: onto the journal a first run would create (or its -wal), the run went ahead and
        // only warned at each write, twice, and not at all under --quiet.
        let journalName = URL(fileURLWithPath: workspace.journal).lastPathComponent
        for target in [journalName, journalName + "-wal", "./" + journalName + ".lock"] {
            let refused = try botsi(
                runArguments([input], workspace, simulator, ["--metrics-file", target, "--quiet"]),
                key: Simulator.defaultKey, in: workspace)
            #expect(refused.status == 64, "--metrics-file \(target): \(refused.stderr)")
            #expect(
                refused.stderr.contains("of journal") || refused.stderr.contains("the journal"), "\(refused.stderr)")
        }
        #expect(simulator.stats().requests == 0, "a refused run sent requests")
        #expect(!FileManager.default.fileExists(atPath: workspace.journal))
    }

    /// `report --output` onto an input any run of its journal read: refused like onto the journal
    /// (exit 73), naming the input and its run, whatever the spelling and the working directory.
    @Test func aReportOntoAnInputOfItsJournalsRunsIsRefused() throws {
        let workspace = try finishedJournal(5)
        let input = workspace.file("in.csv")
        let bytes = try #require(workspace.bytes("in.csv"))
        // A second run with a relative input, read from the workspace.
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let relative = workspace.csv(Pair.generate(3, prefix: "r"), name: "relative.csv")
        let second = try botsi(
            runArguments(["relative.csv"], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        try #require(second.status == 0, "stderr: \(second.stderr)")
        symlink("in.csv", workspace.file("link.csv"))
        link(input, workspace.file("hard.csv"))
        mkdir(workspace.file("sub"), 0o700)
        for (target, directory, named) in [
            ("in.csv", workspace.path, "in.csv of run 1"), (input, workspace.path, "in.csv of run 1"),
            ("link.csv", workspace.path, "in.csv of run 1"), ("hard.csv", workspace.path, "in.csv of run 1"),
            ("relative.csv", workspace.path, "relative.csv of run 2"),
            // From another directory: the relative input is found beside the journal.
            ("../relative.csv", workspace.file("sub"), "relative.csv of run 2"),
        ] {
            let refused = try botsi(
                ["report", "--journal", workspace.journal, "--output", target], key: nil, in: workspace,
                workingDirectory: directory, timeout: 20)
            #expect(refused.status == 73, "--output \(target) in \(directory): \(refused.stderr)")
            #expect(
                refused.stderr.contains("it is ") && refused.stderr.contains("\(named) of this journal")
                    && refused.stderr.contains("nothing was changed"), "\(target): \(refused.stderr)")
        }
        #expect(workspace.bytes("in.csv") == bytes && workspace.bytes("relative.csv").map(Array.init) != nil)
        #expect(try String(contentsOfFile: relative, encoding: .utf8).hasPrefix("profileId,"))

        // README's layout (exports/ and journals/ under the job's directory), the report made from
        // elsewhere: neither the working directory nor the journal's found the export, and it was
        // replaced. The run's absolute path finds it.
        for directory in ["cw", "cw/exports", "cw/journals"] { mkdir(workspace.file(directory), 0o700) }
        let export = workspace.csv(Pair.generate(3, prefix: "cw"), name: "cw/exports/rehearsal.csv")
        let exported = try #require(workspace.bytes("cw/exports/rehearsal.csv"))
        let job = try botsi(
            ["run", "exports/rehearsal.csv", "--journal", "journals/job.sqlite", "--base-url", simulator.baseURL],
            key: Simulator.defaultKey, in: workspace, workingDirectory: workspace.file("cw"))
        try #require(job.status == 0, "stderr: \(job.stderr)")
        let over = try botsi(
            ["report", "--journal", "cw/journals/job.sqlite", "--output", "cw/exports/rehearsal.csv"], key: nil,
            in: workspace, timeout: 20)
        #expect(over.status == 73 && over.stderr.contains("exports/rehearsal.csv of run 1"), "\(over.stderr)")
        #expect(workspace.bytes("cw/exports/rehearsal.csv") == exported, "\(export) was replaced")
        // Another file is written as before.
        let written = try report(workspace, output: "fresh.csv")
        #expect(written.status == 0, "stderr: \(written.stderr)")
    }

    @Test func aLinkAtTheOutputPathIsReplacedNotWrittenThrough() throws {
        let workspace = try finishedJournal()
        let victim = workspace.write("victim.txt", "precious\n")
        chmod(victim, 0o644)
        symlink("victim.txt", workspace.file("out.csv"))
        let written = try report(workspace, output: "out.csv")
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(workspace.bytes("victim.txt") == Data("precious\n".utf8), "the report was written through the link")
        #expect(mode(victim) == 0o644, "the link's target was chmodded")
        let output = try #require(linkStatus(workspace.file("out.csv")))
        #expect(output.st_mode & S_IFMT == S_IFREG && output.st_mode & 0o777 == 0o600)
        let text = String(decoding: workspace.bytes("out.csv") ?? Data(), as: UTF8.self)
        #expect(text.hasPrefix("profileId,") && parseCSV(text).count == 21, "report: \(text)")
        #expect(names(in: workspace.path).allSatisfy { !$0.contains(".tmp") }, "a temporary file was left")
    }

    @Test(.needsRoot) func aSecondUsersLinkToRootsFileIsReplacedNotWrittenThrough() throws {
        let workspace = try finishedJournal()
        let victim = workspace.write("victim.txt", "root's own\n")
        chmod(victim, 0o644)
        let shared = SecondUser.directory("shared", in: workspace.path)
        try #require(try SecondUser.shell("ln -s \(victim) report.csv", in: shared) == 0)
        let written = try report(workspace, output: shared + "/report.csv")
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(workspace.bytes("victim.txt") == Data("root's own\n".utf8), "root wrote through the other user's link")
        #expect(mode(victim) == 0o644)
    }

    @Test(.needsRoot) func devicesFIFOsAndDirectoriesAreRefusedAndKeepTheirMode() throws {
        let workspace = try finishedJournal()
        // A copy of /dev/null: what `--output /dev/null` as root used to turn into crw-------.
        let device = workspace.file("null")
        let made = mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 3))
        try #require(made == 0, "mknod failed: \(String(cString: strerror(errno)))")
        chmod(device, 0o666)
        mkfifo(workspace.file("fifo"), 0o644)
        mkdir(workspace.file("folder"), 0o755)
        symlink("null", workspace.file("null-link"))
        for target in ["null", "null-link", "fifo", "folder"] {
            let refused = try report(workspace, output: target)
            #expect(refused.status == 73, "--output \(target): \(refused.stderr)")
            #expect(refused.stderr.contains("nothing was changed"), "\(target): \(refused.stderr)")
        }
        #expect(mode(device) == 0o666, "the device's mode changed")
        #expect(mode(workspace.file("fifo")) == 0o644)
        #expect((linkStatus(workspace.file("null-link"))?.st_mode ?? 0) & S_IFMT == S_IFLNK)
    }

    @Test func anExistingReportIsReplacedWholeAndMadePrivate() throws {
        let workspace = try finishedJournal(5)
        let old = workspace.write("out.csv", "old report\n")
        chmod(old, 0o644)
        let oldInode = try #require(linkStatus(old)).st_ino
        let written = try report(workspace, output: "out.csv")
        #expect(written.status == 0, "stderr: \(written.stderr)")
        let new = try #require(linkStatus(old))
        #expect(new.st_ino != oldInode, "the report was written into the old file, not renamed over it")
        #expect(new.st_mode & 0o777 == 0o600)
        #expect(String(decoding: workspace.bytes("out.csv") ?? Data(), as: UTF8.self).hasPrefix("profileId,"))
    }

    @Test func aMergeWritesANewJournalAndRefusesAnExistingOne() throws {
        let workspace = try finishedJournal(5)
        let merged = try botsi(["merge", "merged.sqlite", "journal.sqlite"], key: nil, in: workspace)
        #expect(merged.status == 0, "stderr: \(merged.stderr)")
        #expect(mode(workspace.file("merged.sqlite")) == 0o600)
        #expect(JournalView.read(workspace.file("merged.sqlite"))?.items.count == 5)
        let bytes = workspace.bytes("merged.sqlite")
        let again = try botsi(["merge", "merged.sqlite", "journal.sqlite"], key: nil, in: workspace)
        #expect(again.status == 73, "stderr: \(again.stderr)")
        #expect(workspace.bytes("merged.sqlite") == bytes)
        #expect(names(in: workspace.path).allSatisfy { !$0.contains(".tmp") }, "a temporary file was left")
    }
}
