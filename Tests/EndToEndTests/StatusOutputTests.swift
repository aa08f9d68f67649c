import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// What `status` prints, through the built binary: the options as `run` takes them, and JSON whose
/// numbers and booleans are JSON's own (issue 19, items 7 and 8).
@Suite("status output")
struct StatusOutputTests {
    /// A finished run with options a nightly job uses, and its journal.
    private func finishedRun(_ extra: [String], in workspace: Workspace) throws -> String {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        try FileManager.default.createDirectory(atPath: workspace.file("exports"), withIntermediateDirectories: true)
        let input = workspace.csv(Pair.generate(4, prefix: "status"), name: "exports/in.csv")
        let finished = try botsi(
            ["run", input, "--journal", workspace.journal, "--base-url", simulator.baseURL, "--quiet"] + extra,
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        return simulator.baseURL
    }

    @Test func statusShowsTheOptionsAsTheyWereTyped() throws {
        let workspace = Workspace()
        let baseURL = try finishedRun(
            [
                "--stop-at", "06:30", "--refresh-older-than", "7d", "-j", "3", "--rate", "12.5", "--timeout", "500ms",
                "--max-failure-rate", "20", "--retry-failed", "--no-adaptive",
            ], in: workspace)
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let options = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("options ") })
        for typed in [
            "--stop-at 06:30", "--refresh-older-than 7d", "--concurrency 3", "--rate 12.5", "--timeout 500ms",
            "--max-failure-rate 20", "--retry-failed", "--no-adaptive", "--base-url \(baseURL)",
        ] {
            #expect(options.contains(typed), "\(typed) missing: \(options)")
        }
        // Never an internal name, a default, or seconds since 2001.
        for hidden in [
            "deadline", "refreshOlderThan", "keyEnvironmentVariable", "shardCount", "=", "--max-attempts",
            "604800", "--key-env",
        ] {
            #expect(!options.contains(hidden), "\(hidden) shown: \(options)")
        }
        #expect(status.stdout.contains("window    dispatching stops at "), "\(status.stdout)")

        // In JSON: run's arguments, and the deadline as a time.
        let json = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let run = try #require(object["run"] as? [String: Any])
        let arguments = try #require(run["options"] as? [String], "options as run's arguments: \(run)")
        #expect(arguments.contains("--stop-at") && arguments.contains("06:30"), "\(arguments)")
        #expect(arguments.contains("--concurrency") && !arguments.contains("concurrency"), "\(arguments)")
        let deadline = try #require(run["deadline"] as? String, "\(run)")
        #expect(deadline.hasSuffix("Z") && deadline.contains("T"), "\(deadline)")
    }

    /// A journal file a run has created and not yet set up (or that a run stopped at that moment
    /// left empty): the readers said it had schema 0 "from an earlier botsi-restore" (73) and told
    /// to upgrade it. It is not set up yet: 75, try again; a run sets it up. Left so, it is 66.
    @Test func aJournalNotSetUpYetIsToTryAgainNotToUpgrade() throws {
        let workspace = Workspace()
        // Made 0644 by whoever made it: a reader says "nothing was changed", and changes nothing
        // (it narrowed the mode, and said so, before saying that); the run that sets it up does.
        let journal = workspace.write("journal.sqlite", "", mode: 0o644)
        for command in [["status"], ["runs"], ["report"]] {
            let finished = try botsi(command + ["--journal", journal], key: nil, in: workspace)
            #expect(finished.status == 75, "\(command): \(finished.stderr)")
            #expect(finished.stderr.contains("is not set up yet"), "\(command): \(finished.stderr)")
            #expect(!finished.stderr.contains("upgrade"), "\(command): \(finished.stderr)")
            #expect(!finished.stderr.contains("it is now"), "\(command): \(finished.stderr)")
        }
        #expect(Self.mode(journal) == 0o644)
        // Empty for a while and held by no run: nobody is setting it up, and a reader retrying on
        // 75 would wait for ever (a path `touch`ed by mistake). 66: nothing to read.
        let old = Date().addingTimeInterval(-60)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: journal)
        for command in [["status"], ["runs"], ["report"]] {
            let finished = try botsi(command + ["--journal", journal], key: nil, in: workspace)
            #expect(finished.status == 66, "\(command): \(finished.stderr)")
            #expect(finished.stderr.contains("no run is setting it up"), "\(command): \(finished.stderr)")
        }
        let merged = try botsi(["merge", workspace.file("merged.sqlite"), journal], key: nil, in: workspace)
        #expect(merged.status == 66, "\(merged.stderr)")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let run = try botsi(
            runArguments([workspace.csv(Pair.generate(3, prefix: "setup"))], workspace, simulator),
            key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.mode(journal) == 0o600, "the run that set it up made it private")
        #expect(try botsi(["status", "--journal", journal], key: nil, in: workspace).status == 0)
    }

    private static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil
    }

    @Test func statusJSONHasNumbersBooleansAndPlainSlashes() throws {
        let workspace = Workspace()
        _ = try finishedRun(["-j", "3"], in: workspace)
        let status = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        #expect(status.status == 0, "stderr: \(status.stderr)")
        #expect(!status.stdout.contains("\\/"), "\(status.stdout)")
        #expect(status.stdout.contains(#""complete":true"#), "\(status.stdout)")
        #expect(status.stdout.range(of: #""bytes":\d+"#, options: .regularExpression) != nil, "\(status.stdout)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let inputs = try #require((object["run"] as? [String: Any])?["inputs"] as? [[String: Any]])
        #expect(inputs.first?["path"] as? String == workspace.file("exports/in.csv"), "\(inputs)")
        #expect(status.stdout.contains(#""restored/":"#), "\(status.stdout)")
    }

    @Test func runsAndJSONLogLinesWriteSlashesPlainly() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        try FileManager.default.createDirectory(atPath: workspace.file("exports"), withIntermediateDirectories: true)
        let input = workspace.csv(Pair.generate(4, prefix: "slash"), name: "exports/in.csv")
        let finished = try botsi(
            ["run", input, "--journal", workspace.journal, "--base-url", simulator.baseURL, "--log-format", "json"],
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(#""journal":"/"#) && !finished.stderr.contains("\\/"), "\(finished.stderr)")
        let runs = try botsi(["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        #expect(runs.stdout.contains("exports/in.csv") && !runs.stdout.contains("\\/"), "\(runs.stdout)")
    }

    /// A first-day review: after a source build the summaries' `botsi-restore …` commands were
    /// "command not found". Where PATH does not find this binary, a note names its path; where it
    /// does (an installed package), nothing more is said.
    @Test func commandsNameTheBinaryWhenPathDoesNotFindIt() throws {
        let workspace = Workspace()
        _ = try finishedRun(["--retry-failed"], in: workspace)
        let binary = try #require(Locations.binary)
        var environment = Child.environment(key: nil)
        environment["PATH"] = "/usr/bin:/bin"
        let away = try botsi(
            ["status", "--journal", workspace.journal], key: nil, in: workspace, environment: environment)
        #expect(away.status == 0, "stderr: \(away.stderr)")
        #expect(away.stderr.contains("botsi-restore is not on PATH here"), "stderr: \(away.stderr)")
        #expect(away.stderr.contains(URL(fileURLWithPath: binary).resolvingSymlinksInPath().path), "\(away.stderr)")
        #expect(!away.stdout.contains("not on PATH"), "stdout is the report's alone")

        // PATH finds another botsi-restore first (an older package): the note says so.
        let other = workspace.file("other")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: other + "/botsi-restore", withDestinationPath: "/bin/true")
        environment["PATH"] = other + ":/usr/bin:/bin"
        let older = try botsi(
            ["status", "--journal", workspace.journal], key: nil, in: workspace, environment: environment)
        #expect(older.stderr.contains("the botsi-restore on PATH is another binary"), "stderr: \(older.stderr)")

        let bin = workspace.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/botsi-restore", withDestinationPath: binary)
        environment["PATH"] = bin + ":/usr/bin:/bin"
        let installed = try botsi(
            ["status", "--journal", workspace.journal], key: nil, in: workspace, environment: environment)
        #expect(installed.status == 0 && installed.stdout == away.stdout, "stderr: \(installed.stderr)")
        #expect(!installed.stderr.contains("not on PATH"), "stderr: \(installed.stderr)")
    }

    /// A first-day review: `status --journal J --journal ./J` and the HTML page of the same counted
    /// every row twice. Named twice (by any name), a journal is refused as `merge` refuses it: 64.
    @Test func aJournalNamedTwiceIsRefusedNotCountedTwice() throws {
        let workspace = Workspace()
        _ = try finishedRun([], in: workspace)
        symlink(workspace.journal, workspace.file("again.sqlite"))
        for second in [
            "./" + URL(fileURLWithPath: workspace.journal).lastPathComponent, workspace.file("again.sqlite"),
        ] {
            for command in [["status"], ["report", "--format", "html", "--output", workspace.file("page.html")]] {
                let refused = try botsi(
                    command + ["--journal", workspace.journal, "--journal", second], key: nil, in: workspace)
                #expect(refused.status == 64, "\(command) \(second): \(refused.stderr)")
                #expect(refused.stderr.contains("is named twice"), "\(command): \(refused.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.file("page.html")))
    }
}
