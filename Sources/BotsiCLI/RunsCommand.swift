import BotsiJournal
import BotsiRestore
import Foundation

/// `botsi-restore runs`: one line per run with start, duration, inputs, counts and exit code.
enum RunsCommand {
    static let spec = CommandSpec(
        name: "runs", options: [.flag("--help"), .value("--journal"), .value("--format")], takesPositionals: false)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.runs)
            return ExitCode.success
        }
        let formatName = parsed.value("--format") ?? "table"
        guard let format = RunsFormat(rawValue: formatName) else {
            throw UsageError(message: "option '--format' must be table or jsonl, not '\(formatName)'")
        }
        let path = parsed.value("--journal") ?? "botsi-restore.sqlite"
        do {
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            let lines = RunLine.make(
                runs: try journal.runs(), attemptOutcomes: try journal.attemptOutcomesByRun(),
                holder: journal.runLockHolder(), now: Date())
            let sink = try ReportSink(path: nil)
            RunsWriter.write(lines, format: format) { sink.write($0) }
            try sink.commit()
            return ExitCode.success
        } catch let error as JournalError {
            Output.error("botsi-restore runs: \(error.description)")
            return ExitCode.cannotCreate
        }
    }
}
