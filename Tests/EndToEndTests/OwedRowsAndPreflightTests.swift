import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Issue 8 through the real binary: a run that sends what the journal owes without input, a dry
/// run that checks what the real run checks, words that say what to do, and final rows that a
/// killed resend leaves as they were.
@Suite("owed rows, preflight and advice, end to end")
struct OwedRowsAndPreflightTests {
    /// A journal whose rows a refused run (401) left pending.
    private func journalOwing(_ rows: [Pair], _ workspace: Workspace, _ simulator: Simulator) throws {
        let refused = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator), key: "refused-key", in: workspace)
        try #require(refused.status == 77, "stderr: \(refused.stderr)")
    }

    @Test func runWithoutInputSendsWhatTheJournalOwes() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(12)
        try journalOwing(rows, workspace, simulator)

        let owed = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(owed.status == 0, "stderr: \(owed.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
        let nothing = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(nothing.status == 0, "stderr: \(nothing.stderr)")
        #expect(nothing.stderr.contains("nothing owed"), "stderr: \(nothing.stderr)")
    }

    @Test func runWithoutInputOnAMissingJournalExits66NamingIt() throws {
        let workspace = Workspace()
        let finished = try botsi(
            ["run", "--journal", workspace.file("nope.sqlite")], key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 66, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(workspace.file("nope.sqlite")), "stderr: \(finished.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.file("nope.sqlite")))
    }

    // MARK: --dry-run is a preflight (problem 6)

    struct PreflightCase: Sendable, CustomStringConvertible {
        let name: String
        let key: String?
        let extra: [String]
        let journal: String?
        let expected: Int32
        var description: String { name }
    }

    @Test(
        arguments: [
            PreflightCase(name: "no key", key: nil, extra: [], journal: nil, expected: 64),
            PreflightCase(
                name: "http to a public host", key: "k", extra: ["--base-url", "http://api.botsi.com"], journal: nil,
                expected: 64),
            PreflightCase(
                name: "missing CA file", key: "k", extra: ["--cacert", "/nonexistent/ca.pem"], journal: nil,
                expected: 64),
            PreflightCase(
                name: "journal directory missing", key: "k", extra: [], journal: "no/such/dir/j.sqlite", expected: 73),
        ])
    func aDryRunRefusesWhatTheRealRunRefusesWithTheSameExitCode(_ item: PreflightCase) throws {
        let workspace = Workspace()
        let input = workspace.csv(Pair.generate(3))
        let journal = item.journal.map { workspace.file($0) } ?? workspace.journal
        var arguments = ["run", input, "--journal", journal, "--base-url", "http://127.0.0.1:9"] + item.extra
        if item.extra.contains("--base-url") { arguments.removeSubrange(4...5) }
        let real = try botsi(arguments, key: item.key, in: workspace)
        let dry = try botsi(arguments + ["--dry-run"], key: item.key, in: workspace)
        #expect(real.status == item.expected, "real run stderr: \(real.stderr)")
        #expect(dry.status == item.expected, "dry run stderr: \(dry.stderr)")
        #expect(dry.stdout.isEmpty, "a refused dry run lists nothing: \(dry.stdout)")
        #expect(!FileManager.default.fileExists(atPath: journal), "a refused run left a journal behind")
    }

    @Test func aDryRunOnAJournalAnotherRunHoldsExits75LikeTheRealRun() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(200))
        let first = try Child(
            runArguments([input], workspace, simulator, ["--concurrency", "1"]), key: Simulator.defaultKey,
            in: workspace)
        defer {
            first.send(SIGKILL)
            _ = first.wait(timeout: 30)
        }
        let working = eventually(timeout: 60) { (JournalView.read(workspace.journal)?.finalPairs.count ?? 0) >= 1 }
        try #require(working, "the first run never got going: \(first.stderrSoFar)")
        let dry = try botsi(
            runArguments([input], workspace, simulator, ["--dry-run"]), key: Simulator.defaultKey, in: workspace)
        #expect(dry.status == 75, "stderr: \(dry.stderr)")
        #expect(dry.stderr.contains("in use"), "stderr: \(dry.stderr)")
        // Nothing was listed, so not even the listing's header (it came before the refusal).
        #expect(dry.stdout.isEmpty, "stdout: \(dry.stdout)")
        #expect(first.isRunning, "the dry run disturbed the first run")
    }

    /// A dry run records nothing, so its advice does not point at rejected rows in a journal that
    /// will not hold them; with nothing to send it still prints the listing's header.
    @Test func aDryRunOfOnlyRejectedRowsListsTheHeaderAndSaysARunRecordsThem() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(rows: [("bad-1", "2E+15")])
        let dry = try botsi(
            runArguments([input], workspace, simulator, ["--dry-run"]), key: Simulator.defaultKey, in: workspace)
        // Every row rejected: 65, as the run it rehearses would exit.
        #expect(dry.status == 65, "stderr: \(dry.stderr)")
        #expect(dry.stdout.split(separator: "\r\n").map(String.init) == ["profileId,originalTransactionId,source,why"])
        #expect(dry.stderr.contains("a run records the rejected rows"), "stderr: \(dry.stderr)")
        #expect(!dry.stderr.contains("see rejected rows with"), "stderr: \(dry.stderr)")
    }

    @Test func aDryRunListsTheOwedRowsAndChangesNothing() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let owed = Pair.generate(5)
        try journalOwing(owed, workspace, simulator)
        let before = try #require(JournalView.read(workspace.journal))
        let runsBefore = try botsi(
            ["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)

        let requestsBefore = simulator.stats().requests
        let newRows = Pair.generate(3, prefix: "new")
        let dry = try botsi(
            runArguments([workspace.csv(newRows, name: "new.csv")], workspace, simulator, ["--dry-run"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        #expect(dry.stderr.contains("would send: 8"), "stderr: \(dry.stderr)")
        // It lists them on stdout as CSV: the owed rows first, then the new pairs, each with why.
        let listed = dry.stdout.split(separator: "\r\n").map(String.init)
        #expect(listed.first == "profileId,originalTransactionId,source,why", "\(dry.stdout)")
        #expect(listed.count == 9, "\(dry.stdout)")
        #expect(listed.filter { $0.hasSuffix(",owed (pending)") }.count == 5, "\(dry.stdout)")
        #expect(
            listed.last?.hasPrefix("new-2,") == true && listed.last?.hasSuffix("new.csv:4,new") == true, "\(dry.stdout)"
        )
        // Its advice is the real run it rehearsed, input and all.
        #expect(dry.stderr.contains("new.csv"), "stderr: \(dry.stderr)")
        #expect(simulator.stats().requests == requestsBefore, "a dry run sent a request")
        let after = try #require(JournalView.read(workspace.journal))
        #expect(after.items == before.items)
        let runsAfter = try botsi(
            ["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        #expect(runsAfter.stdout == runsBefore.stdout, "a dry run recorded a run")
    }

    // MARK: Truthful words (problem 8)

    @Test func afterARefusedKeyTheAdviceIsToFixTheKeyThenSendTheOwedRows() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let refused = try botsi(
            runArguments([workspace.csv(Pair.generate(5))], workspace, simulator), key: "refused-key", in: workspace)
        #expect(refused.status == 77)
        #expect(!refused.stderr.contains("run the same command again"), "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("fix the key"), "stderr: \(refused.stderr)")
        #expect(
            refused.stderr.contains("botsi-restore run --journal \(workspace.journal)"), "stderr: \(refused.stderr)")
        #expect(
            refused.stderr.contains("botsi-restore report --journal \(workspace.journal)"), "stderr: \(refused.stderr)")

        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains("botsi-restore run --journal \(workspace.journal)"), "stdout: \(status.stdout)")
        #expect(!status.stdout.contains("run the same command again"), "stdout: \(status.stdout)")
    }

    @Test func afterNoIOSSettingsTheAdviceIsToSetThemUpInBotsiFirst() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.mode = .noIOSSettings }
        defer { simulator.stop() }
        let stopped = try botsi(
            runArguments([workspace.csv(Pair.generate(5))], workspace, simulator), key: Simulator.defaultKey,
            in: workspace)
        #expect(stopped.status == 78)
        #expect(!stopped.stderr.contains("run the same command again"), "stderr: \(stopped.stderr)")
        #expect(stopped.stderr.contains("iOS settings"), "stderr: \(stopped.stderr)")
        #expect(
            stopped.stderr.contains("botsi-restore run --journal \(workspace.journal)"), "stderr: \(stopped.stderr)")
    }

    /// With faults, some rows are sent again: "sent" counts each row once, not its retries.
    @Test(arguments: [0, 0.2])
    func aDamagedFileSaysHowManyOfItsRowsWereReadAndSentAndWhatTheNextRunDoes(faultRate: Double) throws {
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.faultRate = faultRate
            $0.faults = [.internalError]
        }
        defer { simulator.stop() }
        let plain = workspace.csv(Pair.generate(6000), name: "rows.csv")
        // Cut the compressed file in half: the reader fails after about half of the rows.
        try runProgram(
            "/bin/sh",
            [
                "-c",
                "gzip -c \"$0\" > \"$0.full\" && head -c $(( $(stat -c %s \"$0.full\") / 2 )) \"$0.full\" > \"$0.gz\"",
                plain,
            ]
        ).requireSuccess()

        let finished = try botsi(
            runArguments([plain + ".gz"], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 65, "stderr: \(finished.stderr)")
        let stats = simulator.stats()
        let sent = stats.pairCount
        #expect(sent > 0 && (faultRate == 0 || stats.requests > sent), "\(stats.requests) requests, \(sent) rows")
        let read = try #require(
            finished.stderr.firstMatch(of: /([0-9]+) rows of it were read/)?.1, "stderr: \(finished.stderr)")
        #expect(Int(read) ?? 0 >= sent)
        #expect(finished.stderr.contains("\(sent) of them sent"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("the next run"), "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains("nothing was sent"), "stderr: \(finished.stderr)")
    }

    /// Two nightly exports, one of them broken (every id in scientific notation): the good one's
    /// rows are sent, and the run exits 65 naming the broken one, as a run of it alone does; its
    /// `status` names it too. An input with one bad row among good ones, or whose rows a filter
    /// refused, is not broken.
    @Test func anInputWhoseEveryRowIsRejectedBesideAGoodOneExits65AndIsNamed() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let good = workspace.csv(Pair.generate(5), name: "good.csv")
        let broken = workspace.csv(
            "broken.csv", rows: [("p-sheet-1", "2.00000000000001E+15"), ("p-sheet-2", "2.00000000000002E+15")])
        let finished = try botsi(
            runArguments([good, broken], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 65, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 5)
        #expect(
            finished.stderr.contains("every row of \(broken) was rejected by the input checks"),
            "stderr: \(finished.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains("fix or re-export \(broken): every row of it"), "status: \(status.stdout)")

        // Rows left pending set the exit status (75), and the broken input is still named, by the
        // summary and by status beside its command; a dry run names it too.
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
        }
        defer { failing.stop() }
        let fresh = workspace.csv(Pair.generate(3, prefix: "fresh"), name: "fresh.csv")
        let pending = try botsi(
            runArguments([fresh, broken], workspace, failing, ["--max-attempts", "1"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(pending.status == 75, "stderr: \(pending.stderr)")
        #expect(pending.stderr.contains("every row of \(broken) was rejected"), "stderr: \(pending.stderr)")
        let owed = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(owed.stdout.contains("broken    every row of \(broken) was rejected"), "status: \(owed.stdout)")
        let dry = try botsi(
            runArguments([good, broken, broken], workspace, simulator, ["--dry-run"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(dry.status == 65, "stderr: \(dry.stderr)")
        #expect(dry.stderr.contains("every row of \(broken) was rejected"), "stderr: \(dry.stderr)")

        // One bad row among good ones: the input is not broken, and the run finishes with 0.
        let mixed = workspace.csv(
            "mixed.csv", rows: [("p-mixed-1", "2000000000000901"), ("p-mixed-2", "2.00000000000003E+15")])
        let again = try botsi(
            runArguments([good, mixed], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("every row of"), "stderr: \(again.stderr)")

        // Every row of an input refused by a filter asked for (another app's transaction): not broken.
        let signed = try String(
            contentsOfFile: ExportInputTests.repositoryFile("samples/signed-transactions.jsonl"), encoding: .utf8)
        let otherApp = workspace.write("other-app.jsonl", String(signed.split(separator: "\n")[0]) + "\n")
        let filtered = try botsi(
            runArguments([good, otherApp], workspace, simulator, ["--bundle-id", "com.example.other"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(filtered.status == 0, "stderr: \(filtered.stderr)")
        #expect(filtered.stderr.contains("wrong_bundle_id"), "stderr: \(filtered.stderr)")
    }

    /// A gzip cut before its first row is damaged data too, so 65 like one cut later (docs/exit-codes.md),
    /// not 66, "missing" (issue 20, item 9). An unreadable gzip header and garbage after the magic bytes too.
    @Test func aGzipCutBeforeItsFirstRowExits65AsADamagedInput() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let plain = workspace.csv(Pair.generate(50), name: "rows.csv")
        try runProgram("/bin/sh", ["-c", "gzip -c \"$0\" > \"$0.full\"", plain]).requireSuccess()
        let full = try #require(workspace.bytes("rows.csv.full"))
        // 15 bytes: the gzip header and a few bytes of the first block. 10: the header alone. Then the
        // magic bytes followed by garbage.
        let cuts: [(String, Data)] = [
            ("cut15.csv.gz", full.prefix(15)), ("cut10.csv.gz", full.prefix(10)),
            ("garbage.csv.gz", Data([0x1F, 0x8B]) + Data(repeating: 0x41, count: 40)),
        ]
        for (name, bytes) in cuts {
            _ = workspace.write(name, [UInt8](bytes))
            let finished = try botsi(
                runArguments([workspace.file(name)], workspace, simulator), key: Simulator.defaultKey, in: workspace)
            #expect(finished.status == 65, "\(name): \(finished.stderr)")
            #expect(finished.stderr.contains("gzip -t"), "\(name): \(finished.stderr)")
        }
        #expect(simulator.stats().requests == 0)
    }

    // MARK: kill -9 during a resend (problem 4)

    @Test func aKilledRefreshLeavesEveryFinalRowFinalOnDisk() throws {
        let workspace = Workspace()
        let quick = try startSimulator()
        defer { quick.stop() }
        let rows = Pair.generate(20)
        let input = workspace.csv(rows)
        let first = try botsi(runArguments([input], workspace, quick), key: Simulator.defaultKey, in: workspace)
        try #require(first.status == 0, "stderr: \(first.stderr)")
        let before = try #require(JournalView.read(workspace.journal))

        let slow = try startSimulator { $0.latencyMilliseconds = 5000 }
        defer { slow.stop() }
        let refresh = try Child(
            runArguments([input], workspace, slow, ["--refresh-older-than", "0s"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(eventually(timeout: 30) { slow.stats().inFlight > 0 }, "no request reached the simulator")
        refresh.send(SIGKILL)
        _ = refresh.wait(timeout: 30)
        let during = try #require(JournalView.read(workspace.journal))
        for (pair, record) in before.items {
            #expect(during.items[pair]?.status == record.status, "\(pair) on disk after kill -9")
            #expect(during.items[pair]?.code == record.code, "\(pair)")
            #expect(during.items[pair]?.accessLevels == record.accessLevels, "\(pair)")
        }
        // The killed run recorded nothing of what it left: `status` still says how to finish it.
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains("finish the selection it stopped in")
                && status.stdout.contains("--refresh-older-than 0s --answered-before"), "status: \(status.stdout)")
        slow.settle()
        let next = try botsi(runArguments([input], workspace, quick), key: Simulator.defaultKey, in: workspace)
        #expect(next.status == 0, "stderr: \(next.stderr)")
        #expect(quick.stats().requests == rows.count, "the next plain run resent final rows")
    }
}
