import BotsiTestSupport
import Foundation
import Testing

/// A new user's first day, from the README (issue 19): the rehearsal's lines (simulator, run, its
/// stats), the audit lines and every "Watching and auditing runs" line, read from README.md and run
/// through `sh` as written, with the built binary first on PATH in place of an installed one and the
/// simulator on a free port in place of 8080; then a run killed with `kill -9` mid-way and exactly
/// the command `status` advises, which must finish the input; and the reports read back with the
/// counts `status` gives.
@Suite("the first day, as the README tells it")
struct FirstDayTests {
    /// The README's section under `heading`, its `sh` blocks as logical lines (continuations joined,
    /// comments and blank lines left out, a trailing comment cut).
    static func lines(under heading: String) -> [String] {
        let readme = (try? String(contentsOfFile: Locations.packageRoot + "/README.md", encoding: .utf8)) ?? ""
        guard let start = readme.range(of: "\n## \(heading)\n")?.upperBound else { return [] }
        let rest = readme[start...]
        let section = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        let blocks = section.components(separatedBy: "```sh\n").dropFirst().map {
            $0.components(separatedBy: "\n```").first ?? ""
        }
        return blocks.flatMap { block in
            block.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n").map { line in
                let command = line.range(of: "  # ").map { String(line[..<$0.lowerBound]) } ?? String(line)
                return command.split(separator: " ").joined(separator: " ")
            }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
    }

    /// Runs one README line through `sh` in the workspace, the built binary first on PATH.
    static func shell(_ line: String, in workspace: Workspace, timeout: Double = 90) throws -> Finished {
        try started(line, in: workspace).wait(timeout: timeout)
    }

    /// Starts one README line through `sh` in the workspace, the built binary first on PATH.
    static func started(_ line: String, in workspace: Workspace) throws -> Child {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        var environment = Child.environment(key: nil)
        environment["PATH"] =
            URL(fileURLWithPath: binary).deletingLastPathComponent().path + ":"
            + (environment["PATH"] ?? "/usr/bin:/bin")
        return try Child(["-c", line], key: nil, in: workspace, environment: environment, executable: "/bin/sh")
    }

    /// The base URL a simulator started as `child` prints once it listens; nil after 30 s.
    static func listeningURL(_ child: Child) -> String? {
        var url: String?
        _ = eventually(timeout: 30) {
            let out = (try? String(contentsOfFile: child.stdoutPath, encoding: .utf8)) ?? ""
            url = out.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression).map { String(out[$0]) }
            return url != nil
        }
        return url
    }

    @Test func theReadmesCommandsWorkAsWrittenAndAKilledRunIsFinishedByTheAdvice() throws {
        let workspace = Workspace()
        try FileManager.default.createDirectory(atPath: workspace.file("samples"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Locations.packageRoot + "/samples/demo.csv", toPath: workspace.file("samples/demo.csv"))

        // The rehearsal: its simulator in the background, on a port of its own choosing.
        let rehearsal = Self.lines(under: "Rehearsing a job against the simulator")
        let simulatorLine = try #require(
            rehearsal.first { $0.hasPrefix("botsi-restore simulate ") && $0.hasSuffix("&") })
        try #require(simulatorLine.contains("--port 8080"), "the README's simulator line changed: \(simulatorLine)")
        let simulatorArguments = simulatorLine.dropLast().replacingOccurrences(of: "--port 8080", with: "--port 0")
            .split(separator: " ").dropFirst().map(String.init)
        let simulator = try Child(simulatorArguments, key: nil, in: workspace)
        defer {
            simulator.send(SIGTERM)
            _ = simulator.wait(timeout: 10)
        }
        let baseURL = try #require(Self.listeningURL(simulator), "the README's simulator did not start")
        func local(_ line: String) -> String { line.replacingOccurrences(of: "http://127.0.0.1:8080", with: baseURL) }

        for line in rehearsal where line != simulatorLine {
            let finished = try Self.shell(local(line), in: workspace)
            // A rehearsal's faults may leave rows owed: 75 says so, as the README's exit codes do.
            #expect([0, 75].contains(finished.status), "\(line): exit \(finished.status)\n\(finished.stderr)")
            if line.hasPrefix("curl ") { #expect(finished.stdout.contains("\"requests\""), "\(finished.stdout)") }
        }
        // A second night on the same journal, so that --changes has a run to compare with.
        let again = try Self.shell(
            local(try #require(rehearsal.first { $0.contains("botsi-restore run ") })), in: workspace)
        #expect([0, 75].contains(again.status), "the second run: exit \(again.status)\n\(again.stderr)")
        let journal = "rehearsal.sqlite"
        try #require(FileManager.default.fileExists(atPath: workspace.file(journal)), "the rehearsal wrote no journal")

        // Every line of "Watching and auditing runs" and the audit after "Running against Botsi",
        // on the rehearsal's journal.
        let audit = Self.lines(under: "Running against Botsi").filter { $0.hasPrefix("botsi-restore report ") }
        let watching = Self.lines(under: "Watching and auditing runs")
        try #require(audit.count >= 2 && watching.count >= 5, "the README's audit lines: \(audit), \(watching)")
        for line in audit + watching where line.hasPrefix("botsi-restore ") {
            let onRehearsal = line.replacingOccurrences(
                of: #"--journal [^ ]+\.sqlite"#, with: "--journal \(journal)", options: .regularExpression)
            let finished = try Self.shell(onRehearsal, in: workspace)
            #expect(finished.status == 0, "\(onRehearsal): exit \(finished.status)\n\(finished.stderr)")
        }
        for file in ["restored.csv", "changes.csv", "migration.html"] {
            #expect(
                FileManager.default.fileExists(atPath: workspace.file(file)), "the README's \(file) was not written")
        }

        // kill -9 mid-way through the README's run line, on a journal of its own, then exactly the
        // command status advises: the input is finished.
        let runLine = try #require(rehearsal.first { $0.contains("botsi-restore run ") })
        let killedLine = local(runLine).replacingOccurrences(
            of: "--journal rehearsal.sqlite", with: "--journal day.sqlite")
        let slow = try Child(
            ["simulate", "--port", "0", "--latency", "200", "--key", "rehearsal-key"], key: nil, in: workspace)
        defer {
            slow.send(SIGTERM)
            _ = slow.wait(timeout: 10)
        }
        let slowURL = try #require(Self.listeningURL(slow), "the slow simulator did not start")
        let slowLine = killedLine.replacingOccurrences(of: baseURL, with: slowURL)
        let doomed = try Self.started("exec env " + slowLine, in: workspace)
        let working = eventually(timeout: 30) {
            (JournalView.read(workspace.file("day.sqlite"))?.finalPairs.count ?? 0) >= 20
        }
        doomed.send(SIGKILL)
        _ = doomed.wait(timeout: 30)
        try #require(working, "the run to kill never got going")
        let status = try Self.shell("botsi-restore status --journal day.sqlite", in: workspace)
        let advice = try #require(
            status.stdout.split(separator: "\n").first { $0.hasPrefix("next ") }?.components(separatedBy: " with: ")
                .last,
            "status gave no next command: \(status.stdout)")
        #expect(advice.contains("samples/demo.csv"), "the advice forgets the input: \(advice)")
        let resumed = try Self.shell(
            "BOTSI_SECRET_KEY=rehearsal-key " + advice, in: workspace)
        #expect([0, 75].contains(resumed.status), "\(advice): exit \(resumed.status)\n\(resumed.stderr)")

        // The input finished, and the reports count what status counts.
        let json = try Self.shell("botsi-restore status --journal day.sqlite --format json", in: workspace)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let statuses = try #require(object["statuses"] as? [String: Int], "\(json.stdout)")
        let report = try Self.shell("botsi-restore report --journal day.sqlite --format csv", in: workspace)
        let rows = parseCSV(report.stdout).dropFirst().filter { $0.count > 2 }
        var counted: [String: Int] = [:]
        for row in rows where row[2] != "rejected" || !row[3].isEmpty { counted[row[2], default: 0] += 1 }
        let run = try #require(object["run"] as? [String: Any], "\(json.stdout)")
        let inputs = try #require(run["inputs"] as? [[String: Any]], "\(run)")
        #expect(
            inputs.count == 1 && inputs[0]["complete"] as? Bool == true,
            "the advised command did not read the killed run's input to its end: \(inputs)")
        #expect(statuses["in_flight"] ?? 0 == 0, "\(statuses)")
        for (name, count) in statuses where name != "rejected" && count > 0 {
            #expect(counted[name] == count, "report counts \(counted[name] ?? 0) \(name), status \(count)")
        }
    }
}
