import Synchronization

/// A message for the person running the tool that arises deep inside a library (the route to the
/// server, a TLS warning, a capped `Retry-After`), handed to whatever the command line installed.
public struct Notice: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Worth a line, not worth attention: dropped under `--quiet`.
        case info
        /// Always shown.
        case warning
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// Where notices go: one handler for the process, installed by the command line for the length of
/// a command. Without one, notices are dropped (library tests stay quiet).
public enum Notices {
    private static let handler = Mutex<(@Sendable (Notice) -> Void)?>(nil)

    /// Sets (or, with nil, removes) the handler and returns the one it replaced, so a command that
    /// routes notices its own way for a while can put the outer handler back.
    @discardableResult
    public static func install(_ newHandler: (@Sendable (Notice) -> Void)?) -> (@Sendable (Notice) -> Void)? {
        handler.withLock { current in
            let replaced = current
            current = newHandler
            return replaced
        }
    }

    public static func post(_ notice: Notice) {
        // Called outside the lock: a handler that posts again must not deadlock.
        let current = handler.withLock { $0 }
        current?(notice)
    }
}
