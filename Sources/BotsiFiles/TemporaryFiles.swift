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

    /// From here on SIGINT and SIGTERM remove the registered files, then end the process by the
    /// signal itself (so that a shell loop sees it killed, not exited). A signal ignored when the
    /// command started (`nohup`, a background job of a script) stays ignored.
    public static func removeOnStop() {
        sources.withLock { sources in
            guard sources.isEmpty else { return }
            for signalNumber in [SIGINT, SIGTERM] {
                var current = sigaction()
                guard sigaction(signalNumber, nil, &current) == 0, !isIgnore(current.__sigaction_handler.sa_handler)
                else { continue }
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    for path in paths.withLock({ $0 }) {
                        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
                    }
                    // Dispatch keeps the signal blocked to read it: unblocked here, its default ends us.
                    signal(signalNumber, SIG_DFL)
                    var set = sigset_t()
                    sigemptyset(&set)
                    sigaddset(&set, signalNumber)
                    pthread_sigmask(SIG_UNBLOCK, &set, nil)
                    raise(signalNumber)
                    _exit(128 + signalNumber)
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    private static func isIgnore(_ handler: (@convention(c) (Int32) -> Void)?) -> Bool {
        guard let handler else { return false }
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
