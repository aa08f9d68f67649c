import Foundation
import Testing

/// cron/botsi-restore-cron.sh with a stand-in for botsi-restore (BOTSI_RESTORE_BIN), so the
/// wrapper's lock, env file check, log and exit status are tested on their own.
final class CronSetup {
    let directory = OpsDirectory()
    let script = repositoryRoot + "/cron/botsi-restore-cron.sh"

    init(envMode: Int16 = 0o600) {
        // Records each start (and whether the key arrived), then waits for a release file.
        directory.write(
            "fake-botsi-restore",
            """
            #!/usr/bin/env bash
            echo "started $*" >>"$FAKE_DIR/starts"
            [ "$BOTSI_SECRET_KEY" = "cron-test-key" ] && echo "key arrived"
            for _ in $(seq 1 1200); do [ -e "$FAKE_DIR/release" ] && break; sleep 0.05; done
            exit "${FAKE_EXIT:-0}"
            """, mode: 0o755)
        directory.write("env", "# the key\nBOTSI_SECRET_KEY=\"cron-test-key\"\n", mode: envMode)
    }

    func environment(exit: Int32 = 0) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["BOTSI_RESTORE_BIN"] = directory.file("fake-botsi-restore")
        environment["BOTSI_ENV_FILE"] = directory.file("env")
        environment["BOTSI_LOG_FILE"] = directory.file("logs/cron.log")
        environment["BOTSI_LOCK_FILE"] = directory.file("cron.lock")
        environment["BOTSI_WORKDIR"] = directory.path
        environment["FAKE_DIR"] = directory.path
        environment["FAKE_EXIT"] = String(exit)
        environment["BOTSI_SECRET_KEY"] = nil
        return environment
    }

    func start(exit: Int32 = 0) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bash", script, "jobs/nightly.json"]
        process.environment = environment(exit: exit)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    func run(exit: Int32 = 0) throws -> ProgramResult {
        try runProgram("/usr/bin/env", ["bash", script, "jobs/nightly.json"], environment: environment(exit: exit))
    }

    func release() { directory.write("release", "") }

    var starts: [String] {
        ((try? String(contentsOfFile: directory.file("starts"), encoding: .utf8)) ?? "").split(separator: "\n")
            .map(String.init)
    }

    var log: String { (try? String(contentsOfFile: directory.file("logs/cron.log"), encoding: .utf8)) ?? "" }
}

@Suite struct ReportCronTests {
    @Test func aSecondInvocationWhileOneRunsIsSkippedAndTheJobRunsOnce() throws {
        let cron = CronSetup()
        let first = try cron.start()
        let deadline = Date().addingTimeInterval(60)
        while cron.starts.isEmpty && Date() < deadline && first.isRunning { usleep(20_000) }
        #expect(cron.starts.count == 1, "the first invocation started the job")

        let second = try cron.run()
        #expect(second.status == 75)
        cron.release()
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)
        #expect(cron.starts == ["started run --job jobs/nightly.json"])
        let log = cron.log
        #expect(log.contains("skipped: another botsi-restore-cron run holds"))
        #expect(log.contains("key arrived"))
        #expect(log.contains("end: exit 0 — ok"))
        #expect(!log.contains("cron-test-key"), "the key never reaches the log")
        // Every line carries a timestamp.
        for line in log.split(separator: "\n") {
            #expect(line.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"#, options: .regularExpression) != nil)
        }
    }

    @Test func anEnvFileOthersCanReadIsRefusedAndNothingRuns() throws {
        let cron = CronSetup(envMode: 0o644)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78)
        #expect(result.error.contains("has mode 644"))
        #expect(result.error.contains("chmod 600"))
        #expect(cron.starts.isEmpty)
        #expect(cron.log.contains("refused"))
    }

    @Test(arguments: [(Int32(75), "rows remain pending"), (77, "the API key was refused"), (66, "input missing")])
    func theExitStatusIsKeptAndExplained(status: Int32, advice: String) throws {
        let cron = CronSetup()
        cron.release()
        let result = try cron.run(exit: status)
        #expect(result.status == status)
        #expect(cron.log.contains("end: exit \(status) — \(advice)"))
    }
}
