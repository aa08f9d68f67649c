import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Whose journal it is and where it lives: a journal is used only when it is the running user's own
/// regular file in a directory no one else can write (issue 12, problem 2; issue 8, "tightened on open").
@Suite("only the user's own journal, in a directory no one else writes")
struct JournalTrustTests {
    private func finishedJournal(_ workspace: Workspace, rows: Int = 10) throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let run = try botsi(
            runArguments([workspace.csv(Pair.generate(rows))], workspace, simulator), key: Simulator.defaultKey,
            in: workspace)
        try #require(run.status == 0, "stderr: \(run.stderr)")
    }

    /// A journal moved away, removed, or replaced by a backup while a run writes it: the run stops
    /// at its next batch with exit 73, says what happened, and writes nothing more. What it had
    /// committed is in the file it had open (a moved journal put back holds it), and the log left
    /// at the old name is emptied, so a backup put there stays whole (a review: the backup read
    /// that log as its own and was "malformed"; the moved file was an empty shell).
    @Test(arguments: ["moved", "removed", "replaced"])
    func aJournalTakenWhileARunWritesItStopsTheRun(_ how: String) throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let journal = workspace.file("journal.sqlite")
        // The backup: the journal after a first, small run.
        let small = try botsi(
            ["run", workspace.csv(Pair.generate(3, prefix: "first"), name: "first.csv"), "--journal", journal]
                + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
        try #require(small.status == 0, "\(small.stderr)")
        try FileManager.default.copyItem(atPath: journal, toPath: workspace.file("backup.sqlite"))
        let input = workspace.csv(Pair.generate(600))
        let child = try Child(
            ["run", input, "--journal", journal, "--base-url", simulator.baseURL]
                + ["--rate", "100", "--no-adaptive", "--quiet"], key: Simulator.defaultKey, in: workspace)
        let deadline = Date().addingTimeInterval(20)
        while simulator.stats().requests < 50 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        switch how {
        case "moved": rename(journal, workspace.file("moved.sqlite"))
        case "removed": unlink(journal)
        default: rename(workspace.file("backup.sqlite"), journal)
        }
        let finished = child.wait(timeout: 60)
        #expect(finished.status == 73, "\(how): \(finished.stderr)")
        #expect(
            finished.stderr.contains("was moved, removed or replaced while this run wrote it"), "\(finished.stderr)")
        #expect(simulator.stats().requests < 400, "the run went on sending")
        // No counts of that file; the command that goes on reads the input again.
        #expect(!finished.stderr.contains("pending:"), "\(finished.stderr)")
        #expect(finished.stderr.contains("with: botsi-restore run \(input) --journal"), "\(finished.stderr)")
        switch how {
        case "moved":
            // Put back, it holds what the run committed before the move, and nothing after.
            rename(workspace.file("moved.sqlite"), journal)
            let check = try JournalTables.rows(journal, "PRAGMA integrity_check")
            #expect(check == [["ok"]], "\(check)")
            let answered = try JournalTables.rows(journal, "SELECT count(*) FROM items WHERE status NOT IN (0, 1)")
            #expect(Int((answered.first?.first ?? nil) ?? "0") ?? 0 >= 10, "\(answered)")
            let run = try JournalTables.rows(journal, "SELECT ended_at FROM runs WHERE id = 2")
            #expect(run == [[nil]], "the run's end went nowhere: \(run)")
        case "replaced":
            // The backup is whole, and holds what it held: the first run's three rows.
            let check = try JournalTables.rows(journal, "PRAGMA integrity_check")
            let rows = try JournalTables.rows(journal, "SELECT count(*) FROM items")
            #expect(check == [["ok"]] && rows == [["3"]], "the backup read the run's log as its own: \(check) \(rows)")
        default: break
        }
    }

    @Test func aJournalOthersCouldReadIsMadePrivateOnOpenAndSaysSoOnce() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        chmod(workspace.journal, 0o644)
        let first = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(first.stderr.contains("mode 0644") && first.stderr.contains("0600"), "stderr: \(first.stderr)")
        #expect(mode(workspace.journal) == 0o600)
        let second = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(!second.stderr.contains("0600"), "said twice: \(second.stderr)")

        // While `run` routes notices through its progress printer: the same line, a warning that
        // `--quiet` keeps.
        chmod(workspace.journal, 0o644)
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let run = try botsi(
            runArguments([], workspace, simulator, ["--quiet"]), key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let said = "botsi-restore: journal \(workspace.journal) was mode 0644, open to other users; it is now 0600\n"
        #expect(run.stderr.contains(said), "stderr: \(run.stderr)")
        #expect(mode(workspace.journal) == 0o600)
    }

    @Test(.needsRoot) func aJournalOwnedByAnotherUserIsRefusedAndLeftAsItIs() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        chown(workspace.journal, SecondUser.uid, SecondUser.gid)
        chmod(workspace.journal, 0o666)
        let bytes = workspace.bytes("journal.sqlite")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let commands = [
            runArguments([workspace.csv(Pair.generate(3, prefix: "more"), name: "more.csv")], workspace, simulator),
            ["status", "--journal", workspace.journal], ["report", "--journal", workspace.journal],
        ]
        for command in commands {
            let refused = try botsi(command, key: Simulator.defaultKey, in: workspace)
            #expect(refused.status == 73, "\(command[0]): \(refused.stderr)")
            #expect(refused.stderr.contains("belongs to uid 65534"), "\(command[0]): \(refused.stderr)")
        }
        #expect(simulator.stats().requests == 0)
        let status = try #require(linkStatus(workspace.journal))
        #expect(status.st_uid == SecondUser.uid && status.st_mode & 0o777 == 0o666, "the other user's file was changed")
        #expect(workspace.bytes("journal.sqlite") == bytes)
    }

    @Test(.needsRoot) func aJournalPlantedInAnotherUsersDirectoryIsNeitherUsedNorCreated() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        chmod(workspace.journal, 0o644)
        let theirs = SecondUser.directory("theirs", in: workspace.path)
        try #require(
            try SecondUser.shell("cp ../journal.sqlite planted.sqlite && chmod 666 planted.sqlite", in: theirs) == 0)
        let simulator = try startSimulator()
        defer { simulator.stop() }
        for journal in [theirs + "/planted.sqlite", theirs + "/new.sqlite"] {
            let arguments =
                ["run", workspace.csv(Pair.generate(3, prefix: "x"), name: "x.csv")]
                + ["--journal", journal, "--base-url", simulator.baseURL]
            let refused = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
            #expect(refused.status == 73, "\(journal): \(refused.stderr)")
            #expect(refused.stderr.contains("belongs to uid 65534"), "\(journal): \(refused.stderr)")
        }
        #expect(simulator.stats().requests == 0)
        #expect(names(in: theirs) == ["planted.sqlite"])
        #expect(mode(theirs + "/planted.sqlite") == 0o666)
    }

    @Test(.needsRoot) func aJournalInADirectoryOthersCanWriteIsRefused() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let shared = workspace.file("shared")
        mkdir(shared, 0o755)
        chmod(shared, 0o1777)
        rename(workspace.journal, shared + "/journal.sqlite")
        // Someone else's log beside it would be read and written as the journal's own.
        try #require(try SecondUser.shell("touch journal.sqlite-wal && chmod 666 journal.sqlite-wal", in: shared) == 0)
        let simulator = try startSimulator()
        defer { simulator.stop() }
        for journal in [shared + "/journal.sqlite", shared + "/new.sqlite"] {
            let arguments =
                ["run", workspace.csv(Pair.generate(3, prefix: "y"), name: "y.csv")]
                + ["--journal", journal, "--base-url", simulator.baseURL]
            let refused = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
            #expect(refused.status == 73, "\(journal): \(refused.stderr)")
            #expect(refused.stderr.contains("other users can write"), "\(journal): \(refused.stderr)")
        }
        #expect(simulator.stats().requests == 0)
        #expect(names(in: shared) == ["journal.sqlite", "journal.sqlite-wal"])
        #expect((try? FileManager.default.attributesOfItem(atPath: shared + "/journal.sqlite-wal")[.size] as? Int) == 0)
    }

    @Test(.needsRoot) func anotherUserCanNeitherHoldTheRunLockNorBlockRunsWithALockFile() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        // What used to be the lock: a JOURNAL.lock another user made and holds.
        let oldLock = workspace.write("journal.sqlite.lock", "")
        chown(oldLock, SecondUser.uid, SecondUser.gid)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: SecondUser.setpriv)
        // It holds the lock until its stdin closes.
        holder.arguments = SecondUser.arguments + ["/usr/bin/flock", "-n", oldLock, "/bin/sh", "-c", "read line"]
        let release = Pipe()
        holder.standardInput = release
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer {
            try? release.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        let held = eventually(timeout: 10) {
            (try? String(contentsOfFile: "/proc/locks", encoding: .utf8))?
                .contains(" \(holder.processIdentifier) ") == true
        }
        try #require(held, "the other user's flock never showed in /proc/locks")
        // The journal is 0600: the other user cannot even open it to lock it.
        #expect(try SecondUser.shell("/usr/bin/flock -n \(workspace.journal) true 2>/dev/null", in: "/") != 0)

        let simulator = try startSimulator()
        defer { simulator.stop() }
        let more = Pair.generate(3, prefix: "more")
        let run = try botsi(
            runArguments([workspace.csv(more, name: "more.csv")], workspace, simulator), key: Simulator.defaultKey,
            in: workspace)
        #expect(run.status == 0, "the other user's lock file stopped the run: \(run.stderr)")
        #expect(simulator.stats().requests == 3)
    }

    @Test(.needsRoot) func anOrdinaryUserWorksOnTheirOwnJournalAndRootMayNotUseIt() throws {
        let workspace = Workspace()
        let home = SecondUser.directory("home", in: workspace.path, mode: 0o700)
        let input = workspace.csv(Pair.generate(8), name: "home/in.csv")
        chown(input, SecondUser.uid, SecondUser.gid)
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let journal = home + "/journal.sqlite"
        let run = try botsi(
            ["run", input, "--journal", journal, "--base-url", simulator.baseURL], key: Simulator.defaultKey,
            in: workspace, workingDirectory: home, asSecondUser: true)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let status = try #require(linkStatus(journal))
        #expect(status.st_uid == SecondUser.uid && status.st_mode & 0o777 == 0o600)
        let theirs = try botsi(["status", "--journal", journal], key: nil, in: workspace, asSecondUser: true)
        #expect(theirs.status == 0, "stderr: \(theirs.stderr)")
        let roots = try botsi(["status", "--journal", journal], key: nil, in: workspace)
        #expect(roots.status == 73 && roots.stderr.contains("run it as its owner"), "stderr: \(roots.stderr)")
    }

    @Test(.needsRoot) func theDemoAndADryRunUseDirectoriesNoOneCouldPrepare() throws {
        let workspace = Workspace()
        let victim = workspace.write("victim.txt", "precious\n")
        chmod(victim, 0o644)
        let temporary = workspace.file("tmp")
        mkdir(temporary, 0o755)
        chmod(temporary, 0o1777)
        var environment = Child.environment(key: nil)
        environment["TMPDIR"] = temporary

        let demoWindow = try prepareNextPids(in: temporary, linkingTo: victim) { pid in
            "mkdir \"botsi-restore-demo-\(pid)\" or die; "
                + "symlink $v, \"botsi-restore-demo-\(pid)/$_\" for (\"demo.sqlite\", \"demo.sqlite.lock\");"
        }
        let demo = try Child(
            ["demo"], key: nil, in: workspace, workingDirectory: Locations.packageRoot, environment: environment)
        let demoRun = demo.wait(timeout: 120)
        #expect(demoRun.status == 0, "stderr: \(demoRun.stderr)")

        let dryWindow = try prepareNextPids(in: temporary, linkingTo: victim) { pid in
            "symlink $v, \"botsi-restore-dry-run-\(pid).sqlite$_\" for (\"\", \".lock\");"
        }
        environment["BOTSI_SECRET_KEY"] = "key"
        let dryRun = try Child(
            ["run", workspace.csv(Pair.generate(3)), "--journal", workspace.file("new.sqlite"), "--dry-run"],
            key: nil, in: workspace, environment: environment)
        let dry = dryRun.wait(timeout: 60)
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        print("demo: pid \(demo.pid), names prepared for \(demoWindow); dry run: pid \(dryRun.pid), for \(dryWindow)")

        #expect(workspace.bytes("victim.txt") == Data("precious\n".utf8), "a prepared link was followed")
        #expect(mode(victim) == 0o644)
        #expect(!FileManager.default.fileExists(atPath: workspace.file("new.sqlite")), "the dry run left a journal")
        let ours = names(in: temporary).filter { (linkStatus(temporary + "/" + $0)?.st_uid ?? 1) == 0 }
        #expect(ours.count == 1 && ours.allSatisfy { $0.hasPrefix("botsi-restore-demo-") }, "left: \(ours)")
        if let directory = ours.first {
            #expect(mode(temporary + "/" + directory) == 0o700, "the demo's directory is not private")
            #expect(demoRun.stderr.contains(temporary + "/" + directory + "/demo.sqlite"))
        }
    }

    /// As the second user, makes in `directory` what `names(pid)` (perl, `$v` the victim, `$_` the
    /// loop word) says for the next 1,500 pids: what a name taken from a pid invites.
    private func prepareNextPids(
        in directory: String, linkingTo victim: String, _ names: (String) -> String
    ) throws -> ClosedRange<Int> {
        let last = (try? String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8)).flatMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let window = ((last ?? 0) + 1)...((last ?? 0) + 1500)
        // perl, not a shell loop: 1,500 names in well under a second.
        let script = "my $v = \"\(victim)\"; for my $p (\(window.lowerBound)..\(window.upperBound)) { \(names("$p")) }"
        try #require(try SecondUser.shell("perl -e '\(script)'", in: directory) == 0)
        return window
    }
}
