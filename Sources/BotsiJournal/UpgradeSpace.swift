import Foundation

/// The room an upgrade needs on the journal's disk. The upgrade is one transaction in WAL mode:
/// every page it writes (the new tables, and the free list's trunk pages as the old tables are
/// dropped) goes first to `-wal`, a frame of the page and 24 bytes each, and the checkpoint after
/// the commit copies the frames back into the file, which grows by the pages the new tables took
/// beyond the free ones. Both are on the disk at once until the checkpoint truncates `-wal`:
/// leaving out either let an upgrade commit that could not be copied back (a 99.5 MB `-wal` and
/// a full disk, every later run exiting 73).
struct UpgradeSpace {
    /// Bytes the upgrade needs free, from its start to its checkpoint.
    var needed: Int64
    /// Bytes free beside the journal when it started.
    var free: Int64

    /// Beside the estimate: the wal-index (`-shm`) and what SQLite's own bookkeeping may add.
    static let slack: Int64 = 1 << 20

    /// What an upgrade whose result holds `livePages` pages in use, in a file of `finalPages`
    /// pages, needs beyond a journal file of `fileBytes` bytes.
    static func needed(pageSize: Int64, livePages: Int64, finalPages: Int64, fileBytes: Int64) -> Int64 {
        let trunkPages = finalPages / max(1, pageSize / 4 - 2)
        let frames = livePages + trunkPages + 16
        let wal = 32 + frames * (pageSize + 24)
        let walIndex = (frames / 4096 + 1) * 32768
        let growth = max(0, finalPages * pageSize - fileBytes)
        return wal + walIndex + growth + slack
    }

    /// Whole megabytes, rounded up (what is needed) or down (what is free).
    static func megabytes(_ bytes: Int64, roundingUp: Bool) -> Int64 {
        roundingUp ? (bytes + (1 << 20) - 1) >> 20 : bytes >> 20
    }
}

extension Journal {
    /// Bytes free to this process on the journal's file system; nil when it cannot be said.
    func freeBytesOnDisk() -> Int64? {
        var disk = statvfs()
        guard statvfs(file.path, &disk) == 0 else { return nil }
        return Int64(disk.f_bavail) * Int64(disk.f_frsize)
    }

    /// The size of the journal file (`suffix` ""), or of its `-wal`; 0 when there is none.
    func bytesOnDisk(suffix: String = "") -> Int64 {
        var info = stat()
        guard stat(file.path + suffix, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }

    /// Before the upgrade, inside its transaction: refuses it, having changed nothing, when the
    /// disk has clearly not the room. Schema 5 keeps the rows of schema 4 in about a third of its
    /// pages (0.41 in a 300,000-row journal): half of the pages in use is taken, and as growth
    /// every one of them beyond the free pages and those of the old indexes, which the upgrade
    /// drops first (measured with SQLite's `dbstat` where it has it, else not counted).
    /// `checkSpaceBeforeCommit` measures what the upgrade did before it commits, exactly.
    func checkSpaceToUpgrade(from version: Int64, droppedIndexes: [String]) throws -> UpgradeSpace? {
        guard let free = freeBytesOnDisk() else { return nil }
        let pageSize = try connection.scalarInt("PRAGMA page_size") ?? 4096
        let pages = try connection.scalarInt("PRAGMA page_count") ?? 0
        let freePages = try connection.scalarInt("PRAGMA freelist_count") ?? 0
        var indexPages: Int64 = 0
        for index in droppedIndexes {
            indexPages +=
                (try? connection.scalarInt("SELECT pageno FROM dbstat WHERE name = '\(index)' AND aggregate = 1")) ?? 0
        }
        let kept = (pages - freePages + 1) / 2
        let needed = UpgradeSpace.needed(
            pageSize: pageSize, livePages: kept, finalPages: pages + max(0, kept - freePages - indexPages),
            fileBytes: bytesOnDisk())
        let space = UpgradeSpace(needed: needed, free: free)
        guard free >= needed else {
            throw JournalError.noSpaceToUpgrade(
                path: path, from: version, to: Schema.currentVersion, needed: needed, free: free)
        }
        return space
    }

    /// After the rows are copied and the old tables dropped, before the commit: what the upgrade
    /// holds is known, so what its `-wal` and the checkpoint need is too. Refused (and rolled back
    /// by the caller) when the disk has not that room now, rather than committed into a journal
    /// whose log cannot be copied back.
    func checkSpaceBeforeCommit(from version: Int64, walBytesAtStart: Int64, freeAtStart: Int64) throws {
        guard let free = freeBytesOnDisk() else { return }
        let pageSize = try connection.scalarInt("PRAGMA page_size") ?? 4096
        let pages = try connection.scalarInt("PRAGMA page_count") ?? 0
        let freePages = try connection.scalarInt("PRAGMA freelist_count") ?? 0
        let needed = UpgradeSpace.needed(
            pageSize: pageSize, livePages: pages - freePages, finalPages: pages, fileBytes: bytesOnDisk())
        // The frames SQLite already wrote to `-wal` (its cache spills during the copy) are taken.
        let written = max(0, bytesOnDisk(suffix: "-wal") - walBytesAtStart)
        guard free < needed - written else { return }
        throw JournalError.noSpaceToUpgrade(
            path: path, from: version, to: Schema.currentVersion, needed: needed,
            free: max(freeAtStart, free + written))
    }

    /// Copies `-wal` back into the journal and truncates it, after an upgrade's commit (and for
    /// `upgrade` on a journal at the current schema, to finish one that could not). A reader in
    /// the way leaves the rest to SQLite's next checkpoint; a full disk is said, with what to do.
    func checkpointAfterUpgrade() throws(JournalError) {
        do {
            _ = try connection.scalarInt("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            guard error.isDiskFull else { throw JournalError.from(error, path: path) }
            let pageSize = (try? connection.scalarInt("PRAGMA page_size")) ?? 4096
            let pages = (try? connection.scalarInt("PRAGMA page_count")) ?? 0
            throw JournalError.notCheckpointed(
                path: path, walBytes: bytesOnDisk(suffix: "-wal"),
                needed: max(pageSize, pages * pageSize - bytesOnDisk()), free: freeBytesOnDisk() ?? 0)
        }
    }
}
