import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// What the run says while it runs and when it ends, through the built binary (issue 19 items
/// 6, 10, 11 and 12): an ETA that says what it covers, a live line that fits the terminal, the
/// slots that wait on slow replies, and the cause of transport errors.
@Suite("the run's progress and summary tell the truth", .serialized)
struct ProgressTruthTests {
    static let tmux = "/usr/bin/tmux"

    /// Runs the binary in a detached tmux window `width` columns wide and reads the screen
    /// (`capture-pane -J`, wrapped rows joined) while it runs: every progress line fits, and
    /// each redraw replaces the one line instead of leaving a stray one above it.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: tmux), "tmux is needed"), arguments: [80, 60])
    func theLiveLineFitsTheTerminalAndIsRedrawnInPlace(width: Int) throws {
        let binary = try #require(Locations.binary, "build botsi-restore first")
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.latencyMilliseconds = 5
            // Some 500s: retries and statuses make the line long.
            $0.faultRate = 0.1
            $0.faults = [.internalError]
        }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(500, prefix: "tmux\(width)"))
        let command =
            ([binary] + runArguments([input], workspace, simulator, ["--rate", "100"]))
            .map { "'\($0)'" }.joined(separator: " ") + "; echo exit=$?; sleep 120"
        let socket = "botsi-test-\(UUID().uuidString.prefix(8))"
        // The server tmux starts keeps the descriptors of the command that started it, among them
        // the one Foundation watches for the child's exit: bash closes all but 0-2 before tmux runs,
        // and the command that starts the server writes nowhere.
        func tmux(_ arguments: [String], output: Bool = true) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            let closing =
                "for n in $(ls /proc/$$/fd); do [ \"$n\" -gt 2 ] && eval \"exec $n>&-\"; done; exec \"$0\" \"$@\""
            process.arguments = ["-c", closing, Self.tmux, "-L", socket, "-f", "/dev/null"] + arguments
            var environment = Child.environment(key: Simulator.defaultKey)
            environment["TERM"] = "xterm"
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = output ? pipe : FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let data = output ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        _ = try tmux(["new-session", "-d", "-s", "run", "-x", "\(width)", "-y", "40", command], output: false)
        defer { _ = try? tmux(["kill-server"], output: false) }
        var screens: [String] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.4)
            let screen = try tmux(["capture-pane", "-p", "-J", "-t", "run"])
            screens.append(screen)
            if screen.contains("exit=") { break }
        }
        let last = try #require(screens.last)
        #expect(last.contains("run finished in"), "the run did not end: \(last)")
        let progressScreens = screens.filter { $0.contains(" done") }
        #expect(progressScreens.count >= 3, "too few screens with the line: \(screens)")
        for screen in progressScreens {
            let lines = screen.split(separator: "\n").filter { $0.contains(" done") }
            #expect(lines.count == 1, "one progress line, no stray ones: \(screen)")
            for line in lines {
                #expect(line.count < width, "\(line.count) columns at \(width): \(line)")
            }
        }
    }

    /// Issue 19 item 6: until the input is read to its end the ETA covers the rows read so far and
    /// says so; after that it is the ETA of the run.
    @Test func theETASaysWhatItCoversUntilTheInputIsRead() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 2 }
        defer { simulator.stop() }
        let arguments = runArguments(
            [workspace.csv(Pair.generate(2_000, prefix: "eta"))], workspace, simulator,
            ["--log-interval", "0.3", "--rate", "400"])
        let finished = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        let lines = finished.stderr.split(separator: "\n").filter { $0.contains(" progress: ") }
        let reading = try #require(lines.firstIndex { $0.contains("| ETA ") }, "no ETA: \(finished.stderr)")
        #expect(lines[reading].contains("for the rows read so far"), "\(lines[reading])")
        let read = lines.firstIndex { $0.contains("| ETA ") && !$0.contains("so far") }
        #expect(read.map { $0 > reading } == true, "no ETA once the input was read: \(lines)")
    }

    /// Issue 19 item 11: a server that holds replies until --timeout; the progress says how many
    /// slots wait on slow replies, and the summary says the timeouts dominated.
    @Test func stalledRepliesAreShownInTheProgressAndTheSummary() throws {
        let workspace = Workspace()
        let simulator = try startSimulator {
            $0.faultRate = 1
            $0.faults = [.stall]
            $0.stallSeconds = 5
        }
        defer { simulator.stop() }
        let arguments = [
            "run", workspace.csv(Pair.generate(8, prefix: "stall")), "--journal", workspace.journal, "--base-url",
            simulator.baseURL, "--timeout", "1.5s", "--max-attempts", "1", "-j", "4", "--log-interval", "0.25",
        ]
        let finished = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 75, "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains(
                "4 of 4 slots waiting on replies slower than 750ms (longest 1s, --timeout 1500ms)"),
            "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains(
                "requests that waited the whole --timeout 1500ms: 8, 100% of the slots' busy time; timeouts dominated"),
            "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains(
                "most common transport error (timeout, 8 of the 8 requests answered without HTTP): Timeout was reached")
        )
    }

    /// Issue 19 item 12: a wrong port; the summary names curl's own words for it.
    @Test func aWrongPortIsNamedInTheSummary() throws {
        let workspace = Workspace()
        let closed = try Loopback.freePort()
        let arguments = [
            "run", workspace.csv(Pair.generate(3, prefix: "port")), "--journal", workspace.journal, "--base-url",
            "http://127.0.0.1:\(closed)", "--backoff-base", "0.01", "--backoff-cap", "0.05", "--max-attempts", "2",
        ]
        let finished = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 75, "stderr: \(finished.stderr)")
        let line = try #require(
            finished.stderr.split(separator: "\n").first { $0.contains("most common transport error") },
            "stderr: \(finished.stderr)")
        #expect(line.contains("(connection_error, 6 of the 6 requests answered without HTTP)"), "\(line)")
        #expect(line.contains("Failed to connect to 127.0.0.1 port \(closed)"), "\(line)")
    }

    /// A review: a stopped run recorded its input as read to 524,720 bytes while its progress said
    /// 211,654: the record took the input thread's read-ahead. Both are now the bytes behind the
    /// rows the run took: with rows of one length, exactly the header and those rows.
    @Test func aStoppedInputIsRecordedAsFarAsTheRunTookIt() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let header = "profileId,originalTransactionId\n"
        let rows = (0..<20_000).map { "profile-\(100_000 + $0),\(2_000_000_000_000_000 + $0)\n" }
        let input = workspace.write("in.csv", header + rows.joined())
        let stopped = try botsi(
            runArguments([input], workspace, simulator, ["--concurrency", "4", "--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let journal = try Journal(path: workspace.journal, create: false, readOnly: true)
        defer { journal.close() }
        let run = try #require(try journal.runs().last)
        let recorded = try #require(run.inputs.first)
        let read = try #require(run.counts.rowsRead)
        #expect(!recorded.complete && read > 0 && read < rows.count, "\(recorded), \(read) rows read")
        #expect(recorded.bytes == Int64(header.utf8.count + read * rows[0].utf8.count), "\(recorded), \(read) rows")
    }
}
