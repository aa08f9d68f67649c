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
        run holds it) if one must. It first checks that its disk has the room the upgrade needs (the new
        tables, the write-ahead log the transaction writes and the file's growth when that log is copied
        back), and refuses otherwise, changing nothing (exit 73); after the commit it copies the log back
        into the journal. A journal already at this schema is left as it is, its log copied back.
        """

    /// The old tables' pages, left free in the file: said, with how to give them back, when they
    /// are worth a mention.
    private static func freePages(_ bytes: Int64, path: String) -> String {
        guard bytes >= 1 << 20 else { return "" }
        return "; \(bytes >> 20) MB of the file are free pages the old tables left, which later runs fill "
            + "before it grows (sqlite3 \(path) VACUUM, while no run holds it, gives them back to the disk, "
            + "needing room for two copies of what it holds)"
    }

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
                    "upgraded journal \(path) from schema \(upgrade.from) to \(upgrade.to): \(Basics.count(Int(upgrade.rows), "row", "rows")) "
                        + "in \(seconds) s" + freePages(upgrade.freeBytes, path: path))
            }
            return ExitCode.success
        } catch {
            Output.errorLine("botsi-restore upgrade: \(error.description)")
            return error.exitCode
        }
    }
}
