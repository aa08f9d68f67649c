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
