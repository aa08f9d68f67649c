import Foundation
import Synchronization

/// Descriptors of a journal's files that stay open until the last `JournalFile` of that journal in
/// this process is closed.
///
/// Why: SQLite holds POSIX (`fcntl`) locks on the journal and its `-shm`, and the kernel drops all
/// of a process's POSIX locks on a file when the process closes *any* descriptor of it — even one
/// SQLite never saw. A connection that silently lost its locks lets another process checkpoint and
/// delete the WAL under it. So a descriptor of ours is never closed while a connection of this
/// process may still be open on the same journal; it is parked here instead (SQLite does the same
/// with its own descriptors).
enum PinnedDescriptors {
    private struct Entry {
        var users = 0
        var parked: [Int32] = []
    }

    private static let entries = Mutex<[FileIdentity: Entry]>([:])

    /// One more user of the journal `identity` (a `JournalFile` that just opened it).
    static func retain(_ identity: FileIdentity) {
        entries.withLock { $0[identity, default: Entry()].users += 1 }
    }

    /// Keeps `descriptor` (of the journal `identity` or a file beside it) open until the journal's
    /// last user lets go.
    static func park(_ descriptor: Int32, for identity: FileIdentity) {
        let closeNow = entries.withLock { entries -> Bool in
            guard entries[identity] != nil else { return true }
            entries[identity]!.parked.append(descriptor)
            return false
        }
        if closeNow { close(descriptor) }
    }

    /// One user fewer; when it was the last, every descriptor parked for the journal is closed.
    static func release(_ identity: FileIdentity, descriptor: Int32) {
        let toClose = entries.withLock { entries -> [Int32] in
            guard var entry = entries[identity] else { return [descriptor] }
            entry.users -= 1
            entry.parked.append(descriptor)
            if entry.users > 0 {
                entries[identity] = entry
                return []
            }
            entries[identity] = nil
            return entry.parked
        }
        for descriptor in toClose { close(descriptor) }
    }

    /// How many descriptors wait for the journal's last user, for tests.
    static func parkedCount(_ identity: FileIdentity) -> Int {
        entries.withLock { $0[identity]?.parked.count ?? 0 }
    }
}
