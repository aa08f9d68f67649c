import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// cron/botsi-restore-cron.sh: one run at a time, the key and nothing else from the env file,
/// nothing from the caller's environment that a loader or shell would act on, a lock and a log no
/// other user can plant.
@Suite("the cron wrapper")
struct CronWrapperTests {
    @Test func aSecondInvocationWhileOneRunsIsSkippedAndTheJobRunsOnce() throws {
        let cron = CronSetup()
        let first = try cron.start()
        #expect(eventually(timeout: 60) { !cron.starts.isEmpty || !first.isRunning }, "the first run started")

        let second = try cron.run()
        #expect(second.status == 75)
        cron.release()
        let finished = first.wait()
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(cron.starts == ["started run --job \(cron.jobFile)"])
        #expect(cron.childEnvironment["BOTSI_SECRET_KEY"] == "cron-test-key", "the key arrived")
        let log = cron.log
        #expect(log.contains("skipped: another botsi-restore-cron run holds"))
        #expect(log.contains("end: exit 0 — ok"))
        #expect(!log.contains("cron-test-key"), "the key never reaches the log")
        for line in log.split(separator: "\n") {
            #expect(line.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"#, options: .regularExpression) != nil)
        }
    }

    @Test func thePageIsWrittenBesideTheLogOnlyWhenAskedFor() throws {
        let cron = CronSetup()
        cron.write("nightly.json", "{\"journal\": \"journals/nightly.sqlite\"}\n", mode: 0o644)
        cron.release()
        #expect(try cron.run(exit: 75).status == 75)
        #expect(cron.starts == ["started run --job \(cron.jobFile)"], "no page unless BOTSI_HTML_REPORT says where")

        let page = cron.workspace.file("logs/last-run.html")
        let asked = try cron.run(["--journal", "other.sqlite"], exit: 75, environment: ["BOTSI_HTML_REPORT": page])
        #expect(asked.status == 75, "the run's status stays the wrapper's: \(asked.stderr)")
        #expect(
            cron.starts.last == "started report --journal \(cron.workdir)/other.sqlite --format html --output \(page)",
            "starts: \(cron.starts)")
        // Named absolute, as the run resolved it: the advice is typed from another directory.
        #expect(cron.log.contains("'botsi-restore status --journal \(cron.workdir)/other.sqlite'"), "log: \(cron.log)")
        // The stand-in exits 75 for the report too: the failure is logged, the status is the run's.
        #expect(cron.log.contains("page: not written to \(page)"), "log: \(cron.log)")
        cron.write("exit-status", "0\n", mode: 0o644)
        let written = try cron.start([], environment: ["BOTSI_HTML_REPORT": page]).wait(timeout: 90)
        #expect(written.status == 0)
        let journal = "\(cron.workdir)/journals/nightly.sqlite"
        #expect(cron.starts.last == "started report --journal \(journal) --format html --output \(page)")
        #expect(cron.log.contains("page: \(page) (botsi-restore report --journal \(journal)"))
    }

    /// A JOB_FILE named relative to where the wrapper was started (as typed in a shell, or from
    /// cron's home) is that file, not one under the working directory the wrapper changes to.
    @Test func aRelativeJobFileIsTheCallersNotTheWorkingDirectorys() throws {
        let cron = CronSetup()
        cron.write("exit-status", "0\n", mode: 0o644)
        cron.release()
        let child = try Child(
            [CronSetup.script, "nightly.json"], key: nil, in: cron.workspace, environment: cron.environment(),
            executable: "/bin/bash")
        let finished = child.wait(timeout: 90)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(cron.starts == ["started run --job \(cron.jobFile)"], "starts: \(cron.starts)")
    }

    @Test func anEnvFileOthersCanReadIsRefusedAndNothingRuns() throws {
        let cron = CronSetup(envMode: 0o644)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78)
        #expect(result.stderr.contains("has mode 644"))
        #expect(result.stderr.contains("chmod 600"))
        #expect(cron.starts.isEmpty)
        #expect(cron.log.contains("refused"))
    }

    @Test(arguments: [
        (Int32(75), "rows remain pending"), (77, "the API key was refused"), (66, "input or job file missing"),
        (71, "a local resource ran out"),
    ])
    func theExitStatusIsKeptAndExplained(status: Int32, advice: String) throws {
        let cron = CronSetup()
        cron.release()
        let result = try cron.run(exit: status)
        #expect(result.status == status)
        #expect(cron.log.contains("end: exit \(status) — \(advice)"))
    }

    // Issue 12, finding 5: `bin=…` in the env file made the wrapper run another program; `LD_PRELOAD`
    // was passed down. The env file holds the key; nothing in it may become code.
    @Test(arguments: [
        "bin", "log_file", "job", "env_file", "workdir", "BOTSI_RESTORE_BIN", "PATH", "LD_PRELOAD", "BASH_ENV",
        "SSLKEYLOGFILE",
    ])
    func anEnvFileLineNamingAnythingButTheKeyIsRefusedWithItsLineNumber(name: String) throws {
        let cron = CronSetup()
        let planted = cron.write(
            "planted", "#!/usr/bin/env bash\ntouch \(cron.workspace.file("planted-ran"))\n", mode: 0o755)
        cron.write("env", "# the key\nBOTSI_SECRET_KEY=cron-test-key\n\(name)=\(planted)\n")
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("line 3"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains(name))
        #expect(!result.stderr.contains("cron-test-key") && !cron.log.contains("cron-test-key"))
        #expect(cron.starts.isEmpty, "nothing ran")
        #expect(!FileManager.default.fileExists(atPath: cron.workspace.file("planted-ran")), "the planted program ran")
        #expect(cron.log.contains("refused"))
    }

    @Test func theCallersLoaderAndShellVariablesDoNotReachBotsiRestore() throws {
        let cron = CronSetup()
        cron.release()
        let dropped = [
            "LD_LIBRARY_PATH": "/nonexistent-lib", "GCONV_PATH": "/nonexistent-gconv", "BASH_ENV": "/dev/null",
            "SSLKEYLOGFILE": cron.workspace.file("tls-secrets"), "MALLOC_CHECK_": "1", "BOTSI_SECRET_KEY": "from-cron",
        ]
        let result = try cron.run(environment: dropped.merging(["TZ": "UTC", "LANG": "C.UTF-8"]) { $1 })
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let environment = cron.childEnvironment
        for name in dropped.keys where name != "BOTSI_SECRET_KEY" {
            #expect(environment[name] == nil, "\(name) reached botsi-restore")
        }
        #expect(environment["BOTSI_SECRET_KEY"] == "cron-test-key", "the key comes from the env file alone")
        #expect(environment["TZ"] == "UTC" && environment["LANG"] == "C.UTF-8")
        #expect(environment["PATH"] != nil && environment["HOME"] != nil)
        #expect(environment.keys.allSatisfy { !$0.hasPrefix("BOTSI_") || $0 == "BOTSI_SECRET_KEY" })
    }

    @Test func theKeyVariableIsTheOneTheJobNamesAndTheAllowListPasses() throws {
        let cron = CronSetup(env: "NIGHTLY_KEY=nightly-key\nTZ=Europe/Berlin\nexport HTTPS_PROXY=http://proxy:3128\n")
        cron.write("nightly.json", "{\n  \"keyEnv\" : \"NIGHTLY_KEY\",\n  \"journal\": \"n.sqlite\"\n}\n", mode: 0o644)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let environment = cron.childEnvironment
        #expect(environment["NIGHTLY_KEY"] == "nightly-key")
        #expect(environment["TZ"] == "Europe/Berlin")
        #expect(environment["HTTPS_PROXY"] == "http://proxy:3128")

        // The default name is not the key when the job reads another.
        cron.write("env", "NIGHTLY_KEY=nightly-key\nBOTSI_SECRET_KEY=cron-test-key\n")
        let refused = try cron.run()
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("line 2") && refused.stderr.contains("NIGHTLY_KEY"), "\(refused.stderr)")

        // --key-env on the wrapper's command line wins over the job, as it does for run.
        cron.write("env", "OTHER_KEY=other-key\n")
        let overridden = try cron.run(["--key-env", "OTHER_KEY"])
        #expect(overridden.status == 0, "stderr: \(overridden.stderr)")
        #expect(cron.childEnvironment["OTHER_KEY"] == "other-key")
    }

    @Test(arguments: ["LD_PRELOAD", "PATH", "bin", "HTTPS_PROXY", "BASH_ENV", "TZ"])
    func aJobWhoseKeyEnvNamesAVariableSomethingElseReadsIsRefused(name: String) throws {
        let cron = CronSetup(env: "\(name)=\(CronSetup.script)\n")
        cron.write("nightly.json", "{\"keyEnv\": \"\(name)\"}\n", mode: 0o644)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(name) && result.stderr.contains("key"), "\(result.stderr)")
        #expect(cron.starts.isEmpty)
    }

    // Finding 5, the lock: another user pre-creating and holding the lock in world-writable
    // /run/lock made every nightly run be "skipped" (or fail with 73).
    @Test(.enabled(if: CronSetup.isRoot, "needs a second user"))
    func anotherUsersLockInASharedDirectoryNoLongerStopsTheRun() throws {
        let cron = CronSetup()
        let shared = cron.makeDirectory("shared", mode: 0o1777, owner: 0)
        let planted = shared + "/botsi-restore-cron.lock"
        let holder = try Child(
            [
                "--reuid=\(CronSetup.otherUser)", "--regid=\(CronSetup.otherUser)", "--clear-groups", "--",
                "/bin/bash", "-c", "exec 9>>\"$0\" && flock 9 && : >\"$0.held\" && exec sleep 60", planted,
            ], key: nil, in: cron.workspace, executable: "/usr/bin/setpriv")
        defer { holder.send(SIGKILL) }
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: planted + ".held") })
        #expect(ownerAndMode(planted)?.owner == CronSetup.otherUser)
        cron.settings["BOTSI_LOCK_FILE"] = planted
        cron.release()
        let result = try cron.run()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(cron.starts.count == 1)
        let lock = try #require(ownerAndMode(cron.workdir + "/.botsi-restore-cron.lock"), "no lock in the work dir")
        #expect(lock.owner == 0 && lock.mode & 0o077 == 0)
    }

    @Test(arguments: [mode_t(0o1777), 0o770, 0o702])
    func aWorkingDirectoryOthersCanWriteIsRefused(mode: mode_t) throws {
        let cron = CronSetup()
        chmod(cron.workdir, mode)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(cron.workdir) && result.stderr.contains("chmod 700"), "\(result.stderr)")
        #expect(cron.starts.isEmpty)
    }

    @Test(.enabled(if: CronSetup.isRoot, "needs a second user"))
    func aWorkingDirectoryOwnedByAnotherUserIsRefused() throws {
        let cron = CronSetup()
        chown(cron.workdir, CronSetup.otherUser, CronSetup.otherUser)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 78, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("belongs to uid \(CronSetup.otherUser)"), "\(result.stderr)")
        #expect(cron.starts.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: cron.workdir + "/.botsi-restore-cron.lock"))
    }

    @Test(.enabled(if: CronSetup.isRoot, "needs a second user"))
    func aSecondUserRunsTheWrapperInDirectoriesOfTheirOwn() throws {
        let cron = CronSetup(user: CronSetup.otherUser)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(cron.childEnvironment["BOTSI_SECRET_KEY"] == "cron-test-key")
        #expect(ownerAndMode(cron.workdir + "/.botsi-restore-cron.lock")?.owner == CronSetup.otherUser)
        #expect(ownerAndMode(cron.logFile)?.owner == CronSetup.otherUser)
    }

    @Test func underSystemdTheLockLivesInTheRuntimeDirectory() throws {
        let cron = CronSetup()
        let runtime = cron.makeDirectory("run", mode: 0o755)
        cron.release()
        let result = try cron.run(environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: runtime + "/.botsi-restore-cron.lock"))
        #expect(!FileManager.default.fileExists(atPath: cron.workdir + "/.botsi-restore-cron.lock"))
        #expect(cron.childEnvironment["RUNTIME_DIRECTORY"] == nil)
    }

    /// Whoever can write the log's directory can turn the log into a symlink to any file the
    /// wrapper's user may write (or swap it for one later): such a directory is refused.
    @Test(
        .enabled(if: CronSetup.isRoot, "needs a second user"),
        arguments: [
            ("symlink", CronSetup.otherUser, mode_t(0o755)), ("file", CronSetup.otherUser, 0o755), ("file", 0, 0o1777),
        ]
    )
    func aLogInADirectoryAnotherUserCanWriteIsRefused(planted: String, directoryOwner: uid_t, mode: mode_t) throws {
        let cron = CronSetup()
        let victim = cron.write("victim", "precious\n", mode: 0o644)
        let logs = cron.makeDirectory("logs", mode: mode, owner: directoryOwner)
        if planted == "symlink" {
            symlink(victim, cron.logFile)
        } else {
            try "theirs\n".write(toFile: cron.logFile, atomically: false, encoding: .utf8)
        }
        lchown(cron.logFile, CronSetup.otherUser, CronSetup.otherUser)
        cron.release()
        let result = try cron.run()
        #expect(result.status == 73, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(logs), "\(result.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(ownerAndMode(victim)?.mode == 0o644)
        #expect(cron.starts.isEmpty)
    }

    /// The wrapper set up to run the real binary on `rows` with `job`, the simulator's key in the env file.
    static func realRun(binary: String, rows: [Pair], job: String) -> CronSetup {
        let cron = CronSetup(env: "BOTSI_SECRET_KEY=\(Simulator.defaultKey)\n")
        cron.write(
            "work/in.csv",
            "profileId,originalTransactionId\n" + rows.map { "\($0.profileId),\($0.transactionId)\n" }.joined())
        cron.write("nightly.json", job, mode: 0o644)
        cron.settings["BOTSI_RESTORE_BIN"] = binary
        return cron
    }

    @Test func theWrapperRunsTheRealBinaryWithTheKeyFromTheEnvFile() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(20)
        let cron = Self.realRun(
            binary: binary, rows: rows,
            job: """
                {"inputs": ["in.csv"], "journal": "nightly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "keyEnv": "BOTSI_SECRET_KEY", "concurrency": 4, "timeout": "10s"}
                """)
        let result = try cron.run()
        #expect(result.status == 0, "stderr: \(result.stderr)\nlog: \(cron.log)")
        #expect(cron.log.contains("end: exit 0 — ok"))
        #expect(!cron.log.contains(Simulator.defaultKey))
        let journal = try #require(JournalView.read(cron.workdir + "/nightly.sqlite"))
        #expect(journal.finalPairs == Set(rows))
    }

    /// systemd's stop, `timeout` and `kill -TERM -PGID` signal the whole process group: the
    /// wrapper's log stamper got the TERM too and died, and botsi-restore's next line (its drain
    /// message) killed it with SIGPIPE (exit 141, rows left in flight). The run drains, journals
    /// and exits 143, and its summary and the advice reach the log.
    @Test func aTermToTheWholeProcessGroupIsDrainedAndLogged() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let cron = Self.realRun(
            binary: binary, rows: Pair.generate(2000),
            job: """
                {"inputs": ["in.csv"], "journal": "nightly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "concurrency": 4, "rate": 100, "logInterval": "0.5s"}
                """)
        // The wrapper leads a process group of its own (`setsid` forks first when it must; its
        // `--wait` gives back the wrapper's exit status), whose id its log lines carry. The signals
        // are put back to their defaults, as cron and systemd start it: this test process ignores
        // them (a signal watcher under test), and a process ignoring TERM would hide the defect.
        let child = try Child(
            [
                "--default-signal=TERM,INT,PIPE", "/usr/bin/setsid", "--wait", "/bin/bash", CronSetup.script,
                cron.jobFile,
            ], key: nil, in: cron.workspace, environment: cron.environment(), executable: "/usr/bin/env")
        let journal = cron.workdir + "/nightly.sqlite"
        let working = eventually(timeout: 60) { (JournalView.read(journal)?.finalPairs.count ?? 0) >= 50 }
        let group = try #require(
            cron.log.firstMatch(of: /\[cron (\d+)\]/).flatMap { Int32($0.1) }, "no pid in the log: \(cron.log)")
        kill(-group, SIGTERM)
        let finished = child.wait(timeout: 60)
        try #require(working, "the run never got going: \(cron.log)")
        #expect(finished.status == 143, "log: \(cron.log)")
        #expect(cron.log.contains("end: exit 143 — stopped by a signal"), "log: \(cron.log)")
        #expect(cron.log.contains("run stopped after"), "the summary is not in the log: \(cron.log)")
        let after = try #require(JournalView.read(journal))
        #expect(after.pairs { $0 == "in_flight" }.isEmpty, "rows left in flight")
    }

    /// Issue 19, item 15: botsi-restore's progress lines carry their own UTC time, and the
    /// wrapper stamped them again in its own format. One stamp a line, in one format.
    @Test func everyLogLineHasOneTimestampInOneFormat() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let cron = Self.realRun(
            binary: binary, rows: Pair.generate(60),
            job: """
                {"inputs": ["in.csv"], "journal": "nightly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "concurrency": 2, "rate": 40, "logInterval": "0.3s"}
                """)
        let result = try cron.run()
        #expect(result.status == 0, "stderr: \(result.stderr)\nlog: \(cron.log)")
        let lines = cron.log.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains(" progress: ") }, "\(cron.log)")
        let stamp = #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"#
        for line in lines {
            #expect(line.range(of: "^\(stamp)[+-]\\d{4} ", options: .regularExpression) != nil, "\(line)")
            #expect(line.dropFirst(25).range(of: stamp, options: .regularExpression) == nil, "stamped twice: \(line)")
        }
    }

    /// An operator review: a skipped run's line advised `botsi-restore status` without
    /// `--journal`, which, typed, exits 66 (journal botsi-restore.sqlite does not exist). It names
    /// the job's journal, absolute and shell-quoted, and the command it gives works as typed.
    @Test func aSkippedRunNamesTheJobsJournalInTheStatusItAdvises() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let cron = Self.realRun(
            binary: binary, rows: Pair.generate(10),
            job: """
                {"inputs": ["in.csv"], "journal": "night ly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "concurrency": 2, "timeout": "10s"}
                """)
        #expect(try cron.run().status == 0, "log: \(cron.log)")

        // Another run holds the lock (flock(2) here, as the wrapper's flock(1) does).
        let lock = open(cron.workdir + "/.botsi-restore-cron.lock", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        try #require(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0, "cannot take the wrapper's lock")
        defer { close(lock) }
        let skipped = try cron.run()
        #expect(skipped.status == 75)
        let journal = "\(cron.workdir)/night\\ ly.sqlite"
        let line = try #require(cron.log.split(separator: "\n").last { $0.contains("skipped: ") }, "log: \(cron.log)")
        #expect(line.contains("see 'botsi-restore status --journal \(journal)'"), "\(line)")

        let command = try #require(line.firstMatch(of: /see '([^']*)'/).map { String($0.1) })
        let status = try FirstDayTests.shell(command, in: cron.workspace)
        #expect(status.status == 0, "\(command): exit \(status.status)\n\(status.stderr)")
        #expect(status.stdout.contains("night ly.sqlite") && status.stdout.contains("10 requests"), "\(status.stdout)")
    }

    /// Started as `sh botsi-restore-cron.sh JOB` (dash), it stopped at `set -o pipefail` with
    /// "Illegal option", exit 2, nothing logged. It runs itself with bash; without bash on PATH it
    /// says it needs bash and exits 64.
    @Test func startedByShItRunsItselfWithBash() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(10)
        let cron = Self.realRun(
            binary: binary, rows: rows,
            job: """
                {"inputs": ["in.csv"], "journal": "nightly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "concurrency": 2, "timeout": "10s"}
                """)
        let dash = try Child(
            [CronSetup.script, cron.jobFile], key: nil, in: cron.workspace, environment: cron.environment(),
            executable: "/bin/sh"
        ).wait(timeout: 90)
        #expect(dash.status == 0, "stderr: \(dash.stderr)\nlog: \(cron.log)")
        #expect(!dash.stderr.contains("Illegal option"))
        #expect(cron.log.contains("end: exit 0 — ok"), "log: \(cron.log)")
        #expect(JournalView.read(cron.workdir + "/nightly.sqlite")?.finalPairs == Set(rows))

        // No bash to run: it says so, and nothing runs.
        let before = cron.log
        let noBash = try Child(
            [CronSetup.script, cron.jobFile], key: nil, in: cron.workspace,
            environment: cron.environment(["PATH": cron.workspace.file("empty-path")]), executable: "/bin/sh"
        ).wait(timeout: 90)
        #expect(noBash.status == 64, "stderr: \(noBash.stderr)")
        #expect(noBash.stderr.contains("needs bash") && noBash.stderr.contains("run it with bash"), "\(noBash.stderr)")
        #expect(cron.log == before, "it logged: \(cron.log)")
    }

    /// The `page:` line advised `botsi-restore report --journal J --format html` without
    /// `--output`: copied as it is, it printed the page to the terminal. It gives the whole
    /// command, the page named absolute as the report wrote it, and that command writes the page.
    @Test func thePageLinesCommandWritesThePageAsTyped() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let cron = Self.realRun(
            binary: binary, rows: Pair.generate(10),
            job: """
                {"inputs": ["in.csv"], "journal": "nightly.sqlite", "baseURL": "\(simulator.baseURL)",
                 "concurrency": 2, "timeout": "10s"}
                """)
        // Relative: from the working directory, as the report the wrapper runs there reads it.
        let result = try cron.run(environment: ["BOTSI_HTML_REPORT": "last run.html"])
        #expect(result.status == 0, "stderr: \(result.stderr)\nlog: \(cron.log)")
        let page = cron.workdir + "/last run.html"
        #expect(FileManager.default.fileExists(atPath: page), "log: \(cron.log)")
        let line = try #require(cron.log.split(separator: "\n").last { $0.contains(" page: ") }, "log: \(cron.log)")
        let expected =
            "(botsi-restore report --journal \(cron.workdir)/nightly.sqlite --format html "
            + "--output \(cron.workdir)/last\\ run.html)"
        #expect(line.hasSuffix(expected), "\(line)")

        try FileManager.default.removeItem(atPath: page)
        let command = try #require(line.firstMatch(of: /\((botsi-restore report [^)]*)\)$/).map { String($0.1) })
        let again = try FirstDayTests.shell(command, in: cron.workspace)
        #expect(again.status == 0, "\(command): exit \(again.status)\n\(again.stderr)")
        #expect(again.stdout.isEmpty, "the page went to the terminal")
        let html = (try? String(contentsOfFile: page, encoding: .utf8)) ?? ""
        #expect(html.hasPrefix("<!DOCTYPE html>") || html.hasPrefix("<!doctype html>"), "no page at \(page)")
    }
}
