import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

extension Trait where Self == ConditionTrait {
    /// Skips a test that mounts a tmpfs (to remount it read-only) where this process may not.
    static var canMountTmpfs: Self {
        .enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)")
    }
}

/// A journal on read-only media — a snapshot, an archive, a volume mounted `ro` — is read where it
/// is by every command that only reads, changing nothing; a run on it exits 73 saying to copy it.
/// (A reviewer's find: `status`, `report`, `runs` and `merge` all exited 73 there, "cannot be
/// written … fix the permissions": SQLite's read-only open of a WAL journal makes its `-wal` and
/// `-shm`, and failed where it could not.) Real journals, the real binary, a real read-only mount.
@Suite("a journal on read-only media is read where it is")
struct ReadOnlyMediaTests {
    /// Commands that only read a journal, but `merge` and the page (which write elsewhere).
    private static let reads: [[String]] = [
        ["status"], ["runs"], ["report", "--format", "csv"], ["report", "--format", "jsonl"],
        ["report", "--format", "table"],
    ]

    /// A finished journal at `workspace.journal`: 30 rows sent and one refused by the input checks.
    private func finishedJournal(_ workspace: Workspace) throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let pairs = Pair.generate(30)
        let input = workspace.write(
            "in.csv",
            "profileId,originalTransactionId\n" + pairs.map { "\($0.profileId),\($0.transactionId)\n" }.joined()
                + ",2000000000000999\n")
        let run = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        try #require(run.status == 0, "stderr: \(run.stderr)")
    }

    private func read(_ command: [String], _ journal: String, _ workspace: Workspace) throws -> Finished {
        try botsi(command + ["--journal", journal], key: nil, in: workspace)
    }

    /// The `rows` line of `status`: the journal's counts.
    private func rowsLine(_ status: Finished) -> Substring? {
        status.stdout.split(separator: "\n").first { $0.hasPrefix("rows ") }
    }

    /// The root of a tmpfs is 1777 unless mounted otherwise, a directory the journal rules refuse
    /// to write in; read-only, no one can write it, and its journal is read as well.
    @Test(.canMountTmpfs, arguments: [0o755, 0o1777] as [mode_t])
    func everyCommandThatOnlyReadsReadsAJournalOnAReadOnlyMount(_ rootMode: mode_t) throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let media = try Tmpfs(at: workspace.file("media"), sizeKiB: 8192, mode: rootMode)
        defer { media.unmount() }
        // A name SQLite's URIs would misread if it were not escaped.
        let journal = media.path + "/audit 2026?#%41.sqlite"
        try FileManager.default.copyItem(atPath: workspace.journal, toPath: journal)
        let modeBefore = mode(journal)
        try media.remount(options: "ro")

        for command in Self.reads {
            let original = try read(command, workspace.journal, workspace)
            try #require(original.status == 0, "\(command): \(original.stderr)")
            let copy = try read(command, journal, workspace)
            #expect(copy.status == 0, "\(command) on read-only media: \(copy.stderr)")
            #expect(copy.stderr.isEmpty || copy.stderr.hasPrefix("(botsi-restore is not on PATH"), "\(copy.stderr)")
            if command == ["status"] {
                #expect(rowsLine(copy) != nil && rowsLine(copy) == rowsLine(original), "\(copy.stdout)")
            } else {
                #expect(copy.stdout == original.stdout, "\(command)")
            }
        }
        let page = workspace.file("page.html")
        let html = try read(["report", "--format", "html", "--output", page], journal, workspace)
        #expect(html.status == 0 && FileManager.default.fileExists(atPath: page), "\(html.stderr)")

        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, journal], key: nil, in: workspace)
        #expect(merge.status == 0, "\(merge.stderr)")
        let csv = ["report", "--format", "csv"]
        #expect(try read(csv, merged, workspace).stdout == read(csv, workspace.journal, workspace).stdout)

        try media.remount(options: "rw")
        #expect(names(in: media.path) == ["audit 2026?#%41.sqlite"], "a side file was left on the media")
        #expect(mode(journal) == modeBefore)
    }

    @Test(.canMountTmpfs) func aRunOnAJournalOnReadOnlyMediaExits73SayingToCopyItNotToFixPermissions() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let media = try Tmpfs(at: workspace.file("media"), sizeKiB: 8192)
        defer { media.unmount() }
        let journal = media.path + "/journal.sqlite"
        try FileManager.default.copyItem(atPath: workspace.journal, toPath: journal)
        try media.remount(options: "ro")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let more = workspace.csv(Pair.generate(5, prefix: "more"), name: "more.csv")

        let run = try botsi(
            ["run", more, "--journal", journal, "--base-url", simulator.baseURL], key: Simulator.defaultKey,
            in: workspace)
        #expect(run.status == 73, "\(run.stderr)")
        #expect(run.stderr.contains("journal \(journal) is on a file system mounted read-only"), "\(run.stderr)")
        #expect(run.stderr.contains("copy it") && !run.stderr.contains("permissions"), "\(run.stderr)")
        #expect(simulator.stats().requests == 0)

        let fresh = media.path + "/new.sqlite"
        let create = try botsi(
            ["run", more, "--journal", fresh, "--base-url", simulator.baseURL], key: Simulator.defaultKey,
            in: workspace)
        #expect(create.status == 73, "\(create.stderr)")
        let said = "cannot create journal \(fresh): its directory is on a file system mounted read-only"
        #expect(create.stderr.contains(said), "\(create.stderr)")
        #expect(simulator.stats().requests == 0)

        // Files a run or a report writes there are refused before any work (a metrics file was
        // warned about twice, after a run that exited 0).
        let metrics = try botsi(
            [
                "run", more, "--journal", workspace.journal, "--base-url", simulator.baseURL, "--metrics-file",
                media.path + "/run.prom",
            ], key: Simulator.defaultKey, in: workspace)
        #expect(metrics.status == 64, "\(metrics.stderr)")
        #expect(metrics.stderr.contains("its directory is on a read-only file system"), "\(metrics.stderr)")
        #expect(simulator.stats().requests == 0)
        let report = try botsi(
            ["report", "--journal", workspace.journal, "--output", media.path + "/report.csv"], key: nil, in: workspace)
        #expect(report.status != 0 && report.stderr.contains("read-only file system"), "\(report.stderr)")
    }

    /// Narrowing a journal others could read is a chmod, which read-only media refuse: it is not
    /// tried, and the reader is told the file stays as it is.
    @Test(.canMountTmpfs) func aJournalOthersCouldReadOnReadOnlyMediaIsReadAndLeftAsItIs() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let media = try Tmpfs(at: workspace.file("media"), sizeKiB: 8192)
        defer { media.unmount() }
        let journal = media.path + "/journal.sqlite"
        try FileManager.default.copyItem(atPath: workspace.journal, toPath: journal)
        chmod(journal, 0o644)
        try media.remount(options: "ro")

        let status = try read(["status"], journal, workspace)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stderr.contains("mode 0644, open to other users"), "\(status.stderr)")
        #expect(status.stderr.contains("it was left as it is"), "\(status.stderr)")
        #expect(mode(journal) == 0o644)
    }

    /// A journal copied with commits still in its write-ahead log: with the log's `-shm` beside it
    /// SQLite reads the log there (the commits are shown); without it SQLite cannot, and reading
    /// the journal file alone would show it as it was before them — refused, saying so.
    @Test(.canMountTmpfs) func aLogBesideTheJournalIsReadWithItsShmAndRefusedPlainlyWithout() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let csv = ["report", "--format", "csv"]
        let before = try read(csv, workspace.journal, workspace).stdout
        // A commit left in the log: the journal's one refused input row deleted, not checkpointed.
        let logged = workspace.file("logged.sqlite")
        try FileManager.default.copyItem(atPath: workspace.journal, toPath: logged)
        try runProgram(
            "/usr/bin/sqlite3", [logged, ".dbconfig no_ckpt_on_close on", "DELETE FROM rejections"]
        ).requireSuccess()
        let media = try Tmpfs(at: workspace.file("media"), sizeKiB: 8192)
        defer { media.unmount() }
        for (directory, suffixes) in [("both", ["", "-wal", "-shm"]), ("walonly", ["", "-wal"])] {
            mkdir(media.path + "/" + directory, 0o700)
            for suffix in suffixes {
                try FileManager.default.copyItem(
                    atPath: logged + suffix, toPath: media.path + "/\(directory)/journal.sqlite" + suffix)
            }
        }
        try #require(linkStatus(logged + "-wal").map { $0.st_size > 32 } == true, "no commit was left in the log")
        try media.remount(options: "ro")
        let after = try read(csv, logged, workspace).stdout
        try #require(after != before && before.contains("missing_profile_id"))

        let both = media.path + "/both/journal.sqlite"
        #expect(try read(csv, both, workspace).stdout == after, "the log's commit was not read")
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, both], key: nil, in: workspace)
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(try read(csv, merged, workspace).stdout == after, "merge did not read the log's commit")

        let walOnly = media.path + "/walonly/journal.sqlite"
        for command in Self.reads + [["merge", workspace.file("merged-2.sqlite")]] {
            let finished =
                command[0] == "merge"
                ? try botsi(command + [walOnly], key: nil, in: workspace) : try read(command, walOnly, workspace)
            #expect(finished.status == 73, "\(command): \(finished.stderr)")
            #expect(finished.stdout.isEmpty, "\(command) printed a journal without its log: \(finished.stdout)")
            let said = finished.stderr
            #expect(said.contains("has a write-ahead log beside it (\(walOnly)-wal"), "\(command): \(said)")
            #expect(said.contains("cp \(walOnly) \(walOnly)-wal DIR/"), "\(command): \(said)")
            #expect(!said.contains("permissions"), "\(command): \(said)")
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.file("merged-2.sqlite")))
    }

    /// Not only a mount: a user's journal in a directory they cannot write (a 0555 archive) is
    /// read, with no `-wal` or `-shm` made; a run there is told it cannot write it.
    @Test(.needsRoot) func aJournalInADirectoryItsOwnerCannotWriteIsRead() throws {
        let workspace = Workspace()
        try finishedJournal(workspace)
        let archive = SecondUser.directory("archive", in: workspace.path)
        let journal = archive + "/journal.sqlite"
        try FileManager.default.copyItem(atPath: workspace.journal, toPath: journal)
        chown(journal, SecondUser.uid, SecondUser.gid)
        chmod(journal, 0o400)
        chmod(archive, 0o555)

        for command in Self.reads {
            let original = try read(command, workspace.journal, workspace)
            let theirs = try botsi(command + ["--journal", journal], key: nil, in: workspace, asSecondUser: true)
            #expect(theirs.status == 0, "\(command): \(theirs.stderr)")
            if command != ["status"] { #expect(theirs.stdout == original.stdout, "\(command)") }
        }
        #expect(names(in: archive) == ["journal.sqlite"])
        let run = try botsi(
            ["run", "--journal", journal, "--base-url", "http://127.0.0.1:9"], key: "key", in: workspace,
            asSecondUser: true)
        #expect(run.status == 73 && run.stderr.contains("cannot be written"), "\(run.stderr)")
        #expect(mode(journal) == 0o400)
    }
}
