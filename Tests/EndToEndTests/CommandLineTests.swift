import BotsiBasics
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("the command line")
struct CommandLineTests {
    @Test func aMisspeltOptionIsNamedWithASuggestion() throws {
        let workspace = Workspace()
        let input = workspace.csv(Pair.generate(3))
        let finished = try botsi(
            ["run", input, "--journal", workspace.journal, "--concurency", "4"], key: Simulator.defaultKey,
            in: workspace)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("'--concurency'"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("did you mean '--concurrency'"), "stderr: \(finished.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.journal))
    }

    @Test func aMissingInputFileExits66() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let missing = workspace.file("no-such-file.csv")
        let finished = try botsi(
            runArguments([missing], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 66, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("no-such-file.csv"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
    }

    @Test(arguments: ["binary", "wrong-header"])
    func anInputThatIsNotUsableExits65BeforeAnyRequest(kind: String) throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let path = workspace.file("input.csv")
        if kind == "binary" {
            var generator = SplitMix64(seed: 3)
            let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = FileManager.default.createFile(atPath: path, contents: Data([0, 0x89, 0x50, 0x4E, 0x47, 0] + bytes))
        } else {
            workspace.write("input.csv", "user,transaction,amount\np-1,2000000000000002,9.99\n")
        }
        // A valid file beside it: an unusable input must stop the run before that one is sent either.
        let valid = workspace.csv(Pair.generate(5), name: "valid.csv")
        let finished = try botsi(
            runArguments([valid, path], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 65, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("input.csv"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
    }

    @Test func aJournalPathThatIsATextFileExits73AndLeavesItAlone() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let text = "these are my notes, not a journal\n"
        workspace.write("journal.sqlite", text)
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(5))], workspace, simulator), key: Simulator.defaultKey,
            in: workspace)
        #expect(finished.status == 73, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("journal.sqlite"), "stderr: \(finished.stderr)")
        #expect(workspace.bytes("journal.sqlite") == Data(text.utf8), "the text file was changed")
        #expect(simulator.stats().requests == 0)
    }

    /// Issue 19, item 15: 66 (EX_NOINPUT) for "no such journal to read", from every command, as
    /// `run --journal J` without inputs always gave; 73 stays for a journal that cannot be used.
    @Test func aMissingJournalExits66FromEveryCommand() throws {
        let workspace = Workspace()
        let missing = workspace.file("never-written.sqlite")
        for arguments in [
            ["status", "--journal", missing], ["runs", "--journal", missing], ["report", "--journal", missing],
            ["report", "--journal", missing, "--changes"], ["merge", workspace.file("merged.sqlite"), missing],
            ["run", "--journal", missing],
        ] {
            let finished = try botsi(arguments, key: "a-key", in: workspace)
            #expect(finished.status == 66, "\(arguments): \(finished.stderr)")
            #expect(finished.stderr.contains("does not exist"), "\(arguments): \(finished.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func helpGoesToStdoutAndExits0() throws {
        let workspace = Workspace()
        for arguments in [["--help"], ["run", "--help"], ["report", "--help"]] {
            let finished = try botsi(arguments, key: nil, in: workspace)
            #expect(finished.status == 0, "\(arguments): \(finished.stderr)")
            #expect(finished.stdout.contains("botsi-restore"), "\(arguments): \(finished.stdout)")
            #expect(finished.stderr.isEmpty, "\(arguments): \(finished.stderr)")
        }
        let run = try botsi(["run", "--help"], key: nil, in: workspace)
        #expect(run.stdout.contains("--concurrency") && run.stdout.contains("--journal"))
    }

    /// Issue 19, item 15: the top-level help had a 134-character line; every help fits 110 columns.
    @Test func everyHelpLineFitsTheHelpWidth() throws {
        let workspace = Workspace()
        for command in ["", "run", "report", "status", "runs", "merge", "simulate", "demo", "completion"] {
            let finished = try botsi(command.isEmpty ? ["--help"] : [command, "--help"], key: nil, in: workspace)
            #expect(finished.status == 0, "\(command): \(finished.stderr)")
            for line in finished.stdout.split(separator: "\n") {
                #expect(line.count <= 110, "\(command) --help: \(line.count) characters: \(line)")
            }
        }
    }

    @Test(arguments: ["--version", "-V", "version"])
    func versionPrintsTheToolAndItsVersion(_ flag: String) throws {
        let workspace = Workspace()
        let finished = try botsi([flag], key: nil, in: workspace)
        #expect(finished.status == 0)
        let line = finished.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.wholeMatch(of: /botsi-restore \d+\.\d+\.\d+.*/) != nil, "stdout: \(finished.stdout)")
    }

    @Test func helpAfterOtherArgumentsStillShowsHelp() throws {
        let workspace = Workspace()
        for arguments in [["run", "in.csv", "--concurency", "3", "--help"], ["report", "--format", "xml", "-h"]] {
            let finished = try botsi(arguments, key: nil, in: workspace)
            #expect(finished.status == 0, "\(arguments): \(finished.stderr)")
            #expect(finished.stdout.hasPrefix("usage: botsi-restore \(arguments[0])"), "\(finished.stdout)")
        }
    }

    /// A base URL with a wrong prefix: every row failed 404 `route_not_found`, exit 0, and only the
    /// rows' stored messages said to check --base-url. The summary says it now.
    @Test func everyRowA404WithoutBotsiCodesSaysTheBaseURLIsWrong() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let finished = try botsi(
            [
                "run", workspace.csv(Pair.generate(3)), "--journal", workspace.journal, "--base-url",
                simulator.baseURL + "/x",
            ],
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.stderr.contains("the base URL is probably wrong"), "\(finished.stderr)")
        #expect(finished.stderr.contains("--retry-failed --base-url URL"), "\(finished.stderr)")
        let right = try botsi(
            [
                "run", workspace.csv(Pair.generate(3, prefix: "ok"), name: "ok.csv"), "--journal", workspace.journal,
                "--base-url", simulator.baseURL,
            ],
            key: Simulator.defaultKey, in: workspace)
        #expect(!right.stderr.contains("base URL is probably wrong"), "\(right.stderr)")
    }

    @Test func aMistypedCommandSuggestsOnlyACloseOne() throws {
        let workspace = Workspace()
        let close = try botsi(["stauts"], key: nil, in: workspace)
        #expect(close.status == 64)
        #expect(close.stderr.contains("unknown command 'stauts'; did you mean 'status'?"), "\(close.stderr)")
        let far = try botsi(["frobnicate"], key: nil, in: workspace)
        #expect(far.status == 64)
        #expect(far.stderr.contains("unknown command 'frobnicate'") && !far.stderr.contains("did you mean"))
        // The help of a command that does not exist is not the overview with exit 0.
        let help = try botsi(["help", "stauts"], key: nil, in: workspace)
        #expect(help.status == 64 && help.stdout.isEmpty, "\(help.stdout)")
        #expect(
            help.stderr.contains("no command 'stauts' to show the help of; did you mean 'status'?"), "\(help.stderr)")
        for topic in ["help", "version", "--help"] {
            let overview = try botsi(["help", topic], key: nil, in: workspace)
            #expect(overview.status == 0 && overview.stdout.contains("status"), "help \(topic): \(overview.stderr)")
        }
        let known = try botsi(["help", "status"], key: nil, in: workspace)
        #expect(known.status == 0 && known.stdout.hasPrefix("usage: botsi-restore status"), "\(known.stdout)")
    }

    @Test func shortFormsWorkEndToEnd() throws {
        let workspace = Workspace()
        let input = workspace.csv(Pair.generate(4))
        let finished = try botsi(
            ["run", input, "-nq", "-j", "2", "--journal", workspace.journal], key: "rehearsal-key", in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("would send: 4"), "stderr: \(finished.stderr)")
    }

    @Test func aRunWithoutTheKeyInTheEnvironmentExits64AndNamesTheVariable() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(5))], workspace, simulator), key: nil, in: workspace)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("BOTSI_SECRET_KEY"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)

        let other = try botsi(
            runArguments([workspace.csv(Pair.generate(5))], workspace, simulator, ["--key-env", "MY_BOTSI_KEY"]),
            key: nil, in: workspace)
        #expect(other.status == 64, "stderr: \(other.stderr)")
        #expect(other.stderr.contains("MY_BOTSI_KEY"), "stderr: \(other.stderr)")
    }

    @Test func aKeyInAnotherVariableIsUsedWithKeyEnv() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(5)
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--key-env", "MY_BOTSI_KEY"]), key: nil,
            in: workspace, environment: Child.environment(key: Simulator.defaultKey, variable: "MY_BOTSI_KEY"))
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 5)
    }

    @Test func plainHTTPToANonLoopbackHostExits64() throws {
        let workspace = Workspace()
        // Only rows the input checks reject: even if the URL check failed, nothing would be sent.
        let input = workspace.write("in.csv", "profileId,originalTransactionId\np-1,not-a-number\n")
        let finished = try botsi(
            ["run", input, "--journal", workspace.journal, "--base-url", "http://example.com"],
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("example.com"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("https://"), "stderr: \(finished.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.journal))
    }

    @Test func aDryRunSendsNothingAndLeavesNoFileBehind() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let temporary = workspace.file("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        var environment = Child.environment(key: nil)
        environment["TMPDIR"] = temporary
        let input = workspace.write(
            "in.csv", "profileId,originalTransactionId\np-1,2000000000000002\np-1,2000000000000002\np-2,12x\n")
        let finished = try botsi(
            runArguments([input], workspace, simulator, ["--dry-run"]), key: nil, in: workspace,
            environment: environment.merging(["BOTSI_SECRET_KEY": "a-key"]) { $1 })
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("would send: 1"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
        #expect(!FileManager.default.fileExists(atPath: workspace.journal), "a dry run created the journal")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "a dry run left files")
    }
}
