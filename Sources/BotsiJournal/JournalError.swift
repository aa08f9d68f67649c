import BotsiBasics
import BotsiFiles
import Foundation

/// Why a journal could not be opened, read or written. Every case reads as one sentence that says
/// what to do; `exitCode` is the status every command gives for it.
public enum JournalError: Error, CustomStringConvertible, Sendable {
    case cannotOpen(path: String, reason: String)
    case notAJournal(path: String, reason: String)
    case damaged(path: String, reason: String)
    case newerSchema(path: String, version: Int64, supported: Int64)
    /// A journal of an earlier schema, opened by a command that only reads: a run upgrades it.
    case olderSchema(path: String, version: Int64, current: Int64)
    /// A journal named twice among `merge`'s shards (by the same path, or another name of the file).
    case namedTwice(path: String)
    /// Opened to read while it holds nothing yet: a run is creating it, or one was stopped first.
    case notSetUp(path: String)
    /// The same, with no run holding it and nothing written for a while: retrying will not help.
    case neverSetUp(path: String)
    case diskFull(path: String)
    /// An upgrade refused, or rolled back, for want of room on the journal's disk: `needed` bytes
    /// free (the new tables, the log the transaction writes, the checkpoint's growth), `free` there.
    case noSpaceToUpgrade(path: String, from: Int64, to: Int64, needed: Int64, free: Int64)
    /// An upgrade committed whose log (`walBytes` of `-wal`) the disk had no room to copy back:
    /// `needed` more bytes would.
    case notCheckpointed(path: String, walBytes: Int64, needed: Int64, free: Int64)
    case readOnly(path: String)
    /// The journal (or the directory a new one was to be made in) is on a file system mounted
    /// read-only: no permission fixes that, and commands that only read it work there.
    case readOnlyMedia(path: String, exists: Bool)
    case locked(path: String, holder: LockHolder?)
    case sqlite(path: String, error: SQLiteError)
    case missing(path: String)
    /// The journal's name no longer leads to the file a run has open (removed, or replaced).
    case removedWhileOpen(path: String)
    /// A column holds a value this version does not know (a status, a run state, an outcome, or
    /// JSON of another shape): edited by hand or written by another program. Readers stop there
    /// rather than guess; the journal is left as it is.
    case unknownValue(path: String, table: String, column: String, row: Int64, value: String)
    /// The file rules refused the path, or the system call failed (`FileError` says which and what to do).
    case file(FileError)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason):
            return "cannot open journal \(path): \(reason); check the path and its directory's permissions"
        case .notAJournal(let path, let reason):
            return
                "\(path) is not a botsi-restore journal (\(reason)); nothing was changed — name the journal's path instead"
        case .damaged(let path, let reason):
            return
                "journal \(path) is damaged (\(reason)); nothing was sent — restore it from a backup, or move it aside and start a new journal (rows it held will be sent again)"
        case .newerSchema(let path, let version, let supported):
            return
                "journal \(path) has schema version \(version), newer than this botsi-restore understands (\(supported)); its contents were left as they were — use a newer botsi-restore"
        case .olderSchema(let path, let version, let current):
            return
                "journal \(path) has schema version \(version), from an earlier botsi-restore; a run of this one upgrades it "
                + "to \(current) in place when it opens it, and `botsi-restore upgrade --journal \(path)` does so sending "
                + "nothing (copy it first, while no run holds it, if an earlier version must still read it); this command "
                + "only reads, so it upgraded nothing"
        case .namedTwice(let path):
            return
                "shard journal \(path) is named twice (by that path or another name of the same file); name each shard once"
        case .notSetUp(let path):
            return
                "journal \(path) is not set up yet: a run is creating it, or one was stopped before it had; nothing was "
                + "changed — try again in a moment (the next run on it sets it up)"
        case .neverSetUp(let path):
            return
                "journal \(path) holds nothing and no run is setting it up (one was stopped while creating it, or the "
                + "file was made empty by something else); nothing to read — check the path, or start a run on it: the "
                + "next run sets it up"
        case .diskFull(let path):
            return
                "the disk holding journal \(path) is full; outcomes already committed are safe — free space and run again to continue"
        case .noSpaceToUpgrade(let path, let from, let to, let needed, let free):
            let need = UpgradeSpace.megabytes(needed, roundingUp: true)
            let have = UpgradeSpace.megabytes(free, roundingUp: false)
            return
                "journal \(path) was not upgraded from schema \(from) to \(to): that needs about \(need) MB free on its "
                + "disk (the new tables, the write-ahead log the upgrade writes and the file's growth when the log is "
                + "copied back) and \(have) MB are; nothing was changed — free \(max(1, need - have)) MB more there and "
                + "run again, or copy the journal (cp, while no run holds it) to a disk with more room and run "
                + "`botsi-restore upgrade --journal` on the copy there"
        case .notCheckpointed(let path, let walBytes, let needed, let free):
            return
                "journal \(path) was upgraded, but its write-ahead log (\(path)-wal, "
                + "\(UpgradeSpace.megabytes(walBytes, roundingUp: true)) MB) could not be copied back into it: the disk is "
                + "full (about \(UpgradeSpace.megabytes(needed, roundingUp: true)) MB more are needed, "
                + "\(UpgradeSpace.megabytes(free, roundingUp: false)) MB are free); nothing is lost, but no run can write "
                + "it until there is room — free space there, then run `botsi-restore upgrade --journal \(path)` to "
                + "finish the copy"
        case .readOnly(let path):
            return
                "journal \(path) cannot be written (read-only file or directory); outcomes already committed are safe — fix the permissions and run again"
        case .readOnlyMedia(let path, true):
            return
                "journal \(path) is on a file system mounted read-only, so it cannot be written; outcomes already "
                + "committed are safe — to run on it, copy it (with its -wal, if one is beside it) to a writable "
                + "directory and run with --journal on the copy, or mount it read-write; status, report, runs and "
                + "merge read it where it is"
        case .readOnlyMedia(let path, false):
            return
                "cannot create journal \(path): its directory is on a file system mounted read-only; nothing was "
                + "changed — give a --journal path on a writable disk"
        case .locked(let path, let holder):
            if let holder {
                let started = holder.startedAt.isEmpty ? "not recorded its start yet" : "started \(holder.startedAt)"
                return
                    "journal \(path) is in use by another run (pid \(holder.pid) on \(holder.host), \(started)); wait for it to finish or stop it"
            }
            return "journal \(path) is in use by another run; wait for it to finish or stop it"
        case .sqlite(let path, let error):
            return "journal \(path) failed: \(error.message) (SQLite code \(error.code)); committed outcomes are safe"
        case .missing(let path):
            return "journal \(path) does not exist; check the path (a run writes its journal where its --journal says)"
        case .removedWhileOpen(let path):
            return "journal \(path) was moved, removed or replaced while this run wrote it, so the run stopped and "
                + "wrote nothing more; what it had committed is in the file it had open: if that was moved, put it "
                + "back at \(path) (or name its new path) and run again; if it was removed, its outcomes are lost, "
                + "and a run with the inputs sends their rows again"
        case .unknownValue(let path, let table, let column, let row, let value):
            let shown = value.count > 60 ? String(value.prefix(60)) + "…" : value
            return
                "journal \(path): \(table) row \(row) holds \(column) '\(VisibleText.escaped(shown))', which this botsi-restore does not know; nothing was changed — the row was edited by hand or written by another program: put the value right with sqlite3 (docs/journal.md lists the values), or read it with the version that wrote it"
        case .file(let error):
            return error.description
        }
    }

    /// 66 (EX_NOINPUT) when there is no journal to read, as for a missing input; 75 when another
    /// run holds it (try again later); 73 for a journal that cannot be used.
    public var exitCode: Int32 {
        switch self {
        case .missing: ExitCode.noInput
        case .locked, .notSetUp: ExitCode.temporaryFailure
        case .neverSetUp: ExitCode.noInput
        case .namedTwice: ExitCode.usage
        default: ExitCode.cannotCreate
        }
    }

    /// What a refusal or failure of the journal's file means for the journal.
    init(_ error: FileError, path: String, creating: Bool) {
        switch error.kind {
        case .missing where !creating: self = .missing(path: path)
        case .readOnly: self = Self.cannotWrite(path: path)
        case .diskFull: self = .diskFull(path: path)
        default: self = .file(error)
        }
    }

    /// A journal that cannot be written: on read-only media, said as such (a permission is not the
    /// cause there, and the advice is to copy it); otherwise a read-only file or directory.
    static func cannotWrite(path: String) -> JournalError {
        guard Files.isOnReadOnlyFileSystem(path) else { return .readOnly(path: path) }
        return .readOnlyMedia(path: path, exists: access(path, F_OK) == 0)
    }

    static func from(_ error: SQLiteError, path: String) -> JournalError {
        if error.isDiskFull { return .diskFull(path: path) }
        if error.isReadOnly { return cannotWrite(path: path) }
        if error.isCorrupt { return .damaged(path: path, reason: error.message) }
        if error.isNotADatabase { return .notAJournal(path: path, reason: error.message) }
        return .sqlite(path: path, error: error)
    }
}
