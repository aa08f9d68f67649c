import BotsiBasics
import BotsiJournal
import BotsiRestore
import Foundation

/// What `status`'s options fill in.
struct StatusSettings: JournalReading {
    /// `botsi-restore status`: the run in progress or the last one. Opens the journal read-only, so
    /// it is safe while a run writes it.
    enum Format: String, CaseIterable, Sendable { case text, json }
    var journal = "botsi-restore.sqlite"
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
        let path = settings.journal
        let now = Date()
        do {
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            let snapshot = try journal.snapshot(recentSince: now.addingTimeInterval(-StatusReport.recentWindow))
            let report = StatusReport(
                journalPath: path, snapshot: snapshot, holder: journal.runLockHolder(), now: now)
            Output.out(settings.format == .json ? report.renderJSON() : report.renderText())
            return ExitCode.success
        } catch {
            Output.error("botsi-restore status: \(error.description)")
            return ExitCode.cannotCreate
        }
    }
}
