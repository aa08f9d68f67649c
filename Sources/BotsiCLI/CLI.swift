import BotsiBasics
import BotsiRestore
import Foundation

/// The command line: `botsi-restore <command> [options]`. The executable hands argv here and
/// exits with what comes back.
public enum CLI {
    public static let version = "0.2.0"

    /// Every subcommand, in the order help lists them.
    static let commands: [any Command.Type] = [
        RunCommand.self, ReportCommand.self, StatusCommand.self, RunsCommand.self, MergeCommand.self,
        UpgradeCommand.self, SimulateCommand.self, DemoCommand.self, CompletionCommand.self,
    ]

    static func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.name == name }
    }

    public static func main(arguments: [String]) -> Int32 {
        // Notices from the libraries (a journal made private, for one) go to stderr; `run` routes
        // them through its progress printer while it runs.
        Notices.install { Output.error($0.message) }
        let arguments = Array(arguments.dropFirst())
        guard let name = arguments.first else {
            Output.error(HelpText.overview)
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        switch name {
        case "--help", "-h", "help":
            // `help help`, `help version`, `help --help`: the overview, as `help` alone.
            guard let topic = rest.first, !["help", "version", "--help", "-h", "--version", "-V"].contains(topic) else {
                Output.out(HelpText.overview)
                return ExitCode.success
            }
            guard let command = command(named: topic) else {
                // As an unknown command is: a script that asks for the help of one learns it is not one.
                var message = "no command '\(topic)' to show the help of"
                if let near = Basics.nearest(to: topic, among: commands.map { $0.name }) {
                    message += "; did you mean '\(near)'?"
                }
                Output.error("botsi-restore: \(message)\n\(HelpText.usageLines)")
                return ExitCode.usage
            }
            Output.out(HelpText.command(command))
            return ExitCode.success
        case "--version", "-V", "version":
            Output.out("botsi-restore \(version)")
            return ExitCode.success
        default:
            break
        }
        guard let command = command(named: name) else {
            var message = "unknown command '\(name)'"
            if let near = Basics.nearest(to: name, among: commands.map { $0.name } + ["help", "version"]) {
                message += "; did you mean '\(near)'?"
            }
            Output.error("botsi-restore: \(message)\n\(HelpText.usageLines)")
            return ExitCode.usage
        }
        if let problem = ThreadStart.problem() {
            Output.error("botsi-restore \(name): \(problem)")
            return ExitCode.osError
        }
        do {
            return try invoke(command, rest)
        } catch let error as UsageError {
            Output.error(
                "botsi-restore \(name): \(VisibleText.escaped(error.message, keeping: .tab))\n\(HelpText.usage(for: name))"
            )
            return error.exitCode
        } catch {
            Output.error("botsi-restore \(name): unexpected error: \(error)")
            return ExitCode.software
        }
    }
}

/// Opens the command's type, so its settings type is known.
private func invoke<C: Command>(_ command: C.Type, _ arguments: [String]) throws -> Int32 {
    try command.invoke(arguments)
}

/// stdout for what a command produces (help, reports), stderr for everything about the run.
///
/// The one choke point for text meant for people: controls (but tab and newline), DEL, C1 controls
/// and bidi overrides are shown as visible escapes (`\u001B`), so a file name, a lock holder's host
/// or a server's message cannot drive the terminal. Reports escape their own cells (`ReportSink`).
///
/// A write that fails (a reader gone: `run … | head`, a closed terminal, a logger stopped first) is
/// dropped: `run` ignores SIGPIPE, so that losing its audience never stops it mid-drain, and its
/// journal, not its stderr, is the record.
enum Output {
    static func out(_ text: String) {
        write(FileHandle.standardOutput, VisibleText.escaped(text, keeping: [.tab, .lineFeed]) + "\n")
    }

    static func error(_ text: String) {
        write(FileHandle.standardError, VisibleText.escaped(text, keeping: [.tab, .lineFeed]) + "\n")
    }

    /// One message on stderr, every line break in it escaped: a name in it (a journal, a file)
    /// cannot forge the lines after it.
    static func errorLine(_ text: String) {
        error(VisibleText.escaped(text, keeping: .tab))
    }

    /// The live progress line on a terminal: our own carriage return and erase-line, then the text.
    static func liveLine(_ text: String) {
        write(FileHandle.standardError, "\r\u{1B}[K" + VisibleText.escaped(text))
    }

    /// Bytes to stdout as they are (a dry run's CSV), dropped when nobody reads them.
    static func raw(_ bytes: Data) {
        try? FileHandle.standardOutput.write(contentsOf: bytes)
    }

    private static func write(_ handle: FileHandle, _ text: String) {
        try? handle.write(contentsOf: Data(text.utf8))
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}
