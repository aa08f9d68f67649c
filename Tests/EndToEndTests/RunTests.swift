import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("run, end to end")
struct RunTests {
    /// A run of `inputs` against a slow simulator, stopped by its time window part-way through them.
    private func stopPartWay(_ inputs: [String], _ workspace: Workspace, _ slow: Simulator) throws {
        let stopped = try botsi(
            runArguments(inputs, workspace, slow, ["--max-duration", "1s"]), key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
    }

    /// What the journal's first run read of its first input: the bytes it recorded, and the rows the
    /// journal holds (a stopped first run's, all from that input).
    private func firstRunRead(_ workspace: Workspace) throws -> (bytes: Int, rows: Int) {
        let read = try JournalTables.rows(
            workspace.journal,
            "SELECT json_extract(inputs, '$[0].bytes'), (SELECT count(*) FROM items) FROM runs WHERE id = 1")
        return (Int(read.first?[0] ?? "") ?? 0, Int(read.first?[1] ?? "") ?? 0)
    }

    @Test func aFirstRunRestoresEveryRowAndASecondRunSendsNothing() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(200)
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator)

        let first = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0 && !first.killedBySignal, "stderr: \(first.stderr)")
        #expect(first.stdout.isEmpty, "a run writes only to stderr: \(first.stdout)")
        #expect(first.stderr.contains("200 rows read, 200 requests"), "stderr: \(first.stderr)")
        // Duration and rate.
        #expect(first.stderr.contains(/run finished in [0-9.]+s.*\([0-9]+\/s\)/), "stderr: \(first.stderr)")
        // Ids ending in 0 have nothing to restore (20 of 200); the simulator restores the rest.
        #expect(first.stderr.contains("restored: 180"), "stderr: \(first.stderr)")
        #expect(first.stderr.contains("\n  nothing_to_restore: 20\n"), "stderr: \(first.stderr)")
        #expect(simulator.stats().requests == 200)
        let journal = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(journal.integrity == "ok")
        #expect(journal.finalPairs == Set(rows))

        let second = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0 && !second.killedBySignal, "stderr: \(second.stderr)")
        #expect(simulator.stats().requests == 200, "the second run sent requests")
        #expect(second.stderr.contains("0 requests"), "stderr: \(second.stderr)")
        #expect(second.stderr.contains("already restored in the journal, skipped: 180"), "stderr: \(second.stderr)")
    }

    @Test func aGzipInputIsRead() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(50, prefix: "gz")
        let plain = workspace.csv(rows, name: "rows.csv")
        try runProgram("/bin/sh", ["-c", "gzip -c \"$0\" > \"$0.gz\"", plain]).requireSuccess()
        try FileManager.default.removeItem(atPath: plain)

        let finished = try botsi(
            runArguments([plain + ".gz"], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 50)
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
    }

    @Test func stdinIsReadWhenTheInputIsADash() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(50, prefix: "stdin")
        let text = "profileId,originalTransactionId\n" + rows.map { "\($0.profileId),\($0.transactionId)\n" }.joined()

        let finished = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator), key: Simulator.defaultKey, in: workspace,
            stdin: Data(text.utf8))
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 50)
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
    }

    /// A run stopped before the end of its standard input: `status` says to pipe the same export
    /// again, with the command that reads it as that run did, also after a run without inputs went
    /// on with the pending rows (a reviewer: the rest was never mentioned again); a run that reads
    /// stdin to its end clears it.
    @Test func aHalfReadStdinIsNamedByStatusUntilAReadToItsEnd() throws {
        // The run stops before reading all that is written to it.
        signal(SIGPIPE, SIG_IGN)
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let rows = Pair.generate(20_000, prefix: "stdin")
        let text = "profileId,originalTransactionId\n" + rows.map { "\($0.profileId),\($0.transactionId)\n" }.joined()
        let stopped = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator, ["--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace, stdin: Data(text.utf8))
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let line = "stdin     run 1 stopped before the end of its standard input"
        let command = "botsi-restore run - --journal \(workspace.journal) --format csv --base-url \(simulator.baseURL)"
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains(line) && status.stdout.contains(command), "status: \(status.stdout)")
        // The page says so too, beside the pending rows and once nothing else is owed.
        func page() throws -> String {
            let page = try botsi(
                [
                    "report", "--journal", workspace.journal, "--format", "html", "--output",
                    workspace.file("page.html"),
                ],
                key: nil, in: workspace)
            #expect(page.status == 0, "\(page.stderr)")
            return workspace.text("page.html") ?? ""
        }
        #expect(try page().contains("pipe the rest of the standard input"), "the page forgets the rest of stdin")
        let fast = try startSimulator()
        defer { fast.stop() }
        let resumed = try botsi(runArguments([], workspace, fast), key: Simulator.defaultKey, in: workspace)
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        let after = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(after.stdout.contains(line), "status: \(after.stdout)")
        #expect(
            try page().contains("stopped before the end of its standard input"), "the page forgets the rest of stdin")
        let small =
            "profileId,originalTransactionId\n"
            + rows.prefix(3).map { "\($0.profileId),\($0.transactionId)\n" }.joined()
        let whole = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator, ["--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace, stdin: Data(small.utf8))
        #expect(whole.status == 0 || whole.status == 75, "stderr: \(whole.stderr)")
        let cleared = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(!cleared.stdout.contains("stdin     "), "status: \(cleared.stdout)")
    }

    /// The stdin reminder is per shard: shard 1/2 reading its standard input to the end did not
    /// read what shard 0/2 left of its own (a reviewer: it cleared shard 0's reminder); shard 0/2
    /// reading it to the end does.
    @Test func aHalfReadStdinOfOneShardIsNotClearedByAnotherShard() throws {
        signal(SIGPIPE, SIG_IGN)
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let rows = Pair.generate(20_000, prefix: "sh")
        let text = "profileId,originalTransactionId\n" + rows.map { "\($0.profileId),\($0.transactionId)\n" }.joined()
        let stopped = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator, ["--max-duration", "1s", "--shard", "0/2"]),
            key: Simulator.defaultKey, in: workspace, stdin: Data(text.utf8))
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let line = "stdin     run 1 stopped before the end of its standard input"
        let small = "profileId,originalTransactionId\n" + "\(rows[0].profileId),\(rows[0].transactionId)\n"
        let fast = try startSimulator()
        defer { fast.stop() }
        let other = try botsi(
            runArguments(["-", "--format", "csv"], workspace, fast, ["--shard", "1/2"]),
            key: Simulator.defaultKey, in: workspace, stdin: Data(small.utf8))
        #expect(other.status == 0, "stderr: \(other.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains(line), "status: \(status.stdout)")
        let same = try botsi(
            runArguments(["-", "--format", "csv"], workspace, fast, ["--shard", "0/2"]),
            key: Simulator.defaultKey, in: workspace, stdin: Data(small.utf8))
        #expect(same.status == 0, "stderr: \(same.stderr)")
        let cleared = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(!cleared.stdout.contains("stdin     "), "status: \(cleared.stdout)")
    }

    /// An input a run did not finish, then rotated away (dated exports): the next summary and
    /// `status` name it as gone, and their commands do not read it (a reviewer: they advised it
    /// every night with a command that exited 66).
    @Test func anUnfinishedInputThatIsGoneIsNamedAndNotAdvised() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let dated = workspace.csv(Pair.generate(20_000, prefix: "d1"), name: "export-day1.csv")
        let kept = workspace.csv(Pair.generate(5, prefix: "k"), name: "kept.csv")
        try stopPartWay([dated, kept], workspace, simulator)
        try FileManager.default.moveItem(atPath: dated, toPath: workspace.file("archived.csv"))
        let next = workspace.csv(Pair.generate(3, prefix: "d2"), name: "export-day2.csv")
        let second = try botsi(
            runArguments([next], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace)
        let gone = "\(dated), which a run did not read to its end, no longer exists"
        #expect(second.stderr.contains(gone), "stderr: \(second.stderr)")
        // The input still there is read again; the gone one is not.
        #expect(second.stderr.contains(" \(kept) --journal"), "stderr: \(second.stderr)")
        #expect(!Self.commands(second.stderr).contains("\(dated) "), "stderr: \(second.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains("gone      \(gone)"), "status: \(status.stdout)")
        #expect(status.stdout.contains(" \(kept) --journal"), "status: \(status.stdout)")
        #expect(!Self.commands(status.stdout).contains("\(dated) "), "status: \(status.stdout)")
    }

    /// `unreadInputs` of `status --format json`'s output; nil when it has none.
    static func unreadInputs(_ json: String) -> [String]? {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return object?["unreadInputs"] as? [String]
    }

    /// The lines of `text` that hold a command: what is advised to be typed.
    static func commands(_ text: String) -> String {
        text.split(separator: "\n").filter { $0.contains("botsi-restore run ") }.joined(separator: "\n")
    }

    /// A gone input was named in every summary and `status` for ever (a reviewer): the advice names
    /// `--forget-input PATH`, a run given it stops the journal naming the input (the rows read from
    /// it stay), and a path that names no unfinished input is warned of and forgets nothing.
    @Test func aGoneInputIsForgottenWhenARunSaysSo() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let dated = workspace.csv(Pair.generate(20_000, prefix: "d1"), name: "export-day1.csv")
        let kept = workspace.csv(Pair.generate(20_000, prefix: "k"), name: "kept.csv")
        try stopPartWay([dated, kept], workspace, simulator)
        let read = try JournalTables.rows(workspace.journal, "SELECT count(*) FROM items")
        try FileManager.default.removeItem(atPath: dated)
        let before = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(before.stdout.contains("--forget-input \(dated)"), "status: \(before.stdout)")

        let typo = try botsi(
            runArguments([], workspace, simulator, ["--max-duration", "1s", "--forget-input", "export-day0.csv"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(
            typo.stderr.contains(
                "warning: --forget-input export-day0.csv named no input an earlier run left unfinished"),
            "stderr: \(typo.stderr)")
        #expect(typo.stderr.contains("\(dated), which a run did not read"), "stderr: \(typo.stderr)")

        let forget = try botsi(
            runArguments([], workspace, simulator, ["--max-duration", "1s", "--forget-input", dated]),
            key: Simulator.defaultKey, in: workspace)
        #expect(forget.stderr.contains("forgot \(dated): no longer named as unfinished"), "stderr: \(forget.stderr)")
        #expect(!forget.stderr.contains("no longer exists"), "stderr: \(forget.stderr)")
        let after = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(!after.stdout.contains("gone "), "status: \(after.stdout)")
        #expect(!Self.commands(after.stdout).contains(dated), "status: \(after.stdout)")
        #expect(after.stdout.contains(" \(kept) --journal"), "the other input is still owed: \(after.stdout)")
        let json = try botsi(
            ["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        #expect(Self.unreadInputs(json.stdout) == [kept], "status: \(json.stdout)")
        // What was read from it stays: forgetting drops no row.
        let rows = try JournalTables.rows(workspace.journal, "SELECT count(*) FROM items WHERE profile_id LIKE 'd1%'")
        #expect(Int(rows.first?.first.flatMap { $0 } ?? "0") ?? 0 > 0, "rows: \(rows) of \(read)")
        // The next run does not name it either.
        let next = try botsi(
            runArguments([], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(!next.stderr.contains("export-day1.csv"), "stderr: \(next.stderr)")
    }

    /// `--forget-input a.csv` forgot any unfinished input an earlier run had typed as `a.csv`,
    /// whatever directory each ran in (a reviewer): given in another directory, it forgot that
    /// one's. A relative path names the file in the run's own directory, as every path does: from
    /// another directory it forgets nothing and is warned of; `status` there advises the recorded
    /// real path; in the input's own directory `a.csv` forgets it.
    @Test func aForgetInputNamesTheFileInTheRunsOwnDirectory() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let here = workspace.file("here")
        let there = workspace.file("there")
        #expect(mkdir(here, 0o755) == 0 && mkdir(there, 0o755) == 0)
        let input = workspace.csv(Pair.generate(20_000, prefix: "h"), name: "here/a.csv")
        let real = try #require(realpath(input, nil))
        let recorded = String(cString: real)
        free(real)
        let stopped = try botsi(
            runArguments(["a.csv"], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace, workingDirectory: here)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        try FileManager.default.removeItem(atPath: input)

        let elsewhere = try botsi(
            runArguments([], workspace, simulator, ["--max-duration", "1s", "--forget-input", "a.csv"]),
            key: Simulator.defaultKey, in: workspace, workingDirectory: there)
        #expect(
            elsewhere.stderr.contains("warning: --forget-input a.csv named no input an earlier run left unfinished"),
            "stderr: \(elsewhere.stderr)")
        #expect(!elsewhere.stderr.contains("forgot "), "stderr: \(elsewhere.stderr)")
        #expect(elsewhere.stderr.contains("--forget-input \(recorded) "), "advised from anywhere: \(elsewhere.stderr)")
        let status = try botsi(
            ["status", "--journal", workspace.journal], key: nil, in: workspace, workingDirectory: there)
        #expect(status.stdout.contains("gone "), "still unfinished: \(status.stdout)")
        #expect(status.stdout.contains("--forget-input \(recorded) "), "status: \(status.stdout)")

        let own = try botsi(
            runArguments([], workspace, simulator, ["--max-duration", "1s", "--forget-input", "a.csv"]),
            key: Simulator.defaultKey, in: workspace, workingDirectory: here)
        #expect(own.stderr.contains("forgot a.csv: no longer named as unfinished"), "stderr: \(own.stderr)")
        let after = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(!after.stdout.contains("gone "), "status: \(after.stdout)")
    }

    /// `run --dry-run --forget-input PATH` said nothing of the forget (a reviewer): a dry run
    /// records nothing, so it forgets nothing, but it says which inputs the run would forget and
    /// warns of a path that names none, as the run does.
    @Test func aDryRunSaysWhichInputsItWouldForget() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let dated = workspace.csv(Pair.generate(20_000, prefix: "w1"), name: "export-day1.csv")
        try stopPartWay([dated], workspace, simulator)
        try FileManager.default.removeItem(atPath: dated)

        let dry = try botsi(
            runArguments(
                [], workspace, simulator,
                ["--dry-run", "--forget-input", dated, "--forget-input", "export-day0.csv"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        #expect(
            dry.stderr.contains("would forget \(dated): a run would no longer name it as unfinished"),
            "stderr: \(dry.stderr)")
        #expect(
            dry.stderr.contains(
                "warning: --forget-input export-day0.csv named no input an earlier run left unfinished: "
                    + "a run would forget nothing"),
            "stderr: \(dry.stderr)")
        #expect(!dry.stderr.contains("forgot \(dated)"), "a dry run forgets nothing: \(dry.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains("gone "), "still named: \(status.stdout)")
    }

    /// A run stopped part-way through `a.csv`; the next finds a shorter `a.csv` there (an export
    /// written again, cut short) and read it to its end without a word, so the rows past the new
    /// end were silently dropped (a reviewer). It warns, naming the file and both sizes, and counts
    /// the new file read; a longer file there is not warned of.
    @Test func aShorterFileWhereARunStoppedIsWarnedOf() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(20_000, prefix: "s1"), name: "a.csv")
        try stopPartWay([input], workspace, simulator)
        let earlier = try firstRunRead(workspace).bytes
        _ = workspace.csv(Pair.generate(3, prefix: "s1"), name: "a.csv")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: input)[.size] as? Int)
        #expect(earlier > size, "run 1 read \(earlier) bytes; the new file holds \(size)")

        let shorter = try botsi(
            runArguments([input], workspace, simulator, ["--max-duration", "5s"]), key: Simulator.defaultKey,
            in: workspace)
        let warning =
            "warning: \(input) holds \(size) bytes, fewer than the \(earlier) bytes an earlier run had read of it"
        #expect(shorter.stderr.contains(warning), "stderr: \(shorter.stderr)")
        let json = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        #expect(Self.unreadInputs(json.stdout) == [], "read to its end, it is not unread: \(json.stdout)")

        // A longer file where a run stopped is what an export grown since looks like: no warning.
        _ = workspace.csv(Pair.generate(20_000, prefix: "s2"), name: "a.csv")
        let again = try botsi(
            runArguments([input], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(again.status == 75, "stderr: \(again.stderr)")
        _ = workspace.csv(Pair.generate(20_100, prefix: "s2"), name: "a.csv")
        let fast = try startSimulator()
        defer { fast.stop() }
        let longer = try botsi(
            runArguments([input], workspace, fast, ["--concurrency", "64"]), key: Simulator.defaultKey, in: workspace)
        #expect(longer.status == 0, "stderr: \(longer.stderr)")
        #expect(!longer.stderr.contains("fewer than the"), "stderr: \(longer.stderr)")
        #expect(!longer.stderr.contains("is not the file"), "a grown file is the same file: \(longer.stderr)")
    }

    /// A run stopped part-way through `a.csv`; the next finds another export of the same size or
    /// larger under that name (another day's file) and read it to its end without a word, though
    /// the rows past the point the first run stopped in the earlier file were never read (a
    /// reviewer). Rows new to the journal within the bytes the first run had read tell that it is
    /// another file: it warns, with their count.
    @Test func anotherFileWhereARunStoppedIsWarnedOf() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(20_000, prefix: "s1"), name: "a.csv")
        try stopPartWay([input], workspace, simulator)
        let (earlier, rowsRead) = try firstRunRead(workspace)
        #expect(rowsRead > 0 && rowsRead < 20_000, "run 1 read \(rowsRead) rows")
        // Another export, byte for byte as long: its rows within those bytes are as many, and new.
        _ = workspace.csv((0..<20_000).map { Pair("s3-\($0)", String(3_000_000_000_000_000 + $0)) }, name: "a.csv")
        let fast = try startSimulator()
        defer { fast.stop() }
        let replaced = try botsi(
            runArguments([input], workspace, fast, ["--concurrency", "64"]), key: Simulator.defaultKey, in: workspace)
        #expect(replaced.status == 0, "stderr: \(replaced.stderr)")
        let warning =
            "warning: \(input) is not the file an earlier run stopped in: \(rowsRead) rows within the first "
            + "\(earlier) bytes, which that run had read, were new to the journal"
        #expect(replaced.stderr.contains(warning), "stderr: \(replaced.stderr)")
    }

    /// A run stopped part-way through its standard input; the next of its shard read another
    /// export piped in to its end and the reminder to pipe the first again went without a word (a
    /// reviewer). Rows new to the journal within the bytes the first run had read tell it apart.
    @Test func anotherStreamWhereARunStoppedIsWarnedOf() throws {
        signal(SIGPIPE, SIG_IGN)
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        func export(_ pairs: [Pair]) -> Data {
            Data(
                ("profileId,originalTransactionId\n" + pairs.map { "\($0.profileId),\($0.transactionId)\n" }.joined())
                    .utf8)
        }
        let stopped = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator, ["--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace, stdin: export(Pair.generate(20_000, prefix: "s1")))
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let (earlier, rowsRead) = try firstRunRead(workspace)
        #expect(rowsRead > 0 && rowsRead < 20_000, "run 1 read \(rowsRead) rows")
        let fast = try startSimulator()
        defer { fast.stop() }
        let other = export((0..<20_000).map { Pair("s3-\($0)", String(3_000_000_000_000_000 + $0)) })
        let replaced = try botsi(
            runArguments(["-", "--format", "csv"], workspace, fast, ["--concurrency", "64"]),
            key: Simulator.defaultKey, in: workspace, stdin: other)
        #expect(replaced.status == 0, "stderr: \(replaced.stderr)")
        let warning =
            "is not the stream an earlier run stopped in: \(rowsRead) rows within the first \(earlier) bytes"
        #expect(replaced.stderr.contains(warning), "stderr: \(replaced.stderr)")
        #expect(replaced.stderr.contains("If the earlier export is kept somewhere, pipe it into a run"))
    }

    /// The same when the whole new file is read at once, its end with its rows: a run that stopped
    /// in a pipe named `a.csv` after five rows, then a file under that name whose last rows (all
    /// five, or only one) are others.
    @Test(arguments: [5, 1])
    func anotherSmallFileWhereARunStoppedInAPipeIsWarnedOf(newRows: Int) throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.file("a.csv")
        #expect(mkfifo(input, 0o600) == 0)
        let rows = (0..<5).map { "p-\($0),\(2_000_000_000_000_000 + $0)" }.joined(separator: "\n")
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        // Five rows, then the pipe stays open past the run's end: the run stops inside it.
        writer.arguments = ["-c", "{ printf 'profileId,originalTransactionId\\n\(rows)\\n'; sleep 4; } > a.csv"]
        writer.currentDirectoryURL = URL(fileURLWithPath: workspace.path)
        try writer.run()
        let stopped = try botsi(
            runArguments([input], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace)
        writer.waitUntilExit()
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        try FileManager.default.removeItem(atPath: input)
        let kept = 5 - newRows
        _ = workspace.csv(
            (0..<5).map {
                $0 < kept
                    ? Pair("p-\($0)", String(2_000_000_000_000_000 + $0))
                    : Pair("q-\($0)", String(3_000_000_000_000_000 + $0))
            }, name: "a.csv")
        let replaced = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(replaced.status == 0, "stderr: \(replaced.stderr)")
        let said = newRows == 1 ? "1 row within the first" : "\(newRows) rows within the first"
        #expect(replaced.stderr.contains("is not the file an earlier run stopped in: \(said)"), "\(replaced.stderr)")
    }

    /// An input read part-way through a link, then to its end through its own path (and the other
    /// way round): one file, so it is read (a reviewer: the link stayed unread for ever).
    @Test func anInputReadThroughALinkAndItsOwnPathIsOneInput() throws {
        let workspace = Workspace()
        let slow = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { slow.stop() }
        let fast = try startSimulator()
        defer { fast.stop() }
        let data = workspace.file("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        for (index, (first, then)) in [(true, false), (false, true)].enumerated() {
            let target = workspace.csv(Pair.generate(20_000, prefix: "l\(index)"), name: "data/a\(index).csv")
            let link = workspace.file("latest\(index).csv")
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
            let stopped = try botsi(
                runArguments([first ? link : target], workspace, slow, ["--max-duration", "1s"]),
                key: Simulator.defaultKey, in: workspace)
            #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
            let finished = try botsi(
                runArguments([then ? link : target], workspace, fast, ["--concurrency", "64"]),
                key: Simulator.defaultKey, in: workspace)
            #expect(finished.status == 0, "stderr: \(finished.stderr)")
            let json = try botsi(
                ["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
            #expect(
                Self.unreadInputs(json.stdout) == [], "read through \(then ? "the link" : "its path"): \(json.stdout)")
        }
    }

    /// libcurl resends a request by itself when a reused connection closes without a reply; the run
    /// must not: with --max-attempts 1 every request Botsi received is one journaled attempt.
    @Test func withOneAttemptEveryRequestBotsiReceivedIsAJournaledAttempt() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.faultRate = 0.2
            options.faults = [.reset]
            options.seed = 11
        }
        defer { simulator.stop() }
        let rows = Pair.generate(300, prefix: "once")
        let finished = try botsi(
            runArguments(
                [workspace.csv(rows)], workspace, simulator,
                ["--max-attempts", "1", "--concurrency", "2", "--max-failure-rate", "100"]),
            key: Simulator.defaultKey, in: workspace)
        #expect([0, 75].contains(finished.status) && !finished.killedBySignal, "stderr: \(finished.stderr)")
        let journal = try #require(try JournalTables.read(workspace.journal))
        let received = simulator.requestsByPair()
        #expect(received.values.reduce(0, +) == simulator.stats().requests)
        #expect(simulator.stats().faultsInjected["reset", default: 0] > 0)
        let mismatched = rows.filter { journal.items[$0]?.attempts != 1 || received[$0] != 1 }.map {
            "\($0): \(received[$0] ?? 0) requests, \(journal.items[$0]?.attempts ?? 0) attempts"
        }
        #expect(mismatched.isEmpty, "\(mismatched.count) rows: \(mismatched.prefix(5))")
    }

    /// Ctrl-C in the demo: the summary's command to go on names the demo's simulator, which ends
    /// with it; the demo says so and how to see it whole instead.
    @Test func anInterruptedDemoSaysItsSimulatorIsGone() throws {
        let workspace = Workspace()
        var environment = Child.environment(key: nil)
        environment["TMPDIR"] = workspace.path
        let child = try Child(
            ["demo"], key: nil, in: workspace, workingDirectory: Locations.packageRoot, environment: environment)
        let started = eventually(timeout: 60) { child.stderrSoFar.contains("demo: botsi-restore run") }
        Thread.sleep(forTimeInterval: 0.5)
        child.send(SIGINT)
        let finished = child.wait(timeout: 60)
        try #require(started, "stderr: \(finished.stderr)")
        #expect(finished.status == 130, "stderr: \(finished.stderr)")
        let url = try #require(finished.stderr.firstMatch(of: /simulator on (http:\/\/127\.0\.0\.1:[0-9]+)/)?.1)
        #expect(
            finished.stderr.contains("demo: the simulator at \(url) stops with the demo")
                && finished.stderr.contains("--keep-journal PATH"), "stderr: \(finished.stderr)")
    }

    /// A kept journal has its page beside it: the demo makes no directory in TMPDIR to leave behind.
    @Test func aDemoWithAKeptJournalLeavesNothingInTheTemporaryDirectory() throws {
        let workspace = Workspace()
        let temporary = workspace.file("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        var environment = Child.environment(key: nil)
        environment["TMPDIR"] = temporary
        let finished = try botsi(
            ["demo", "--keep-journal", workspace.file("kept.sqlite")], key: nil, in: workspace,
            workingDirectory: Locations.packageRoot, environment: environment, timeout: 120)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(FileManager.default.fileExists(atPath: workspace.file("kept.html")), "stderr: \(finished.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary)
        #expect(left.isEmpty, "left in TMPDIR: \(left)")
    }

    @Test func theDemoRetriesFaultedRowsUntilTheyAreRestored() throws {
        let workspace = Workspace()
        try #require(FileManager.default.fileExists(atPath: Locations.packageRoot + "/samples/demo.csv"))
        // The demo keeps its journal in TMPDIR for the `report` lines it prints: keep it in the workspace.
        var environment = Child.environment(key: nil)
        environment["TMPDIR"] = workspace.path
        // Another botsi-restore first on PATH (an older install): the hints must not name it.
        try FileManager.default.createDirectory(atPath: workspace.file("bin"), withIntermediateDirectories: true)
        workspace.write("bin/botsi-restore", "#!/bin/sh\n")
        chmod(workspace.file("bin/botsi-restore"), 0o755)
        environment["PATH"] = workspace.file("bin") + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let finished = try botsi(
            ["demo"], key: nil, in: workspace, workingDirectory: Locations.packageRoot, environment: environment,
            timeout: 120)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("were retried, and still ended restored"), "stderr: \(finished.stderr)")
        // Not what PATH finds: the hints name the built executable itself, which works from anywhere.
        let binary = try #require(Locations.binary)
        let executable = try #require(realpath(binary, nil))
        defer { free(executable) }
        #expect(finished.stderr.contains("\(String(cString: executable)) report --journal"), "\(finished.stderr)")
    }
}
