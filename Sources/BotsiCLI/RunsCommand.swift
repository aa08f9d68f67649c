import BotsiBasics
import BotsiJournal
import BotsiRestore
import Foundation

/// What `runs`'s options fill in.
struct RunsSettings: JournalReading {
    var journal = "botsi-restore.sqlite"
    var format = RunsFormat.table
}

/// `botsi-restore runs`: one line per run with start, duration, inputs, counts and exit code.
enum RunsCommand: Command {
    static let name = "runs"
    static let summary = "one line per run"
    static let synopsis = "[options]"
    static let discussion = """
        One line per run: id, start, duration, state (finished, stopped, running, killed), exit code,
        rows by status, rejected input rows, requests and inputs.
        """

    static func initialSettings() -> RunsSettings { RunsSettings() }

    static func run(_ settings: RunsSettings) throws -> Int32 {
        let path = settings.journal
        do {
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            // Looked at first: a live run's attempts are not walked (`RunLine.Unrecorded`).
            let holder = journal.runLockHolder()
            let runs = try journal.runs()
            let lines = RunLine.make(
                runs: runs, attemptOutcomes: try journal.attemptOutcomesByRun(),
                unrecorded: try RunLine.Unrecorded(journal, runs: runs, holder: holder), holder: holder, now: Date())
            let sink = try ReportSink(path: nil)
            RunsWriter.write(lines, format: settings.format) { sink.write($0) }
            try sink.commit()
            return ExitCode.success
        } catch let error as JournalError {
            Output.errorLine("botsi-restore runs: \(error.description)")
            return error.exitCode
        }
    }
}
