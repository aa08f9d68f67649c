import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `run --job`, `runs`, `status`, `report --output`, `merge` and `report --changes` through the
/// built executable: what an operator types.
@Suite struct ReportCommandLineTests {
    private func run(_ input: String, journal: String, _ simulator: Simulator, in workspace: Workspace) throws {
        let finished = try botsi(
            ["run", input, "--journal", journal, "--base-url", simulator.baseURL, "--quiet"],
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "\(finished.stderr)")
    }

    @Test func optionsThatDoNotApplyToAReportAreRefusedByName() throws {
        let workspace = Workspace()
        let cases: [([String], String)] = [
            (["--changes", "--status", "restored"], "option '--status' does not apply to --changes"),
            (["--changes", "--since", "24h"], "option '--since' does not apply to --changes"),
            (["--conflicts", "--run", "1"], "option '--run' does not apply to --conflicts"),
            (["--conflicts", "--code", "timeout"], "option '--code' does not apply to --conflicts"),
            (["--since-run", "1"], "option '--since-run' goes with --changes"),
        ]
        for (arguments, message) in cases {
            let result = try botsi(["report", "--journal", "missing.sqlite"] + arguments, key: nil, in: workspace)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }

    @Test func aJobFileRunsAndCommandLineFlagsOverrideIt() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        workspace.csv("in.csv", rows: [("p1", "2000000000000002"), ("p2", "2000000000000010")])
        let job = workspace.write(
            "job.json",
            """
            {"description": "test job", "inputs": ["in.csv"], "journal": "from-job.sqlite",
             "baseURL": "\(simulator.baseURL)", "keyEnv": "TEST_BOTSI_KEY", "concurrency": 2, "maxAttempts": 3,
             "timeout": "5s", "logInterval": "1s"}
            """)
        let result = try botsi(
            ["run", "--job", job, "--journal", "from-command-line.sqlite", "--quiet"], key: nil, in: workspace,
            environment: Child.environment(key: Simulator.defaultKey, variable: "TEST_BOTSI_KEY"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: workspace.file("from-command-line.sqlite")))
        #expect(!FileManager.default.fileExists(atPath: workspace.file("from-job.sqlite")))

        let runs = try botsi(
            ["runs", "--journal", "from-command-line.sqlite", "--format", "jsonl"], key: nil, in: workspace)
        #expect(runs.status == 0)
        let run = try #require(
            try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [String: Any])
        #expect(run["inputs"] as? [String] == ["in.csv"])
        #expect((run["statuses"] as? [String: Int]) == ["restored": 1, "nothing_to_restore": 1])

        let status = try botsi(["status", "--journal", "from-command-line.sqlite"], key: nil, in: workspace)
        #expect(status.status == 0)
        #expect(status.stdout.contains("finished, exit 0"))
        #expect(status.stdout.contains("--concurrency 2"), "\(status.stdout)")
        #expect(status.stdout.contains("--max-attempts 3 --timeout 5s"), "\(status.stdout)")
    }

    /// A job's log is read from another directory than the job ran in (cron, systemd): its
    /// summary's commands name the journal and inputs from `/`, while the run records them as the
    /// job wrote them.
    @Test func aJobsSummaryNamesItsPathsAbsolute() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 1500 }
        try FileManager.default.createDirectory(atPath: workspace.file("exports"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: workspace.file("journals"), withIntermediateDirectories: true)
        workspace.csv("exports/in.csv", rows: (0..<40).map { ("p\($0)", "\(2_000_000_000_000_000 + $0)") })
        let job = workspace.write(
            "job.json",
            """
            {"inputs": ["exports/in.csv"], "journal": "journals/j.sqlite", "baseURL": "\(simulator.baseURL)",
             "concurrency": 2, "maxDuration": "1s"}
            """)
        let result = try botsi(["run", "--job", job], key: Simulator.defaultKey, in: workspace)
        #expect(result.status == 75, "\(result.stderr)")
        let journal = workspace.file("journals/j.sqlite")
        let output = result.stdout + result.stderr
        #expect(output.contains("botsi-restore run --journal \(journal) "), "\(output)")
        #expect(output.contains("--status pending"), "\(output)")
        #expect(!output.contains(" journals/j.sqlite"), "\(output)")
        // A dry run advises the run it rehearsed, inputs and all.
        let dry = try botsi(["run", "--job", job, "--dry-run"], key: Simulator.defaultKey, in: workspace)
        #expect(
            dry.stderr.contains("botsi-restore run \(workspace.file("exports/in.csv")) --journal \(journal) "),
            "\(dry.stderr)")

        let runs = try botsi(["runs", "--journal", journal, "--format", "jsonl"], key: nil, in: workspace)
        let run = try #require(try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [String: Any])
        #expect(run["inputs"] as? [String] == ["exports/in.csv"])
        // Named through a link and `..`, the journal is advised where the system finds it.
        let elsewhere = workspace.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere + "/data", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: workspace.file("data"), withDestinationPath: elsewhere + "/data")
        let linked = workspace.write(
            "linked.json",
            """
            {"inputs": ["exports/in.csv"], "journal": "data/../linked.sqlite", "baseURL": "\(simulator.baseURL)",
             "concurrency": 2, "maxDuration": "1s"}
            """)
        let throughLink = try botsi(["run", "--job", linked], key: Simulator.defaultKey, in: workspace)
        #expect(
            throughLink.stderr.contains("botsi-restore run --journal \(elsewhere)/linked.sqlite ")
                && throughLink.stderr.contains("report --journal \(elsewhere)/linked.sqlite --status pending"),
            "stderr: \(throughLink.stderr)")
        // How this process wrote its advice is not the run's option.
        let recorded = try JournalTables.rows(journal, "SELECT options FROM runs").map { $0.first ?? nil }
        #expect(!recorded.isEmpty && !"\(recorded)".contains("advisesAbsolutePaths"), "\(recorded)")
    }

    @Test func aJobFileWithAnUnknownKeyIsAUsageError() throws {
        let workspace = Workspace()
        let job = workspace.write("job.json", #"{"inputs": ["in.csv"], "concurency": 4}"#)
        let result = try botsi(["run", "--job", job], key: nil, in: workspace)
        #expect(result.status == 64)
        #expect(result.stderr.contains("did you mean 'concurrency'?"))
    }

    @Test func reportOutputIsPrivateEvenWhenTheFileExisted() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        let journal = workspace.file("j.sqlite")
        try run(workspace.csv("in.csv", rows: [("p1", "2000000000000002")]), journal: journal, simulator, in: workspace)
        let output = workspace.write("report.csv", "old contents\n", mode: 0o644)
        let result = try botsi(
            ["report", "--journal", journal, "--format", "csv", "--output", output, "--status", "restored"],
            key: nil, in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        var info = stat()
        #expect(stat(output, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        #expect(text.hasPrefix("profileId,originalTransactionId,status"))
        #expect(text.contains("p1,2000000000000002,restored"))
        #expect(!text.contains("old contents"))
    }

    @Test func reportOutputDashIsStandardOutput() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        let journal = workspace.file("j.sqlite")
        try run(workspace.csv("in.csv", rows: [("p1", "2000000000000002")]), journal: journal, simulator, in: workspace)
        let result = try botsi(
            ["report", "--journal", journal, "--format", "csv", "--output", "-"], key: nil, in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("profileId,originalTransactionId,status"))
        #expect(result.stdout.contains("p1,2000000000000002,restored"))
        #expect(!FileManager.default.fileExists(atPath: workspace.file("-")), "no file named '-'")
    }

    /// A merged journal merged again, its shards named once by a relative path and once by an
    /// absolute one: `report --changes` still knows one shard by either name, and compares each
    /// shard's last night with what came before it (a review: every row came out `new`, compared
    /// with nothing).
    @Test func changesOfAMergedJournalMergedAgainKnowAShardByEitherName() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        try run(
            workspace.csv("a.csv", rows: [("pa", "2000000000000002")]), journal: "a.sqlite", simulator, in: workspace)
        try run(
            workspace.csv("b.csv", rows: [("pb", "2000000000000010")]), journal: "b.sqlite", simulator, in: workspace)
        #expect(try botsi(["merge", "first.sqlite", "a.sqlite", "b.sqlite"], key: nil, in: workspace).status == 0)
        for shard in ["a.sqlite", "b.sqlite"] {
            let refresh = try botsi(
                ["run", "--journal", shard, "--base-url", simulator.baseURL, "--refresh-older-than", "0s", "--quiet"],
                key: Simulator.defaultKey, in: workspace)
            #expect(refresh.status == 0, "\(refresh.stderr)")
        }
        let again = try botsi(
            ["merge", "again.sqlite", "first.sqlite", workspace.file("a.sqlite"), workspace.file("b.sqlite")], key: nil,
            in: workspace)
        #expect(again.status == 0, "\(again.stderr)")
        let changes = try botsi(
            ["report", "--journal", "again.sqlite", "--changes", "--format", "csv", "--columns", "change,profileId"],
            key: nil, in: workspace)
        #expect(changes.status == 0, "\(changes.stderr)")
        #expect(
            changes.stdout.isEmpty || changes.stdout == "change,profileId\r\n", "nothing changed: \(changes.stdout)")
    }

    /// `--columns` chooses the columns and their order, in every report and format; a name the
    /// report does not have is refused before anything is written, with the nearest one named.
    @Test func columnsChooseWhatIsWrittenAndInWhichOrder() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        let journal = workspace.file("j.sqlite")
        try run(workspace.csv("in.csv", rows: [("p1", "2000000000000002")]), journal: journal, simulator, in: workspace)
        let csv = try botsi(
            ["report", "--journal", journal, "--format", "csv", "--columns", "status,profileId"], key: nil,
            in: workspace)
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csv.stdout == "status,profileId\r\nrestored,p1\r\n")
        let jsonl = try botsi(
            ["report", "--journal", journal, "--columns", "profileId,accessLevels"], key: nil, in: workspace)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(jsonl.stdout.utf8)) as? [String: Any], "\(jsonl.stdout)")
        #expect(Set(object.keys) == ["profileId", "accessLevels"])
        // Chosen, the raw snapshot is shown in a table too.
        let table = try botsi(
            ["report", "--journal", journal, "--format", "table", "--columns", "profileId,accessLevels"], key: nil,
            in: workspace)
        #expect(table.stdout.hasPrefix("profileId  accessLevels"), "\(table.stdout)")
        let changes = try botsi(
            ["report", "--journal", journal, "--changes", "--format", "csv", "--columns", "change,profileId"],
            key: nil, in: workspace)
        // One run: compared with the journal before it, its row is new to it (a first-day review:
        // the morning audit's first morning exited 64).
        #expect(changes.status == 0, "\(changes.stderr)")
        #expect(changes.stdout == "change,profileId\r\nnewly_restored,p1\r\n", "\(changes.stdout)")
        let same = try botsi(
            ["report", "--journal", journal, "--changes", "--since-run", "1", "--run", "1"], key: nil, in: workspace)
        #expect(same.status == 64 && same.stderr.contains("no earlier run 1"), "\(same.stderr)")
        let unknown = try botsi(
            ["report", "--journal", journal, "--columns", "profileId,stauts", "--output", workspace.file("out.csv")],
            key: nil, in: workspace)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("no column 'stauts' (did you mean 'status'?)"), "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.file("out.csv")), "refused before any output")
        let conflict = try botsi(
            ["report", "--journal", journal, "--conflicts", "--columns", "claim,status"], key: nil, in: workspace)
        #expect(conflict.status == 0 && conflict.stdout.isEmpty, "\(conflict.stderr)")
        let wrongReport = try botsi(
            ["report", "--journal", journal, "--conflicts", "--columns", "accessLevels"], key: nil, in: workspace)
        #expect(wrongReport.status == 64 && wrongReport.stderr.contains("claim"), "\(wrongReport.stderr)")
    }

    @Test func mergeAndChangesFromTheCommandLine() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        let shardA = workspace.file("a.sqlite")
        let shardB = workspace.file("b.sqlite")
        try run(workspace.csv("a.csv", rows: [("p1", "2000000000000002")]), journal: shardA, simulator, in: workspace)
        try run(workspace.csv("b.csv", rows: [("p2", "2000000000000004")]), journal: shardB, simulator, in: workspace)
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, shardA, shardB], key: nil, in: workspace)
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(merge.stderr.contains("2 runs, 2 rows"))
        let again = try botsi(["merge", merged, shardA, shardB], key: nil, in: workspace)
        #expect(again.status == 73)
        #expect(again.stderr.contains("already exists"))

        let changes = try botsi(
            ["report", "--journal", merged, "--changes", "--run", "2", "--since-run", "1", "--format", "jsonl"],
            key: nil, in: workspace)
        #expect(changes.status == 0, "\(changes.stderr)")
        let lines = changes.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""change":"newly_restored""#) == true)
        #expect(lines.first?.contains(#""profileId":"p2""#) == true)

        let first = try botsi(["report", "--journal", merged, "--changes", "--run", "1"], key: nil, in: workspace)
        #expect(first.status == 0 && first.stdout.split(separator: "\n").count == 1, "the first run's row: \(first)")
        let backwards = try botsi(
            ["report", "--journal", merged, "--changes", "--run", "1", "--since-run", "2"], key: nil, in: workspace)
        #expect(backwards.status == 64)
        let table = try botsi(["report", "--journal", merged, "--format", "table"], key: nil, in: workspace)
        #expect(table.stdout.split(separator: "\n").count == 4)
    }
}
