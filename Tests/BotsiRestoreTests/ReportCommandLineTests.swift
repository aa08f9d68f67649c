import BotsiJournal
import BotsiSimulator
import Foundation
import Testing

/// The commands through the built executable: what an operator types.
@Suite struct ReportCommandLineTests {
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["BOTSI_SECRET_KEY"] = nil
        return environment.merging(extra) { $1 }
    }

    @Test func aJobFileRunsAndCommandLineFlagsOverrideIt() throws {
        let binary = try botsiRestoreBinary()
        let directory = OpsDirectory()
        let simulator = try RunningSimulator()
        directory.csv("in.csv", [("p1", "2000000000000002"), ("p2", "2000000000000010")])
        let job = directory.write(
            "job.json",
            """
            {"description": "test job", "inputs": ["in.csv"], "journal": "from-job.sqlite",
             "baseURL": "\(simulator.baseURL)", "keyEnv": "TEST_BOTSI_KEY", "concurrency": 2, "maxAttempts": 3,
             "timeout": "5s", "logInterval": "1s"}
            """)
        let result = try runProgram(
            binary, ["run", "--job", job, "--journal", "from-command-line.sqlite", "--quiet"],
            environment: Self.environment(["TEST_BOTSI_KEY": Simulator.defaultKey]), directory: directory.path)
        #expect(result.status == 0, "\(result.error)")
        #expect(FileManager.default.fileExists(atPath: directory.file("from-command-line.sqlite")))
        #expect(!FileManager.default.fileExists(atPath: directory.file("from-job.sqlite")))

        let runs = try runProgram(
            binary, ["runs", "--journal", "from-command-line.sqlite", "--format", "jsonl"], directory: directory.path)
        #expect(runs.status == 0)
        let run = try #require(
            try JSONSerialization.jsonObject(with: Data(runs.output.utf8)) as? [String: Any])
        #expect(run["inputs"] as? [String] == ["in.csv"])
        #expect((run["statuses"] as? [String: Int]) == ["restored": 1, "nothing_to_restore": 1])

        let status = try runProgram(
            binary, ["status", "--journal", "from-command-line.sqlite"], directory: directory.path)
        #expect(status.status == 0)
        #expect(status.output.contains("finished, exit 0"))
        #expect(status.output.contains("concurrency=2"))
        #expect(status.output.contains("maxAttempts=3"))
    }

    @Test func aJobFileWithAnUnknownKeyIsAUsageError() throws {
        let binary = try botsiRestoreBinary()
        let directory = OpsDirectory()
        let job = directory.write("job.json", #"{"inputs": ["in.csv"], "concurency": 4}"#)
        let result = try runProgram(binary, ["run", "--job", job], environment: Self.environment())
        #expect(result.status == 64)
        #expect(result.error.contains("did you mean 'concurrency'?"))
    }

    @Test func reportOutputIsPrivateEvenWhenTheFileExisted() throws {
        let binary = try botsiRestoreBinary()
        let directory = OpsDirectory()
        let simulator = try RunningSimulator()
        let journal = directory.file("j.sqlite")
        _ = try runJob(
            [directory.csv("in.csv", [("p1", "2000000000000002")])], journal: journal, baseURL: simulator.baseURL)
        let output = directory.write("report.csv", "old contents\n", mode: 0o644)
        let result = try runProgram(
            binary, ["report", "--journal", journal, "--format", "csv", "--output", output, "--status", "restored"])
        #expect(result.status == 0, "\(result.error)")
        var info = stat()
        #expect(stat(output, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        #expect(text.hasPrefix("profileId,originalTransactionId,status"))
        #expect(text.contains("p1,2000000000000002,restored"))
        #expect(!text.contains("old contents"))
    }

    @Test func mergeAndChangesFromTheCommandLine() throws {
        let binary = try botsiRestoreBinary()
        let directory = OpsDirectory()
        let simulator = try RunningSimulator()
        let shardA = directory.file("a.sqlite")
        let shardB = directory.file("b.sqlite")
        _ = try runJob(
            [directory.csv("a.csv", [("p1", "2000000000000002")])], journal: shardA, baseURL: simulator.baseURL)
        _ = try runJob(
            [directory.csv("b.csv", [("p2", "2000000000000004")])], journal: shardB, baseURL: simulator.baseURL)
        let merged = directory.file("merged.sqlite")
        let merge = try runProgram(binary, ["merge", merged, shardA, shardB])
        #expect(merge.status == 0, "\(merge.error)")
        #expect(merge.error.contains("2 runs, 2 rows"))
        let again = try runProgram(binary, ["merge", merged, shardA, shardB])
        #expect(again.status == 73)
        #expect(again.error.contains("already exists"))

        let changes = try runProgram(
            binary, ["report", "--journal", merged, "--changes", "--run", "2", "--since-run", "1", "--format", "jsonl"])
        #expect(changes.status == 0, "\(changes.error)")
        let lines = changes.output.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""change":"newly_restored""#) == true)
        #expect(lines.first?.contains(#""profileId":"p2""#) == true)

        let backwards = try runProgram(binary, ["report", "--journal", merged, "--changes", "--run", "1"])
        #expect(backwards.status == 64)
        let table = try runProgram(binary, ["report", "--journal", merged, "--format", "table"])
        #expect(table.output.split(separator: "\n").count == 4)
    }
}
