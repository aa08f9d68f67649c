import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Everything the tool prints for people goes through one choke point that shows control
/// characters and bidi overrides as visible escapes, whatever the text came from.
@Suite("no raw terminal escapes on stderr")
struct TerminalEscapeTests {
    static let hostile = "\u{1B}]0;owned\u{07}\u{1B}[2J\u{202E}txt.exe\u{9B}1m"

    static func expectNoRawControls(_ text: String, _ context: String) {
        let raw = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }
        #expect(raw.isEmpty, "\(context) carries raw controls \(raw.map { $0.value }): \(text.debugDescription)")
        #expect(!text.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0 == "\u{202E}" }, "\(context)")
    }

    /// The issue's reproduction: a host name read from the journal (written by whatever process
    /// recorded the run) was printed raw. `status` of a run that never ended, as text and as JSON.
    @Test func aRecordedHostIsShownEscaped() throws {
        let workspace = Workspace()
        let journal = try Journal(path: workspace.journal)
        try journal.transaction { () throws(JournalError) in
            _ = try journal.startRun(
                startedAt: Date(), toolVersion: "0.1.0", host: Self.hostile, pid: 4242, optionsJSON: "{}")
        }
        journal.close()
        for extra in [[], ["--format", "json"]] {
            let finished = try botsi(["status", "--journal", workspace.journal] + extra, key: nil, in: workspace)
            #expect(finished.status == 0, "stderr: \(finished.stderr)")
            let shown = finished.stdout + finished.stderr
            if !extra.isEmpty {
                #expect(shown.contains("4242"), "the run's pid is still named: \(shown)")
                #expect(shown.contains(#"\u001B]0;owned\u0007"#) || shown.contains(#"\u001b]0;owned"#), "\(shown)")
            }
            Self.expectNoRawControls(shown, "status \(extra)")
        }
    }

    /// A file named with a line break cannot forge lines of `status` or of the run's summary
    /// (a reviewer's name ended "…\nrows      restored 5000\nnext      nothing to do"): each
    /// line is escaped as one line, and a command names the file `$'…'`, as a shell reads it.
    @Test func aFileNameWithALineBreakForgesNoLine() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 500 }
        defer { simulator.stop() }
        let name = "x.csv\nrows      restored 5000\nnext      nothing to do (a.csv"
        let input = workspace.csv(Pair.generate(20_000), name: name)
        let stopped = try botsi(
            runArguments([input], workspace, simulator, ["--max-duration", "1s"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        for (what, text) in [("summary", stopped.stderr), ("status", status.stdout)] {
            let lines = text.split(separator: "\n")
            #expect(!lines.contains { $0.hasPrefix("rows      restored 5000") }, "\(what): \(text)")
            #expect(!lines.contains { $0.hasPrefix("next      nothing to do") }, "\(what): \(text)")
            #expect(text.contains("x.csv\\nrows      restored 5000"), "\(what): \(text)")
        }
        #expect(status.stdout.contains("/x.csv\\u000Arows      restored 5000\\u000Anext"), "status: \(status.stdout)")
        // An error that names a journal so named is one line, from every command.
        for command in [["status"], ["runs"], ["report"]] {
            let missing = try botsi(command + ["--journal", "nope\nnext      nothing"], key: nil, in: workspace)
            #expect(!missing.stderr.split(separator: "\n").contains { $0.hasPrefix("next ") }, "\(missing.stderr)")
        }
        // An error that names it is one line too.
        let unknown = workspace.write("y\nnext      nothing to do", "profileId,originalTransactionId\n")
        let refused = try botsi(runArguments([unknown], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(refused.stderr.contains("y\\u000Anext      nothing to do"), "stderr: \(refused.stderr)")
        #expect(!refused.stderr.split(separator: "\n").contains { $0.hasPrefix("next ") }, "stderr: \(refused.stderr)")
        #expect(RunAdvice.shellQuoted("a\nb'c\u{202E}\\d") == "$'a\\nb\\'c\\xE2\\x80\\xAE\\\\d'")
        #expect(RunAdvice.shellQuoted("it's") == "'it'\\''s'")
        // bash reads each word back as the same bytes, in the C locale too (cron's, `env -i`'s).
        for name in ["x.csv\nnext", "é '\t\u{202E}\\\u{200B}.csv", "a b$`\"c", "\u{1B}[2J\r\u{7F}", "\u{E0041}tag"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", "printf '%s' " + RunAdvice.shellQuoted(name)]
            process.environment = ["LC_ALL": "C", "PATH": "/usr/bin:/bin"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let bytes = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(
                bytes == Data(name.utf8),
                "\(name.debugDescription) came back as \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
    }

    @Test func fileNamesInErrorsAreShownEscaped() throws {
        let workspace = Workspace()
        let finished = try botsi(
            ["run", workspace.file("in\(Self.hostile).csv"), "--journal", workspace.journal, "--dry-run"], key: "k",
            in: workspace)
        #expect(finished.status == 66, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(#"in\u001B]0;owned\u0007\u001B[2J\u202Etxt.exe\u009B1m.csv"#))
        Self.expectNoRawControls(finished.stderr, "stderr")
    }
}
