import Dispatch
import Foundation
import Glibc
import Synchronization

/// A fault the simulator injects instead of the real reply. Raw values are what `--faults` accepts.
public enum SimulatorFault: String, Sendable, CaseIterable {
    /// 429 with `Retry-After` and JSON code `rate_limited`.
    case tooManyRequests = "429"
    /// 500 with JSON code `internal_error`.
    case internalError = "500"
    /// 502 with an nginx-style HTML body.
    case badGateway = "502"
    /// 503 with an empty body and `Retry-After`.
    case unavailable = "503"
    /// The connection is reset (RST) without a reply.
    case reset
    /// No reply for `stallSeconds`, then the connection closes.
    case stall
    /// A 200 whose `Content-Length` promises more than is sent, then the connection closes.
    case truncated
}

public enum SimulatorMode: String, Sendable {
    case normal
    /// Every authorized restore answers 400 `No ios settings found`, as Botsi does for an app whose
    /// App Store connection is not set up.
    case noIOSSettings = "no-ios-settings"
}

public struct SimulatorOptions: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port.
    public var port: Int = 0
    public var latencyMilliseconds: Double = 0
    /// Uniform extra delay in 0..<jitter on top of the latency.
    public var jitterMilliseconds: Double = 0
    /// Probability per restore request, 0...1.
    public var faultRate: Double = 0
    public var faults: [SimulatorFault] = SimulatorFault.allCases
    /// Sent with 429 and 503.
    public var retryAfterSeconds: Int = 1
    /// How long a stall holds the reply (longer than any sane client timeout) before closing.
    public var stallSeconds: Double = 300
    public var seed: UInt64 = 1
    public var scenario: SimulatorScenario? = nil
    public var mode: SimulatorMode = .normal
    /// Accepted `Authorization` values.
    public var keys: [String] = [Simulator.defaultKey]
    /// The limiter (`RateLimiter`): at most `limitRate × limitWindowSeconds` restore requests are admitted
    /// in any window of `limitWindowSeconds`; the others get 429 + `Retry-After`. The product must be a
    /// whole number from 1 to 1,000,000 (`limitQuota`).
    public var limitRate: Double? = nil
    /// The limiter's window in whole seconds.
    public var limitWindowSeconds: Int = 1
    /// How the limiter counts: a sliding log, fixed windows, or a token bucket (`RateLimiterKind`).
    public var limitKind: RateLimiterKind = .sliding
    /// The app's own traffic: this many requests per second, evenly spaced from the start, spent from
    /// the limiter by the simulator itself (needs `limitRate`); `stats.liveRequests`/`liveRefused`
    /// count them. Several runs against one simulator already share its limit with each other.
    public var liveRate: Double? = nil
    /// Rate-limit header fields on every reply the limiter decided (needs `limitRate`).
    public var rateLimitHeaders: RateLimitHeaderStyle? = nil
    /// How every `Retry-After` is written; the wait itself (`retryAfterSeconds`, or a fixed reply's own) is
    /// the same in every format.
    public var retryAfterFormat: RetryAfterFormat = .seconds
    /// A connection waiting for a request (kept alive after a reply, or with a request not yet complete) or
    /// for a client to take a reply is closed after this long. Time a reply is held back (latency, a stall,
    /// a never-ending body) does not count.
    public var idleTimeoutSeconds: Double = 60
    /// Connections open at once at most. At the cap the server stops accepting (new connections wait in
    /// the kernel's backlog) until one closes.
    public var maxConnections: Int = 1024
    /// Keep no profile, purchase or per-pair count: every restore is answered as the first of its pair
    /// ("rebuilt"). Remembering costs about 2.6 KB a pair, too much for runs of millions of rows.
    public var forget = false

    public init() {}

    /// `limitRate × limitWindowSeconds`: the requests the limiter admits per window; nil without a limit,
    /// or when that is not a whole number from 1 to 1,000,000.
    public var limitQuota: Int? {
        guard let limitRate, limitRate > 0, limitRate.isFinite, limitWindowSeconds >= 1 else { return nil }
        let product = limitRate * Double(limitWindowSeconds)
        let whole = product.rounded()
        guard abs(product - whole) <= 1e-9 * max(1, whole), whole >= 1, whole <= Double(RateLimiter.largestQuota)
        else { return nil }
        return Int(whole)
    }

    /// What to tell the person starting a simulator bound beyond loopback, or nil for a loopback host.
    /// The simulator has no TLS, accepts rehearsal keys and answers its stats route without a key.
    public var exposureWarning: String? {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        var address = in_addr()
        guard inet_pton(AF_INET, numeric, &address) == 1 else { return nil }
        if UInt32(bigEndian: address.s_addr) >> 24 == 127 { return nil }
        let reach =
            address.s_addr == 0
            ? "every interface (0.0.0.0): any machine that can reach this one"
            : "\(host), not loopback: any machine that can reach that address"
        return "warning: the simulator listens on \(reach) can send it requests and read its counts, over plain "
            + "HTTP; use --host 127.0.0.1 unless another machine must reach it, and never give it a real key"
    }
}

/// Why the simulator could not start.
public struct SimulatorError: Error, CustomStringConvertible, LocalizedError {
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}

/// A local stand-in for Botsi's `POST /v2/purchases/apple-store/restore`, over real TCP.
///
/// Order of checks for a restore request: `Authorization` (401), mode (400 `No ios settings found` for
/// every authorized request), body (400 `bad_request`), `limitRate` (429), injected fault, then the restore itself (404
/// `not_found`, 404 `nothing_to_restore` or 200). So faults are drawn only for authorized, well-formed
/// requests, one draw per such request in arrival order: the same seed and the same request order give
/// the same faults. A faulted request changes no restore state.
///
/// Without a scenario the outcome is fixed by the ids (a test can predict every row):
/// - a `profileId` starting with `unknown` does not exist (404 `not_found`); every other profile exists;
/// - the last digit of `originalTransactionId` decides the purchase:
///   `0` Apple has no subscription (404 `nothing_to_restore`; also any id not ending in a digit);
///   `1` Botsi has a record with no profile (attached on restore), `premium_monthly`, active;
///   `2 4 6 8` never seen by Botsi (rebuilt from Apple), `premium_annual`, active for a year, renewing;
///   `3` `premium_monthly` in a billing-issue grace period (state `billing-issue`);
///   `5` `premium_annual` expired 30 days ago (`isActive` false, state `expired`);
///   `7` `premium_weekly` free trial (state `active-trial`);
///   `9` `premium_lifetime`, a lifetime purchase (in `accessLevels` and `nonSubscriptions`).
/// Once restored, a transaction belongs to the profile that restored it. The owner restoring again gets
/// its profile as it is; another profile restoring it receives the same access and the two are linked,
/// while the owner keeps its access.
public final class Simulator: Sendable {
    public static let defaultKey = "sim_secret_key"

    private enum Phase {
        case idle
        case running(Server, port: Int)
        case stopped
    }

    private let options: SimulatorOptions
    private let core: SimulatorCore
    private let phase = Mutex<Phase>(.idle)

    public init(options: SimulatorOptions) {
        self.options = options
        core = SimulatorCore(options: options)
    }

    deinit {
        stop()
    }

    /// Binds and listens; returns the port (useful with port 0). Calling it again while running returns
    /// the same port; after `stop()` it throws.
    public func start() throws -> Int {
        try phase.withLock { phase in
            switch phase {
            case .running(_, let port): return port
            case .stopped: throw SimulatorError("the simulator was stopped and cannot be restarted")
            case .idle: break
            }
            try options.validate()
            let server = Server(core: core)
            let port = try server.start(host: options.host, port: options.port)
            phase = .running(server, port: port)
            return port
        }
    }

    public var port: Int {
        phase.withLock { phase in
            if case .running(_, let port) = phase { return port }
            return 0
        }
    }

    public var baseURL: String {
        let host = options.host == "0.0.0.0" || options.host == "localhost" ? "127.0.0.1" : options.host
        return "http://\(host):\(port)"
    }

    public func stats() -> SimulatorStats {
        core.stats()
    }

    /// Closes the listener and every connection (stalled ones included) and waits until their sockets
    /// are closed. Idempotent. Must not be called from the simulator's own queue.
    public func stop() {
        let server: Server? = phase.withLock { phase in
            defer { phase = .stopped }
            if case .running(let server, _) = phase { return server }
            return nil
        }
        server?.stop()
    }
}

extension SimulatorOptions {
    /// Throws a `SimulatorError` naming the first option that cannot work; `Simulator.start()` calls it, and
    /// a command line can call it first to report bad options as usage errors.
    public func validate() throws(SimulatorError) {
        let options = self
        if let scenario = options.scenario {
            do {
                try scenario.validate()
            } catch let error as SimulatorScenarioError {
                throw SimulatorError(error.message)
            } catch {
                throw SimulatorError("\(error)")
            }
            if !Set(scenario.forbiddenKeys).isDisjoint(with: options.keys) {
                throw SimulatorError("a key cannot be both accepted and in the scenario's forbiddenKeys")
            }
        }
        guard !options.forget || options.scenario == nil else {
            throw SimulatorError("--forget cannot be used with a scenario: a scenario's world is remembered state")
        }
        guard (0...65_535).contains(options.port) else { throw SimulatorError("port must be in 0...65535") }
        guard options.faultRate >= 0, options.faultRate <= 1 else {
            throw SimulatorError("fault rate must be between 0 and 1")
        }
        guard options.faultRate == 0 || !options.faults.isEmpty else {
            throw SimulatorError("a fault rate above 0 needs at least one fault kind")
        }
        guard options.latencyMilliseconds >= 0, options.jitterMilliseconds >= 0, options.stallSeconds >= 0 else {
            throw SimulatorError("latency, jitter and stall time must not be negative")
        }
        guard options.idleTimeoutSeconds > 0, options.idleTimeoutSeconds <= 86_400 else {
            throw SimulatorError("the idle timeout must be above 0 and at most a day")
        }
        guard options.maxConnections >= 1 else { throw SimulatorError("the connection cap must be at least 1") }
        guard options.retryAfterSeconds >= 0 else { throw SimulatorError("retry-after must not be negative") }
        guard !options.keys.isEmpty, options.keys.allSatisfy({ !$0.isEmpty }) else {
            throw SimulatorError("at least one non-empty key is needed")
        }
        if let limit = options.limitRate {
            guard limit > 0, limit.isFinite else { throw SimulatorError("limit rate must be above 0") }
            guard (1...86_400).contains(options.limitWindowSeconds) else {
                throw SimulatorError("the limit window must be from 1 to 86400 seconds")
            }
            guard options.limitQuota != nil else {
                let product = limit * Double(options.limitWindowSeconds)
                throw SimulatorError(
                    "limit rate × window must be a whole number of requests from 1 to 1000000, not \(limit) × "
                        + "\(options.limitWindowSeconds) s = \(product); choose a window that makes it one "
                        + "(e.g. 2.5/s over 2 s admits 5 per 2 s)")
            }
            if let live = options.liveRate {
                guard live > 0, live <= limit, live.isFinite else {
                    throw SimulatorError(
                        "the live rate spends part of the limit: it must be above 0 and at most the limit rate "
                            + "(\(limit)/s), not \(live)")
                }
            }
        } else if options.rateLimitHeaders != nil {
            throw SimulatorError("rate-limit headers describe the limiter: set a limit rate too")
        } else if options.liveRate != nil {
            throw SimulatorError("live traffic spends the limiter's quota: set a limit rate too")
        }
    }
}
