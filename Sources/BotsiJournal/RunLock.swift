import BotsiFiles
import Foundation

/// Who holds a journal's run lock, so a second run can say whom it waits for.
public struct LockHolder: Sendable, Codable, Equatable {
    public let pid: Int32
    public let host: String
    /// When the holder's run started, as it recorded it; empty while it has not recorded it yet.
    public let startedAt: String

    public init(pid: Int32, host: String, startedAt: String) {
        self.pid = pid
        self.host = host
        self.startedAt = startedAt
    }
}

/// The run lock is an exclusive `flock` on the journal file itself (`JournalFile`), taken by
/// `Journal.openForRun` before SQLite opens the file and dropped by `close()`. The kernel drops it
/// when the process dies, however it dies, so a killed run leaves no stale lock; and no lock file
/// exists, so nothing can be planted in its place.
extension Journal {
    /// The live run holding this journal's lock, nil when none does. Probes through the journal's
    /// own descriptor: it opens and closes nothing.
    public func runLockHolder() -> LockHolder? {
        guard file.isRunLockHeldElsewhere else { return nil }
        return Journal.holder(of: file, connection: connection)
            ?? LockHolder(pid: 0, host: "an unknown host", startedAt: "")
    }

    /// Who holds the lock of `file`: the process /proc names, with the start its run recorded in
    /// `runs` when `connection` can read it, or else the process's own start. A refused run passes
    /// no connection: it opens none (under a second name SQLite would make files of its own).
    static func holder(of file: JournalFile, connection: SQLiteConnection?) -> LockHolder? {
        var open: [LockHolder] = []
        if let connection,
            let statement = try? connection.prepare(
                "SELECT pid, host, started_at FROM runs WHERE ended_at IS NULL ORDER BY id DESC LIMIT 16")
        {
            while (try? statement.step()) == true {
                open.append(
                    LockHolder(
                        pid: Int32(statement.int(0)), host: statement.text(1) ?? "", startedAt: statement.text(2) ?? "")
                )
            }
        }
        guard let process = file.runLockHolder() else { return open.first }
        let host = ProcessInfo.processInfo.hostName
        return open.first { $0.pid == process.pid && $0.host == host }
            ?? LockHolder(pid: process.pid, host: host, startedAt: process.startedAt.map(Timestamp.string) ?? "")
    }
}
