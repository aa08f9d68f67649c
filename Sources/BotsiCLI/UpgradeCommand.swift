import BotsiBasics
import BotsiJournal
import BotsiRestore
import Foundation

/// What `upgrade`'s options fill in.
struct UpgradeSettings: JournalReading {
    var journal = "botsi-restore.sqlite"
}

/// `botsi-restore upgrade`: a journal of an earlier schema carried to this version's, sending
/// nothing, so that `status` and `report` read it before the next run does.
enum UpgradeCommand: Command {
    static let name = "upgrade"
    static let summary = "upgrade a journal of an earlier version, sending nothing"
    static let synopsis = "[options]"
    static let discussion = """
        Upgrades a journal an earlier botsi-restore wrote to this version's schema, in place and in one
        transaction (a kill leaves the old schema or the new one; run it again), as the first run would,
        but sends nothing: status, runs and report then read it. Refuses a journal a live run holds
        (exit 75). An earlier botsi-restore cannot read the upgraded journal: copy it first (cp, while no
        run holds it) if one must. A journal already at this schema is left as it is.
        """

    static func initialSettings() -> UpgradeSettings { UpgradeSettings() }

    static func run(_ settings: UpgradeSettings) throws -> Int32 {
        let path = settings.journal
        do {
            let started = Date()
            let upgrade = try Journal.upgrade(path: path)
            if upgrade.from == upgrade.to {
                Output.error("journal \(path) is at schema \(upgrade.to) already: nothing to do")
            } else {
                let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
                Output.error(
                    "upgraded journal \(path) from schema \(upgrade.from) to \(upgrade.to): \(upgrade.rows) rows "
                        + "in \(seconds) s")
            }
            return ExitCode.success
        } catch {
            Output.errorLine("botsi-restore upgrade: \(error.description)")
            return error.exitCode
        }
    }
}
