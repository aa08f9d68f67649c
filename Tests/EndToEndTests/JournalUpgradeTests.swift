import BotsiBasics
import BotsiJournal
import BotsiTestSupport
import CSQLite
import Foundation
import Testing

/// A journal the c6f06ff binary wrote (schema 4, Tests/Fixtures/journals/c6f06ff, with the input
/// that made it) is carried into schema 5 whole: its reports are byte for byte what c6f06ff's were,
/// a command that only reads says a run must upgrade it and changes nothing, and a kill at any
/// moment of the upgrade leaves schema 4 or schema 5, never a mix (issue 21, item 2).
@Suite("a schema-4 journal upgraded")
struct JournalUpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/journals/c6f06ff")

    private func copyOfTheFixture(in workspace: Workspace, name: String = "journal.sqlite") throws -> String {
        let copy = workspace.file(name)
        try FileManager.default.copyItem(
            atPath: Self.fixtures.appendingPathComponent("journal.sqlite").path, toPath: copy)
        return copy
    }

    private func report(_ journal: String, _ format: String, in workspace: Workspace) throws -> String {
        let report = try botsi(["report", "--journal", journal, "--format", format], key: nil, in: workspace)
        #expect(report.status == 0, "stderr: \(report.stderr)")
        return report.stdout
    }

    @Test func itsReportsAreC6f06ffsByteForByte() throws {
        let workspace = Workspace()
        let journal = try copyOfTheFixture(in: workspace)
        let upgrade = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(upgrade.status == 0, "stderr: \(upgrade.stderr)")
        #expect(upgrade.stderr.contains("from schema 4 to 5: 9 rows"), "\(upgrade.stderr)")
        let again = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(again.status == 0 && again.stderr.contains("at schema 5 already"), "\(again.stderr)")
        for format in ["csv", "jsonl"] {
            let before = try String(
                contentsOf: Self.fixtures.appendingPathComponent("report-by-c6f06ff.\(format)"), encoding: .utf8)
            #expect(try report(journal, format, in: workspace) == before, "report --format \(format)")
        }
        let upgraded = try SQLiteTool.execute(journal, "PRAGMA user_version; PRAGMA integrity_check")
        #expect(upgraded.split(separator: "\n") == ["5", "ok"])
    }

    @Test func aCommandThatOnlyReadsSaysARunUpgradesItAndChangesNothing() throws {
        let workspace = Workspace()
        let journal = try copyOfTheFixture(in: workspace)
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))
        for command in [["status"], ["runs"], ["report"]] {
            let refused = try botsi(command + ["--journal", journal], key: nil, in: workspace)
            #expect(refused.status != 0)
            #expect(
                refused.stderr.contains("schema version 4, from an earlier botsi-restore")
                    && refused.stderr.contains("botsi-restore upgrade --journal \(journal)"),
                "\(command): \(refused.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before)
        let walEmpty = try !FileManager.default.fileExists(atPath: journal + "-wal") || walIsEmpty(journal)
        #expect(walEmpty, "a reader wrote to the old journal's WAL")
    }

    @Test func twoCopiesUpgradedApartMergeTheirSharedRunsOnce() throws {
        let workspace = Workspace()
        let a = try copyOfTheFixture(in: workspace, name: "a.sqlite")
        let b = try copyOfTheFixture(in: workspace, name: "b.sqlite")
        try Journal(path: a, create: false).close()
        try Journal(path: b, create: false).close()
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, a, b], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let counts = try SQLiteTool.execute(
            merged, "SELECT count(*) FROM runs; SELECT count(*) FROM attempts; SELECT sum(attempts) FROM items")
        #expect(counts.split(separator: "\n") == ["3", "15", "15"], "the fixture's 3 runs and 15 attempts, once")
    }

    private func walIsEmpty(_ journal: String) throws -> Bool {
        ((try FileManager.default.attributesOfItem(atPath: journal + "-wal")[.size] as? Int) ?? 0) == 0
    }

    /// The fixture grown in its own schema to `copies` times its rows and attempts, so that its
    /// upgrade lasts long enough to be killed inside.
    private func grownFixture(copies: Int, in workspace: Workspace, name: String) throws -> String {
        let journal = try copyOfTheFixture(in: workspace, name: name)
        let itemColumns =
            "status, code, http_status, message, attempts, first_source, last_source, first_run, last_run, sent_run, "
            + "created_at, updated_at, restored_at, profile_state, access_levels, answered_at, in_flight_run"
        let attemptColumns =
            "run_id, number, started_at, duration_ms, http_status, code, outcome, profile_state, access_levels"
        _ = try SQLiteTool.execute(
            journal,
            """
            BEGIN;
            CREATE TEMP TABLE copies AS WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < \(copies - 1))
                SELECT k FROM n;
            INSERT INTO items (id, profile_id, original_transaction_id, \(itemColumns))
                SELECT i.id + c.k * 1000, i.profile_id || '-' || c.k, i.original_transaction_id, \(itemColumns)
                FROM items i, temp.copies c WHERE i.id < 1000;
            INSERT INTO attempts (item_id, \(attemptColumns))
                SELECT a.item_id + c.k * 1000, \(attemptColumns) FROM attempts a, temp.copies c WHERE a.item_id < 1000;
            COMMIT;
            """)
        return journal
    }

    private func shape(_ journal: String) throws -> (version: String, tables: String, items: String, check: String) {
        let lines = try SQLiteTool.execute(
            journal,
            """
            PRAGMA user_version;
            SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name);
            SELECT count(*) FROM items;
            PRAGMA integrity_check;
            """
        ).split(separator: "\n").map(String.init)
        guard lines.count == 4 else { return (lines.joined(separator: "|"), "", "", "") }
        return (lines[0], lines[1], lines[2], lines[3])
    }

    @Test func aKillAtAnyMomentOfTheUpgradeLeavesTheOldSchemaOrTheNew() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["UPGRADE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let trials = environment["UPGRADE_TRIALS"].flatMap(Int.init) ?? 10
        var random = SplitMix64(seed: seed)
        let replay = "UPGRADE_SEED=\(seed) swift test --skip-build --filter JournalUpgradeTests"
        let workspace = Workspace()
        let original = try grownFixture(copies: 2500, in: workspace, name: "original.sqlite")
        let old = try shape(original)
        try #require(old.version == "4" && old.check == "ok", "\(old)")

        // The upgrade uninterrupted, timed, for the span of the kills and the report to compare.
        let reference = workspace.file("reference.sqlite")
        try FileManager.default.copyItem(atPath: original, toPath: reference)
        let started = Date()
        try Journal(path: reference, create: false).close()
        let upgradeSeconds = Date().timeIntervalSince(started)
        let new = try shape(reference)
        try #require(new.version == "5" && new.items == old.items && new.check == "ok", "\(new)")

        var sawOld = false
        var sawNew = false
        for trial in 0..<trials {
            let journal = workspace.file("trial-\(trial).sqlite")
            try FileManager.default.copyItem(atPath: original, toPath: journal)
            // A run opens (and upgrades) the journal, then sends what it owes to a closed port.
            let child = try Child(
                ["run", "--journal", journal, "--base-url", "http://127.0.0.1:9", "--max-attempts", "1", "--quiet"],
                key: "k", in: workspace)
            let delay = 0.02 + Double(random.next() % 1000) / 1000 * (upgradeSeconds * 2 + 0.1)
            Thread.sleep(forTimeInterval: delay)
            child.send(SIGKILL)
            _ = child.wait()
            let after = try shape(journal)
            #expect(after.check == "ok", "trial \(trial) killed at \(delay) s: \(after) — replay: \(replay)")
            #expect(after.items == old.items, "trial \(trial): rows lost or added: \(after) — replay: \(replay)")
            switch after.version {
            case "4":
                sawOld = true
                #expect(after.tables == old.tables, "trial \(trial): a mix of schemas: \(after) — replay: \(replay)")
                // Resumable: the next open upgrades it from the start, to what an uninterrupted one made.
                try Journal(path: journal, create: false).close()
                let resumed = try report(journal, "csv", in: workspace)
                let uninterrupted = try report(reference, "csv", in: workspace)
                #expect(resumed == uninterrupted, "trial \(trial) — replay: \(replay)")
            case "5":
                sawNew = true
                #expect(after.tables == new.tables, "trial \(trial): a mix of schemas: \(after) — replay: \(replay)")
            default:
                Issue.record("trial \(trial): schema version \(after.version) — replay: \(replay)")
            }
        }
        // Not asserted (timing on a shared machine), but said: a loop that never killed inside the
        // upgrade proved less than it claims.
        if !(sawOld && sawNew) {
            print("JournalUpgradeTests: seed \(seed): killed before the upgrade committed: \(sawOld), after: \(sawNew)")
        }
    }

    // MARK: Room on the disk (a reviewer's 80.8 MB journal on a disk with 98 MB free: "upgraded", a
    // 99.5 MB -wal never copied back, 0 bytes free, and every later run exiting 73)

    /// The grown fixture (about 20 MB, 22,500 rows) on a tmpfs of its own with `freeMiB` free.
    private func grownFixtureOnASmallDisk(freeMiB: Int, in workspace: Workspace) throws -> (Tmpfs, String) {
        let original = try grownFixture(copies: 2500, in: workspace, name: "original.sqlite")
        let bytes = try #require(try FileManager.default.attributesOfItem(atPath: original)[.size] as? Int)
        let mount = try Tmpfs(at: workspace.file("disk"), sizeKiB: bytes / 1024 + 64 + freeMiB * 1024)
        let journal = mount.path + "/journal.sqlite"
        try FileManager.default.copyItem(atPath: original, toPath: journal)
        return (mount, journal)
    }

    private func bytes(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    private func freeMiB(_ path: String) -> Int {
        var disk = statvfs()
        guard statvfs(path, &disk) == 0 else { return -1 }
        return (Int(disk.f_bavail) * Int(disk.f_frsize)) >> 20
    }

    @Test func theOpenThatUpgradesAJournalCopiesTheLogBackBeforeItGoesOn() throws {
        let workspace = Workspace()
        let journal = try grownFixture(copies: 2500, in: workspace, name: "journal.sqlite")
        let opened = try Journal(path: journal, create: false)
        defer { opened.close() }
        // While the run that upgraded it still holds it: SQLite's own checkpoint at the commit
        // leaves the log's file at its full size, and a failed one leaves its frames in it.
        #expect(bytes(journal + "-wal") == 0, "\(bytes(journal + "-wal")) bytes of log left after the upgrade")
        #expect(try SQLiteTool.execute(journal, "PRAGMA user_version") == "5\n")
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func anUpgradeTheDiskHasNoRoomForIsRefusedWithWhatItNeedsAndChangesNothing() throws {
        let workspace = Workspace()
        let (mount, journal) = try grownFixtureOnASmallDisk(freeMiB: 8, in: workspace)
        defer { mount.unmount() }
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))

        let refused = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(refused.status == 73, "\(refused.stderr)")
        // How much is needed (the log and the checkpoint's growth: more than the 8 MB free), how
        // much is free, and what to do; not the permissions of a path that is fine.
        let figures = refused.stderr.firstMatch(of: /needs about (\d+) MB free on its disk .* and (\d+) MB are/)
        let needed = try #require(figures.flatMap { Int($0.1) }, "\(refused.stderr)")
        let free = try #require(figures.flatMap { Int($0.2) }, "\(refused.stderr)")
        // What it really needs here: its log (about 8 MB, the new tables) and the file's growth when
        // the log is copied back (about 4 MB).
        #expect(needed >= 12 && free <= 8, "\(refused.stderr)")
        #expect(refused.stderr.contains("nothing was changed"), "\(refused.stderr)")
        // Refused from the estimate, before a row is copied: not after a copy as long as the upgrade.
        #expect(!refused.stderr.contains("upgrading journal"), "\(refused.stderr)")
        #expect(refused.stderr.contains("copy the journal"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("permissions"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before)
        #expect(bytes(journal + "-wal") == 0, "a refused upgrade left a log behind")
        #expect(try SQLiteTool.execute(journal, "PRAGMA user_version") == "4\n")
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func anUpgradeThatFitsCopiesItsLogBackAndLeavesTheDiskUsable() throws {
        let workspace = Workspace()
        // Room for the estimate (about 18 MB), less than the journal's size again: the old estimate
        // (the file's size and 16 MB) refused it, and a log with every freed page zeroed did not fit.
        let (mount, journal) = try grownFixtureOnASmallDisk(freeMiB: 20, in: workspace)
        defer { mount.unmount() }
        let fileBefore = bytes(journal)

        let upgraded = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        #expect(upgraded.stderr.contains("from schema 4 to 5: 22500 rows"), "\(upgraded.stderr)")
        #expect(bytes(journal + "-wal") == 0, "the upgrade's log was not copied back")
        let after = try shape(journal)
        #expect(after.version == "5" && after.items == "22500" && after.check == "ok", "\(after)")
        // The file grew by the new tables beyond the pages freed: the disk keeps most of its room.
        #expect(bytes(journal) - fileBefore < 8 << 20, "grew from \(fileBefore) to \(bytes(journal))")
        #expect(freeMiB(mount.path) >= 12, "\(freeMiB(mount.path)) MB left free")
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func anUpgradeLargerThanItsEstimateIsRefusedBeforeItCommits() throws {
        let workspace = Workspace()
        // Rows that schema 5 keeps as large as schema 4 did (long, distinct messages): the estimate
        // before the upgrade (half the pages) falls short, the check before the commit does not.
        let original = try grownFixture(copies: 500, in: workspace, name: "original.sqlite")
        _ = try SQLiteTool.execute(original, "UPDATE items SET message = hex(randomblob(1500)); VACUUM")
        let size = bytes(original)
        let mount = try Tmpfs(at: workspace.file("disk"), sizeKiB: size / 1024 + 64 + 24 * 1024)
        defer { mount.unmount() }
        let journal = mount.path + "/journal.sqlite"
        try FileManager.default.copyItem(atPath: original, toPath: journal)
        let before = try Data(contentsOf: URL(fileURLWithPath: journal))

        let refused = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(refused.status == 73, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("was not upgraded") && refused.stderr.contains("nothing was changed"),
            "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == before)
        #expect(try SQLiteTool.execute(journal, "PRAGMA user_version") == "4\n")
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func aLogTheDiskHasNoRoomToCopyBackIsSaidAndUpgradeFinishesItOnceThereIs() throws {
        let workspace = Workspace()
        let (mount, journal) = try grownFixtureOnASmallDisk(freeMiB: 150, in: workspace)
        defer { mount.unmount() }
        let upgraded = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        try #require(upgraded.status == 0, "\(upgraded.stderr)")

        // A log that grows the file beyond its free pages, left in -wal: the disk is filled before
        // its checkpoint.
        let filler = mount.path + "/filler"
        var handle: OpaquePointer?
        try #require(sqlite3_open_v2(journal, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        try #require(
            sqlite3_exec(
                handle, "PRAGMA wal_autocheckpoint = 0; UPDATE items SET message = hex(randomblob(600));", nil, nil,
                nil) == SQLITE_OK)
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let writer = try #require(FileHandle(forWritingAtPath: filler))
        let chunk = Data(count: 1 << 16)
        while (try? writer.write(contentsOf: chunk)) != nil {}
        try? writer.close()
        sqlite3_close(handle)  // its checkpoint fails for the full disk, silently
        let log = bytes(journal + "-wal")
        try #require(log > 4 << 20, "the log was copied back already: \(log) bytes")

        let full = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(full.status == 73, "\(full.stderr)")
        #expect(full.stderr.contains("could not be copied back"), "\(full.stderr)")
        #expect(full.stderr.contains("botsi-restore upgrade --journal \(journal)"), "\(full.stderr)")
        #expect(!full.stderr.contains("permissions"), "\(full.stderr)")

        try FileManager.default.removeItem(atPath: filler)
        let finished = try botsi(["upgrade", "--journal", journal], key: nil, in: workspace)
        #expect(finished.status == 0 && finished.stderr.contains("at schema 5 already"), "\(finished.stderr)")
        #expect(bytes(journal + "-wal") == 0, "the log was not copied back")
        #expect(try shape(journal).check == "ok")
    }
}
