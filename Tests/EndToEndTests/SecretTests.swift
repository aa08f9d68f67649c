import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("the key never leaks")
struct SecretTests {
    @Test func theKeyAppearsInNoOutputFileOrArgv() throws {
        let workspace = Workspace()
        let key = "sk_e2e_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        var outputs: [(String, Data)] = []
        func keep(_ name: String, _ finished: Finished) {
            outputs.append(("\(name) stdout", Data(finished.stdout.utf8)))
            outputs.append(("\(name) stderr", Data(finished.stderr.utf8)))
        }
        func keepJournalFiles(_ moment: String) {
            for suffix in ["", "-wal", "-shm", ".lock"] {
                if let bytes = FileManager.default.contents(atPath: workspace.journal + suffix) {
                    outputs.append(("journal\(suffix) \(moment)", bytes))
                }
            }
        }

        // Faults, retries left pending, unknown profiles, rejected input rows.
        let faulty = try startSimulator { options in
            options.keys = [key]
            options.latencyMilliseconds = 30
            options.faultRate = 0.3
            options.faults = [.internalError, .unavailable, .reset, .truncated, .badGateway]
            options.retryAfterSeconds = 0
        }
        defer { faulty.stop() }
        let rows = Pair.generate(150) + [Pair("unknown-1", "2000000000000003")]
        let input = workspace.write(
            "in.csv",
            "profileId,originalTransactionId\n" + rows.map { "\($0.profileId),\($0.transactionId)\n" }.joined()
                + "p-bad,12x\n")
        let arguments = runArguments([input], workspace, faulty, ["--max-attempts", "2", "--concurrency", "4"])
        let child = try Child(arguments, key: key, in: workspace)
        // While it runs: its argv, and the journal's WAL before a checkpoint folds it away.
        _ = eventually(timeout: 30) { (JournalView.read(workspace.journal)?.finalPairs.count ?? 0) > 20 }
        let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child.pid)/cmdline"))) ?? Data()
        let environment = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child.pid)/environ"))) ?? Data()
        keepJournalFiles("during the run")
        let faultyRun = child.wait(timeout: 90)
        #expect(faultyRun.status == 0 || faultyRun.status == 75, "stderr: \(faultyRun.stderr)")
        keep("faulty run", faultyRun)
        #expect(!commandLine.isEmpty, "could not read the child's argv")
        #expect(commandLine.range(of: Data(key.utf8)) == nil, "the key is in the child's argv")
        // The check above means something only if the child really had the key.
        #expect(environment.range(of: Data(key.utf8)) != nil, "the key was not in the child's environment")

        // A 401: the key sent is refused by a server that expects another.
        let refusing = try startSimulator { $0.keys = ["some-other-key"] }
        defer { refusing.stop() }
        let refusedWorkspace = Workspace()
        let refused = try botsi(
            runArguments([input], refusedWorkspace, refusing), key: key, in: workspace)
        #expect(refused.status == 77, "stderr: \(refused.stderr)")
        keep("401 run", refused)

        let dryRun = try botsi(arguments + ["--dry-run"], key: key, in: workspace)
        #expect(dryRun.status == 0, "stderr: \(dryRun.stderr)")
        keep("dry run", dryRun)
        let usage = try botsi(arguments + ["--concurency", "3"], key: key, in: workspace)
        #expect(usage.status == 64)
        keep("usage error", usage)

        for format in ["csv", "jsonl"] {
            let file = workspace.file("report.\(format)")
            let toFile = try botsi(
                ["report", "--journal", workspace.journal, "--format", format, "--output", file], key: key,
                in: workspace)
            #expect(toFile.status == 0, "stderr: \(toFile.stderr)")
            keep("report \(format) to file", toFile)
            let written = try #require(FileManager.default.contents(atPath: file))
            #expect(!written.isEmpty)
            outputs.append(("report.\(format)", written))
            #expect(permissions(file) == 0o600, "report.\(format) is readable by others")
            let toStdout = try botsi(
                ["report", "--journal", workspace.journal, "--format", format], key: key, in: workspace)
            #expect(toStdout.stdout.contains("unknown-1"))
            keep("report \(format)", toStdout)
        }
        keepJournalFiles("after the runs")
        #expect(permissions(workspace.journal) == 0o600, "the journal is readable by others")
        for suffix in ["", "-wal", "-shm"] {
            if let bytes = FileManager.default.contents(atPath: refusedWorkspace.journal + suffix) {
                outputs.append(("401 journal\(suffix)", bytes))
            }
        }

        #expect(outputs.contains { $0.0 == "journal during the run" })
        // The whole key, and a piece of it (a truncated key in a message is a leak too).
        let needles = [Data(key.utf8), Data(key.dropFirst(7).prefix(12).utf8)]
        for (name, bytes) in outputs {
            #expect(needles.allSatisfy { bytes.range(of: $0) == nil }, "the key appears in \(name)")
        }
        print("secrets: searched \(outputs.count) outputs (\(outputs.reduce(0) { $0 + $1.1.count }) bytes) for the key")
    }

    private func permissions(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int ?? 0) & 0o777
    }
}
