import BotsiBasics
import BotsiRestore
import Foundation

/// The command line: `botsi-restore <command> [options]`. The executable hands argv here and
/// exits with what comes back.
public enum CLI {
    public static let version = "0.1.0"

    public static func main(arguments: [String]) -> Int32 {
        let arguments = Array(arguments.dropFirst())
        guard let command = arguments.first else {
            Output.error(Help.overview)
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "--help", "-h", "help":
                if let topic = rest.first, let text = Help.command(topic) {
                    Output.out(text)
                } else {
                    Output.out(Help.overview)
                }
                return ExitCode.success
            case "--version", "version":
                Output.out("botsi-restore \(version)")
                return ExitCode.success
            case "run": return try RunCommand.main(rest)
            case "report": return try ReportCommand.main(rest)
            case "status": return try StatusCommand.main(rest)
            case "runs": return try RunsCommand.main(rest)
            case "merge": return try MergeCommand.main(rest)
            case "simulate": return try SimulateCommand.main(rest)
            case "demo": return try DemoCommand.main(rest)
            default:
                let known = ["run", "report", "status", "runs", "merge", "simulate", "demo", "help"]
                let best = known.min { editDistance($0, command) < editDistance($1, command) }
                var message = "unknown command '\(command)'"
                if let best, editDistance(best, command) <= 2 { message += "; did you mean '\(best)'?" }
                Output.error("botsi-restore: \(message)\n\(Help.usageLines)")
                return ExitCode.usage
            }
        } catch let error as UsageError {
            Output.error("botsi-restore \(command): \(error.message)\n\(Help.usage(for: command))")
            return ExitCode.usage
        } catch {
            Output.error("botsi-restore \(command): unexpected error: \(error)")
            return ExitCode.software
        }
    }
}

/// stdout for what a command produces (help, reports), stderr for everything about the run.
///
/// The one choke point for text meant for people: controls (but tab and newline), DEL, C1 controls
/// and bidi overrides are shown as visible escapes (`\u001B`), so a file name, a lock holder's host
/// or a server's message cannot drive the terminal. Reports escape their own cells (`ReportSink`).
enum Output {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((VisibleText.escaped(text, keeping: [.tab, .lineFeed]) + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((VisibleText.escaped(text, keeping: [.tab, .lineFeed]) + "\n").utf8))
    }

    /// The live progress line on a terminal: our own carriage return and erase-line, then the text.
    static func liveLine(_ text: String) {
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + VisibleText.escaped(text)).utf8))
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}
