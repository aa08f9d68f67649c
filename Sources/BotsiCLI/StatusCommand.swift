import BotsiJournal
import BotsiRestore
import Foundation

/// `botsi-restore status`: the run in progress or the last one. Opens the journal read-only, so
/// it is safe while a run writes it.
enum StatusCommand {
    static let spec = CommandSpec(
        name: "status", options: [.flag("--help"), .value("--journal"), .value("--format")], takesPositionals: false)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.status)
            return ExitCode.success
        }
        let format = parsed.value("--format") ?? "text"
        guard format == "text" || format == "json" else {
            throw UsageError(message: "option '--format' must be text or json, not '\(format)'")
        }
        let path = parsed.value("--journal") ?? "botsi-restore.sqlite"
        let now = Date()
        do {
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            let snapshot = try journal.snapshot(recentSince: now.addingTimeInterval(-StatusReport.recentWindow))
            let report = StatusReport(
                journalPath: path, snapshot: snapshot, holder: journal.runLockHolder(), now: now)
            Output.out(format == "json" ? report.renderJSON() : report.renderText())
            return ExitCode.success
        } catch {
            Output.error("botsi-restore status: \(error.description)")
            return ExitCode.cannotCreate
        }
    }
}
