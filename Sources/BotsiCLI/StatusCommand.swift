import BotsiBasics
import BotsiJournal
import BotsiRestore
import Foundation

/// What `status`'s options fill in.
struct StatusSettings: JournalsReading {
    /// `botsi-restore status`: the run in progress or the last one. Opens the journal read-only, so
    /// it is safe while a run writes it.
    enum Format: String, CaseIterable, Sendable { case text, json }
    var journal = "botsi-restore.sqlite"
    var journals: [String] = []
    var format = Format.text
}

enum StatusCommand: Command {
    static let name = "status"
    static let summary = "the run in progress or the last one"
    static let synopsis = "[options]"
    static let discussion = """
        The run in progress or the last one: when it started, its options and inputs, whether a live
        process still holds the journal, requests and retries so far, the rate over the last minute,
        row counts by status and code, and an ETA for the pending rows. Reads the journal read-only,
        so it is safe while a run writes it.
        """

    static func initialSettings() -> StatusSettings { StatusSettings() }

    static func run(_ settings: StatusSettings) throws -> Int32 {
        let now = Date()
        var reports: [StatusReport] = []
        var opened: [(path: String, journal: Journal)] = []
        defer { for (_, journal) in opened { journal.close() } }
        do {
            for path in settings.allJournals {
                let journal = try Journal(path: path, create: false, readOnly: true)
                opened.append((path, journal))
                try Journal.checkNamedOnce(opened)
                // Looked at first: a live run's attempts are not walked (`Journal.snapshot`).
                let holder = journal.runLockHolder()
                let snapshot = try journal.snapshot(
                    recentSince: now.addingTimeInterval(-StatusReport.recentWindow), runLockHeld: holder != nil)
                reports.append(StatusReport(journalPath: path, snapshot: snapshot, holder: holder, now: now))
            }
        } catch {
            Output.errorLine("botsi-restore status: \(error.description)")
            return error.exitCode
        }
        let json = settings.format == .json
        let text: String
        if reports.count == 1 {
            text = json ? reports[0].renderJSON() : reports[0].renderText()
        } else {
            let job = StatusReport.Job(reports)
            text = json ? job.renderJSON() : job.renderText()
        }
        Output.out(text)
        // On stderr: a script that reads the report's lines does not meet it.
        if !json, let note = Installation.commandNote(after: text) { Output.error(note) }
        return ExitCode.success
    }
}
