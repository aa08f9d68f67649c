import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("progress on a terminal, time windows", .serialized)
struct TerminalAndWindowTests {
    /// Runs the binary under `script`, which gives it a pseudo-terminal as a person's shell would.
    @Test func theProgressLineUpdatesInPlaceOnATerminalAndEndsWithTheSummary() throws {
        let script = "/usr/bin/script"
        try #require(FileManager.default.isExecutableFile(atPath: script), "util-linux's script is needed")
        let binary = try #require(Locations.binary, "build botsi-restore first")
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 10 }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(300, prefix: "tty"))
        let command =
            ([binary] + runArguments([input], workspace, simulator, ["--rate", "150"]))
            .map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["-qfec", command, "/dev/null"]
        process.environment = Child.environment(key: Simulator.defaultKey)
        let output = workspace.file("terminal.out")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let screen = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
        // Each update returns to the start of the line and clears it: the line is rewritten in place.
        let updates = screen.components(separatedBy: "\r\u{1B}[K").count - 1
        #expect(updates >= 3, "expected several in-place updates, got \(updates): \(screen.debugDescription)")
        #expect(!screen.contains("progress:"), "a terminal gets the live line, not log lines")
        // The last update ends its line, then the summary follows.
        let afterLastUpdate = screen.components(separatedBy: "\r\u{1B}[K").last ?? ""
        #expect(afterLastUpdate.contains("300 done"), "the last update shows every row done: \(afterLastUpdate)")
        #expect(afterLastUpdate.contains("\nrun finished in") || afterLastUpdate.contains("\r\nrun finished in"))
    }

    /// Issue 19, item 15: the demo's first log line said "0 req/s" beside rows done.
    @Test func theFirstProgressLogLineShowsTheRateSoFar() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 5 }
        defer { simulator.stop() }
        let arguments = runArguments(
            [workspace.csv(Pair.generate(400, prefix: "rate"))], workspace, simulator,
            ["--log-interval", "0.5", "--rate", "200"])
        let finished = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        let first = try #require(finished.stderr.split(separator: "\n").first { $0.contains("progress: ") })
        #expect(first.contains(" done") && !first.contains(" 0 done"), "\(first)")
        #expect(!first.contains("| 0 req/s"), "\(first)")
    }

    @Test func aTimeWindowStopsTheRunWithSeventyFiveAndTheNextRunFinishesTheRest() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(300, prefix: "window")
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator, ["--rate", "100"])
        let first = try botsi(arguments + ["--max-duration", "1s"], key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 75, "stderr: \(first.stderr)")
        #expect(first.stderr.contains("time window ended"), "stderr: \(first.stderr)")
        let partial = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(partial.integrity == "ok")
        #expect(!partial.finalPairs.isEmpty && partial.finalPairs.count < 300)
        let second = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
        #expect(simulator.stats().pairs.allSatisfy { $0.requests == 1 }, "no row was sent twice")
    }

    /// A run without inputs that its time window stops, owing more rows than it takes up at once,
    /// read no input of its own: it says what is owed, never that it did not finish an input.
    @Test func aRunWithoutInputsStoppedByItsWindowLeftNoInputOfItsOwnUnread() throws {
        let workspace = Workspace()
        // Every row read and left pending: more owed than a run takes up at once.
        let input = workspace.csv(Pair.generate(3000, prefix: "owed"))
        let resumed = try runWithoutInputsAfterOneThatFailedEveryRow(input, workspace, rate: 20)
        #expect(resumed.stderr.contains(" pending rows"), "stderr: \(resumed.stderr)")
        #expect(!resumed.stderr.contains("did not finish"), "stderr: \(resumed.stderr)")
    }

    /// A run without inputs stopped before it took up all it owed, after a run that left its
    /// `;`-delimited input unread: the command that goes on reads that input as that run read it.
    @Test func aStoppedRunWithoutInputsReadsTheInputAnEarlierRunLeftAsThatRunReadIt() throws {
        let workspace = Workspace()
        let pairs = Pair.generate(5000, prefix: "semicolon")
        let input = workspace.write(
            "in.csv",
            "profileId;originalTransactionId\n" + pairs.map { "\($0.profileId);\($0.transactionId)\n" }.joined())
        // Stopped with its input half read, owing what it read ahead (as many as a run takes up at
        // once) and what failed once; the next run, slower, takes up only part of the rest.
        let resumed = try runWithoutInputsAfterOneThatFailedEveryRow(
            input, workspace, firstRunOptions: ["--delimiter", ";", "--rate", "100", "--max-duration", "1s"], rate: 10)
        let next = try #require(
            resumed.stderr.split(separator: "\n").last { $0.contains("an earlier run did not finish") },
            "stderr: \(resumed.stderr)")
        #expect(next.contains("botsi-restore run \(input) --journal") && next.contains("--delimiter ';'"), "\(next)")
    }

    /// `input` read by a run against a service that answers every row 500 (`--max-attempts 1`:
    /// each row it reads is left pending), then a run without inputs at `rate` that its one-second
    /// window stops before it takes up all it owes: how that run ended.
    private func runWithoutInputsAfterOneThatFailedEveryRow(
        _ input: String, _ workspace: Workspace, firstRunOptions: [String] = [], rate: Int
    ) throws -> Finished {
        let failing = try startSimulator {
            $0.faultRate = 1
            $0.faults = [.internalError]
        }
        defer { failing.stop() }
        let first = try botsi(
            runArguments(
                [input], workspace, failing, ["--max-attempts", "1", "--max-failure-rate", "100"] + firstRunOptions),
            key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 75, "stderr: \(first.stderr)")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let resumed = try botsi(
            runArguments([], workspace, simulator, ["--rate", "\(rate)", "--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(resumed.status == 75 && resumed.stderr.contains("time window ended"), "stderr: \(resumed.stderr)")
        return resumed
    }

    /// A stopped run left its input half read; a run resumed without inputs (`run --journal J`, as
    /// after a dropped session) sends what is owed but reads nothing. Its summary and `status` kept
    /// only the latest run's inputs, so the unread rest was forgotten, and a third run said the
    /// journal owed nothing. Now each names the input until a run reads it to the end.
    @Test func anInputAStoppedRunLeftUnreadIsOwedUntilARunReadsItToTheEnd() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(3000, prefix: "unread")
        let input = workspace.csv(rows)
        let first = try botsi(
            runArguments([input], workspace, simulator, ["--rate", "100", "--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 75, "stderr: \(first.stderr)")
        let resumed = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(
            resumed.stderr.contains(
                "read the input an earlier run did not finish (\(input)) with: botsi-restore run \(input)"),
            "stderr: \(resumed.stderr)")
        let again = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(!again.stderr.contains("nothing owed"), "stderr: \(again.stderr)")
        #expect(again.stderr.contains("an earlier run did not finish (\(input))"), "stderr: \(again.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains(
                "next      read the input a run did not finish (\(input)) with: botsi-restore run \(input)"),
            "\(status.stdout)")
        let json = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["unreadInputs"] as? [String] == [input])
        // The command the advice gives reads it to the end: nothing is owed any more, nothing sent twice.
        let last = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(last.status == 0, "stderr: \(last.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
        let done = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let doneObject = try JSONSerialization.jsonObject(with: Data(done.stdout.utf8)) as? [String: Any]
        #expect(doneObject?["unreadInputs"] as? [String] == [])
        #expect(simulator.stats().pairs.allSatisfy { $0.requests == 1 }, "no row was sent twice")
    }

    /// What an independent review found in the first version of the rule: an input is one whatever
    /// its spelling (`in.csv` then its absolute path), standard input is never owed from the journal
    /// (no run can read the same bytes again; it was recorded as `stdin` and named `-`, and stayed
    /// owed for ever), shard 1/2 does not read shard 0/2's half, and the command reads the input as
    /// the run that named it did (its delimiter and columns: without them the advised command failed).
    @Test func anUnreadInputIsOneInputWhateverItsSpellingAndIsReadAsItsRunReadIt() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let stop = ["--rate", "100", "--max-duration", "1s"]
        func unread() throws -> [String]? {
            let json = try botsi(
                ["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
            return (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["unreadInputs"]
                as? [String]
        }
        let rows = Pair.generate(3000, prefix: "spell")
        _ = workspace.csv(rows, name: "in.csv")
        let relative = try botsi(
            runArguments(["in.csv"], workspace, simulator, stop), key: Simulator.defaultKey, in: workspace)
        #expect(relative.status == 75, "\(relative.stderr)")
        #expect(try unread() == ["in.csv"])
        let absolute = try botsi(
            runArguments([workspace.file("in.csv")], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(absolute.status == 0, "\(absolute.stderr)")
        #expect(try unread() == [], "read to the end under its absolute path")

        // Standard input, stopped half read: not owed from the journal.
        let csv =
            "profileId,originalTransactionId\n"
            + Pair.generate(3000, prefix: "stdin").map {
                "\($0.profileId),\($0.transactionId)\n"
            }.joined()
        let piped = try botsi(
            runArguments(["-", "--format", "csv"], workspace, simulator, stop), key: Simulator.defaultKey,
            in: workspace, stdin: Data(csv.utf8))
        #expect(piped.status == 75, "\(piped.stderr)")
        let after = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(!after.stderr.contains("run stdin") && !after.stderr.contains("earlier run"), "\(after.stderr)")
        #expect(try unread() == [])

        // A semicolon file with its own column names, stopped: read again as it was read.
        let semi = workspace.write(
            "semi.txt",
            "pid;otid\n" + Pair.generate(3000, prefix: "semi").map { "\($0.profileId);\($0.transactionId)\n" }.joined())
        let named = try botsi(
            runArguments(
                [
                    semi, "--format", "csv", "--delimiter", ";", "--profile-column", "pid", "--transaction-column",
                    "otid",
                ],
                workspace, simulator, stop), key: Simulator.defaultKey, in: workspace)
        #expect(named.status == 75, "\(named.stderr)")
        let resumed = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        let advice =
            "botsi-restore run \(semi) --journal \(workspace.journal) --format csv --delimiter ';' "
            + "--profile-column pid --transaction-column otid"
        #expect(resumed.stderr.contains(advice), "\(resumed.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains(advice), "\(status.stdout)")

        // Shards: 1/2 reading the file to the end does not read 0/2's half.
        let sharded = workspace.csv(Pair.generate(6000, prefix: "shard"), name: "sharded.csv")
        let first = try botsi(
            runArguments([sharded, "--shard", "0/2"], workspace, simulator, stop), key: Simulator.defaultKey,
            in: workspace)
        #expect(first.status == 75, "\(first.stderr)")
        let second = try botsi(
            runArguments([sharded, "--shard", "1/2"], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0, "\(second.stderr)")
        let left = try unread() ?? []
        #expect(left.contains(sharded), "\(left)")
    }

    /// Every reply a 503, each retry planned 30 s later, the run stopped after a second: no retry
    /// left, and the summary counted one for each planned ("2 requests, 2 retries").
    @Test func aRetryCountsWhenItIsSentNotWhenItIsPlanned() throws {
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.faultRate = 1
            $0.faults = [.unavailable]
        }
        defer { simulator.stop() }
        let finished = try botsi(
            [
                "run", workspace.csv(Pair.generate(3, prefix: "retry")), "--journal", workspace.journal, "--base-url",
                simulator.baseURL, "--backoff-base", "30", "--backoff-cap", "30", "--retry-after-cap", "30",
                "--max-duration", "1s", "--log-format", "json", "--quiet",
            ], key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 75, "\(finished.stderr)")
        let summary = try #require(
            finished.stderr.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.last { $0["event"] as? String == "summary" }, "\(finished.stderr)")
        #expect(summary["requests"] as? Int == 3, "\(summary)")
        #expect(summary["retries"] as? Int == 0, "\(summary)")
        #expect(simulator.stats().requests == 3)
    }

    /// A cron job that logs JSON met its likeliest failure, the key not set, as plain text.
    @Test func aMissingKeyIsAJSONErrorWhenTheLogIsJSON() throws {
        let workspace = Workspace()
        let finished = try botsi(
            [
                "run", workspace.csv(Pair.generate(3, prefix: "nokey")), "--journal", workspace.journal, "--log-format",
                "json",
            ],
            key: nil, in: workspace)
        #expect(finished.status == 64)
        let lines = finished.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one JSON object, no usage text: \(finished.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any],
            "\(finished.stderr)")
        #expect(object["event"] as? String == "error")
        #expect(object["exitCode"] as? Int == 64)
        #expect((object["message"] as? String)?.contains("BOTSI_SECRET_KEY") == true, "\(object)")
    }

    @Test func jsonLogsAreOneObjectPerLineEndingWithTheSummary() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 5 }
        defer { simulator.stop() }
        let arguments = runArguments(
            [workspace.csv(Pair.generate(200, prefix: "json"))], workspace, simulator,
            ["--log-format", "json", "--log-interval", "0.2", "--rate", "200"])
        let finished = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        let objects = try finished.stderr.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
        #expect(objects.contains { $0["event"] as? String == "progress" })
        let last = try #require(objects.last)
        #expect(last["event"] as? String == "summary")
        #expect(last["exitCode"] as? Int == 0)
        #expect(last["requests"] as? Int == 200)
    }
}
