import BotsiTestSupport
import Foundation
import Testing

/// The completion scripts and the man page, as the shells and groff read them.
@Suite("completion scripts and the man page")
struct CompletionAndManPageTests {
    /// Runs a program other than botsi-restore (a shell, groff) to the end.
    func program(_ path: String, _ arguments: [String], in workspace: Workspace) throws -> Finished {
        let child = try Child(arguments, key: nil, in: workspace, executable: path)
        return child.wait(timeout: 60)
    }

    func script(_ shell: String, in workspace: Workspace) throws -> String {
        let finished = try botsi(["completion", shell], key: nil, in: workspace)
        #expect(finished.status == 0, "completion \(shell): \(finished.stderr)")
        return workspace.write("completion.\(shell)", finished.stdout)
    }

    @Test(arguments: [("bash", "/bin/bash"), ("zsh", "/usr/bin/zsh"), ("fish", "/usr/bin/fish")])
    func eachScriptPassesItsShellsSyntaxCheck(shell: String, path: String) throws {
        let workspace = Workspace()
        let file = try script(shell, in: workspace)
        let checked = try program(path, ["-n", file], in: workspace)
        #expect(checked.status == 0, "\(shell) -n: \(checked.stderr)")
        #expect(checked.stderr.isEmpty, "\(shell) -n: \(checked.stderr)")
    }

    /// bash's programmable completion for real: the script's function, given COMP_WORDS and
    /// COMP_CWORD as bash sets them at a Tab, leaves the candidates in COMPREPLY.
    @Test func bashCompletesRunConcToConcurrency() throws {
        let workspace = Workspace()
        let file = try script("bash", in: workspace)
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let finished = try program(
                "/bin/bash",
                [
                    "--norc", "--noprofile", "-c",
                    "source '\(file)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _botsi_restore; "
                        + "printf '%s\\n' \"${COMPREPLY[@]}\"",
                ], in: workspace)
            #expect(finished.status == 0, "\(finished.stderr)")
            return finished.stdout.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["botsi-restore", "run", "--conc"]) == ["--concurrency"])
        #expect(try complete(["botsi-restore", "run", "--format", ""]) == ["csv", "tsv", "jsonl", "json"])
        #expect(try complete(["botsi-restore", "run", "--format", "=", "j"]) == ["jsonl", "json"])
        #expect(try complete(["botsi-restore", "simulate", "--st"]) == ["--stall"])
        #expect(try complete(["botsi-restore", "sta"]) == ["status"])
        #expect(try complete(["botsi-restore", "run", "-j", ""]).isEmpty)
    }

    @Test func fishCompletesRunConcToConcurrency() throws {
        let workspace = Workspace()
        let file = try script("fish", in: workspace)
        let finished = try program(
            "/usr/bin/fish", ["--no-config", "-c", "source '\(file)'; complete -C 'botsi-restore run --conc'"],
            in: workspace)
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stdout.hasPrefix("--concurrency\trequests in flight at most"), "\(finished.stdout)")
    }

    @Test func anUnknownShellIsAUsageError() throws {
        let workspace = Workspace()
        let finished = try botsi(["completion", "tcsh"], key: nil, in: workspace)
        #expect(finished.status == 64)
        #expect(finished.stderr.contains("bash, zsh or fish"), "\(finished.stderr)")
    }

    @Test func theManPageRendersWithoutWarnings() throws {
        let workspace = Workspace()
        let page = Locations.packageRoot + "/docs/botsi-restore.1"
        let finished = try program("/usr/bin/groff", ["-man", "-Tutf8", "-ww", page], in: workspace)
        #expect(finished.status == 0)
        #expect(finished.stderr.isEmpty, "groff: \(finished.stderr)")
        // grotty writes bold and underline by overstriking: "c\bc", "_\bc".
        var text = ""
        for character in finished.stdout {
            if character == "\u{8}" { _ = text.popLast() } else { text.append(character) }
        }
        for expected in ["--concurrency", "--stall", "maxFailureRate", "botsi-restore completion"] {
            #expect(text.contains(expected), "the rendered page lacks \(expected)")
        }
    }
}
