import Dispatch
import Foundation
import Synchronization

/// Files written under a temporary name and moved into place when whole (a merged journal, a
/// report): a stop by SIGINT or SIGTERM while one is being written must not leave it behind. The
/// writers register each such file while it exists; the commands that write them install
/// `removeOnStop`, whose handler removes every registered file, and its SQLite companions, and
/// exits as the signal would have.
public enum TemporaryFiles {
    private static let paths = Mutex<Set<String>>([])
    private static let sources = Mutex<[any DispatchSourceSignal]>([])

    public static func register(_ path: String) { paths.withLock { _ = $0.insert(path) } }

    public static func unregister(_ path: String) { paths.withLock { _ = $0.remove(path) } }

    /// The files registered now (for tests).
    public static var registered: Set<String> { paths.withLock { $0 } }

    /// From here on SIGINT and SIGTERM remove the registered files and exit 130 and 143.
    public static func removeOnStop() {
        sources.withLock { sources in
            guard sources.isEmpty else { return }
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    for path in paths.withLock({ $0 }) {
                        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
                    }
                    _exit(128 + signalNumber)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}
