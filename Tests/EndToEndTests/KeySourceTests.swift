import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Glibc
import Testing

@testable import BotsiJournal

@Suite("where the key comes from and who can read it")
struct KeySourceTests {
    /// The issue's reproduction: `--key-env PATH` sent the PATH to the server as the key (exit 77
    /// after a 401). A value that is a path or a list of paths is refused before anything is sent.
    @Test func keyEnvNamingPathIsRefusedAndNothingIsSent() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let environment = Child.environment(key: Simulator.defaultKey)
        let path = try #require(environment["PATH"])
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(3))], workspace, simulator, ["--key-env", "PATH"]), key: nil,
            in: workspace, environment: environment)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("--key-env takes the name of the variable that holds the key"))
        #expect(!finished.stderr.contains(path))
        #expect(simulator.stats().requests == 0)
    }

    /// A run under systemd reads its key from `/run/credentials/UNIT/…`, which exists only while the
    /// unit runs: `status` advises starting the unit again, not a run that names a file that is gone
    /// (it exited 66). The run here records the path a unit's run would have.
    @Test func afterARunWithSystemdsCredentialStatusAdvisesTheUnit() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
        }
        defer { simulator.stop() }
        let keyFile = workspace.write("botsi-secret-key", Simulator.defaultKey + "\n")
        chmod(keyFile, 0o400)
        let run = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(3))], workspace, simulator, ["--key-file", keyFile, "--max-attempts", "1"]),
            key: nil, in: workspace)
        #expect(run.status == 75, "stderr: \(run.stderr)")
        let journal = try Journal(path: workspace.journal, create: false)
        try journal.connection.execute(
            "UPDATE runs SET options = json_set(options, '$.keyFilePath', "
                + "'/run/credentials/botsi-restore-nightly.service/botsi-secret-key')")
        journal.close()
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains("send the 3 pending rows with: systemctl start botsi-restore-nightly.service"),
            "status: \(status.stdout)")
        #expect(!status.stdout.contains("/run/credentials"), "status: \(status.stdout)")
        var options = RunOptions()
        options.keyFile = "/run/credentials/botsi-restore-nightly.service/botsi-secret-key"
        #expect(RunAdvice.releaseCommand(options).hasSuffix("--release-held --key-file KEY_FILE"))
        options.keyFile = "/run/user/1000/credentials/botsi-restore-nightly.service/botsi-secret-key"
        #expect(RunAdvice.releaseCommand(options).hasSuffix("--release-held --key-file KEY_FILE"))
        #expect(RunAdvice.continuing("run", keyFile: "/run/credentials/a.service/k") == "systemctl start a.service")
        #expect(
            RunAdvice.continuing("run", keyFile: "/run/user/1000/credentials/a.service/k")
                == "systemctl --user start a.service")
        for notAUnits in [
            "/run/credentials/k", "/run/credentials/@system/k", "/etc/botsi-restore/secret-key",
            "/run/user/1000/k", "/run/user/x/credentials/a.service/k", "/run/user/1000/credentials/k",
            "/run/other/credentials/a.service/k",
        ] {
            #expect(RunAdvice.continuing("run", keyFile: notAUnits) == "run", "\(notAUnits)")
        }
    }

    /// `--key-file`: the key from a private file, e.g. a systemd credential. Nothing in the
    /// environment, nothing on the command line.
    @Test func theKeyIsReadFromAPrivateKeyFileAndAJobFileCanNameIt() throws {
        let workspace = Workspace()
        let key = "sk_file_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let simulator = try startSimulator { $0.keys = [key] }
        defer { simulator.stop() }
        let keyFile = workspace.write("botsi-key", key + "\n")
        chmod(keyFile, 0o400)
        let rows = Pair.generate(3, prefix: "keyfile")
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--key-file", keyFile]), key: nil,
            in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))

        let job = workspace.write(
            "job.json", #"{"keyFile": "\#(keyFile)", "baseURL": "\#(simulator.baseURL)", "journal": "job.sqlite"}"#)
        let viaJob = try botsi(["run", "--job", job, workspace.csv(rows)], key: nil, in: workspace)
        #expect(viaJob.status == 0, "stderr: \(viaJob.stderr)")

        chmod(keyFile, 0o644)
        let refused = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--key-file", keyFile]), key: nil,
            in: workspace)
        #expect(refused.status == 64, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("has mode 644") && refused.stderr.contains("chmod 600"))
        #expect(!refused.stderr.contains(key))
        let both = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--key-file", keyFile, "--key-env", "K"]),
            key: nil, in: workspace)
        #expect(both.status == 64 && both.stderr.contains("not both"), "stderr: \(both.stderr)")
        #expect(simulator.stats().requests == 6, "only the two good runs sent anything")
    }

    /// While it holds the key the process is not dumpable: another process of the same user can
    /// neither ptrace it nor read its environment from /proc. A control process shows that the same
    /// user could read it otherwise.
    @Test(.enabled(if: geteuid() == 0 && setpriv != nil, "needs root and util-linux's setpriv"))
    func anotherProcessOfTheSameUserCannotReadTheKeyFromProc() throws {
        let workspace = Workspace()
        chown(workspace.path, 65534, 65534)
        let key = "sk_proc_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let simulator = try startSimulator {
            $0.keys = [key]
            $0.latencyMilliseconds = 4000
        }
        defer { simulator.stop() }
        let asNobody = [setpriv!, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        let child = try Child(
            runArguments([workspace.csv(Pair.generate(1))], workspace, simulator), key: key, in: workspace,
            launcher: asNobody)
        #expect(eventually(timeout: 20) { simulator.stats().inFlight == 1 }, "the run is sending, key in hand")
        let spy = try readProc(child.pid, as: asNobody)
        #expect(spy.status != 0, "a same-user process read /proc/\(child.pid)/environ")
        #expect(!spy.output.contains(key))
        let finished = child.wait(timeout: 60)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")

        // The control: a dumpable process of the same user is readable, so the refusal above was the
        // run's own doing.
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: setpriv!)
        sleeper.arguments = Array(asNobody.dropFirst()) + ["/bin/sleep", "5"]
        sleeper.environment = ["MARKER": key]
        try sleeper.run()
        defer { sleeper.terminate() }
        usleep(200_000)
        let control = try readProc(sleeper.processIdentifier, as: asNobody)
        #expect(control.status == 0 && control.output.contains(key), "control: \(control.status)")
    }

    private static let setpriv: String? = ["/usr/bin/setpriv", "/bin/setpriv"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    private var setpriv: String? { Self.setpriv }

    /// `cat /proc/<pid>/environ` run as the user `launcher` switches to.
    private func readProc(_ pid: Int32, as launcher: [String]) throws -> (status: Int32, output: String) {
        let result = try runProgram(launcher[0], Array(launcher.dropFirst()) + ["/bin/cat", "/proc/\(pid)/environ"])
        return (result.status, result.output)
    }
}
