import BotsiBasics
import Dispatch
import Foundation
import Synchronization

/// What the connection layer does with a request once it is decided.
struct ReplyPlan {
    enum Action {
        case send([UInt8], closeAfter: Bool)
        case reset
        case stall
        /// Sent in full, then the connection closes; the bytes promise more than they hold.
        case truncated([UInt8])
        /// `head` at once, then `chunk` every interval until the client or `stop()` closes the connection.
        case trickle(head: [UInt8], chunk: [UInt8], intervalNanoseconds: UInt64)
    }

    var action: Action
    var delayNanoseconds: UInt64 = 0
    var inFlight: InFlightToken? = nil
}

/// The simulator's decisions and state, shared by every connection. All mutable state sits behind one
/// mutex that is held only while deciding, never while a socket is written.
final class SimulatorCore: Sendable {
    private struct State: Sendable {
        var store: RestoreStore
        var stats = StatsCounters()
        var faultRandom: SplitMix64
        var jitterRandom: SplitMix64
        var limiter: RateLimiter?
        var live: LiveTraffic?

        /// The live traffic due by `now` is spent from the limiter first.
        mutating func catchUpLive(to now: UInt64) {
            guard var limiter, var traffic = live else { return }
            traffic.catchUp(to: now, limiter: &limiter)
            self.limiter = limiter
            live = traffic
        }
    }

    private enum Authorization {
        case accepted, missing, unknown, bearer, forbidden
    }

    private enum Decision {
        case failure(status: Int, code: StaticString, message: String, retryAfter: Int?)
        case restored(body: [UInt8])
        case fault(SimulatorFault, partialBody: [UInt8])
        /// A scenario's fixed reply; `currentProfile` is filled only for the kind that sends it. Indirect, so
        /// the large payload does not widen the decision every other request hands back from the lock.
        indirect case fixed(SimulatorScenario.FixedReply, profileId: String, currentProfile: [UInt8])
    }

    let options: SimulatorOptions
    private let keys: [[UInt8]]
    private let forbiddenKeys: [[UInt8]]
    /// nil without fixed replies, so a request pays for no lookup unless the scenario has some.
    private let fixedReplies: [String: SimulatorScenario.FixedReply]?
    private let state: Mutex<State>
    /// Accepted connections whose descriptor is not yet closed; the server's cap is checked against it.
    let openConnections = Atomic<Int>(0)

    init(options: SimulatorOptions) {
        self.options = options
        keys = options.keys.map { Array($0.utf8) }
        forbiddenKeys = (options.scenario?.forbiddenKeys ?? []).map { Array($0.utf8) }
        let replies = options.scenario?.replies ?? []
        fixedReplies =
            replies.isEmpty
            ? nil
            : Dictionary(replies.map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { first, _ in first })
        let baseTime = Int64(Date().timeIntervalSince1970.rounded(.down))
        // Separate streams, so changing the jitter does not move which requests fault.
        state = Mutex(
            State(
                store: RestoreStore(scenario: options.scenario, baseTime: baseTime, forget: options.forget),
                stats: StatsCounters(countsPairs: !options.forget),
                faultRandom: SplitMix64(seed: options.seed),
                jitterRandom: SplitMix64(seed: options.seed ^ 0x6A09_E667_F3BC_C908),
                limiter: options.limitQuota.map {
                    RateLimiter(kind: options.limitKind, quota: $0, windowSeconds: options.limitWindowSeconds)
                },
                live: options.liveRate.map {
                    LiveTraffic(
                        rate: $0, startingAt: DispatchTime.now().uptimeNanoseconds,
                        seed: options.seed ^ 0xBB67_AE85_84CA_A73B)
                }))
    }

    func stats(listingPairs: Bool = true) -> SimulatorStats {
        let open = openConnections.load(ordering: .sequentiallyConsistent)
        return state.withLock { state in
            state.catchUpLive(to: DispatchTime.now().uptimeNanoseconds)
            return state.stats.snapshot(
                openConnections: open, listingPairs: listingPairs, live: state.live.map { ($0.requests, $0.refused) })
        }
    }

    /// The stats route needs no key, so by default it gives counts only: the pairs are customers' ids,
    /// listed only for `?pairs=1` with an accepted key.
    func statsReply(keepAlive: Bool, listingPairs: Bool, authorization: [UInt8]?) -> [UInt8] {
        if listingPairs, classify(authorization) != .accepted {
            let body = Responses.errorBody(
                "Listing pairs needs an accepted key in Authorization; without ?pairs=1 the stats give counts only",
                code: "unauthorized")
            return Responses.make(status: 401, body: body, keepAlive: keepAlive)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(stats(listingPairs: listingPairs))).map { Array($0) } ?? []
        return Responses.make(status: 200, body: body, keepAlive: keepAlive)
    }

    func recordAccepted(_ count: Int) {
        state.withLock { $0.stats.connectionsAccepted += count }
    }

    func recordAcceptPause(backingOff: Bool) {
        state.withLock { state in
            if backingOff {
                state.stats.acceptBackoffs += 1
            } else {
                state.stats.connectionLimitPauses += 1
            }
        }
    }

    func recordIdleTimeout() {
        state.withLock { $0.stats.idleTimeouts += 1 }
    }

    func finish(_ token: InFlightToken) {
        state.withLock { $0.stats.finish(token) }
    }

    /// Routes a parsed request: restores and stats are decided below; a wrong method or an unknown path
    /// is answered 405 or 404 after the same latency as a restore.
    func plan(_ head: HTTPRequestHead, body: [UInt8]) -> ReplyPlan {
        switch (head.route, head.method) {
        case (.restore, .post):
            return planRestore(authorization: head.authorization, body: body, keepAlive: head.keepAlive)
        case (.stats, .get):
            let reply = statsReply(
                keepAlive: head.keepAlive, listingPairs: head.listsPairs, authorization: head.authorization)
            return ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive))
        case (.restore, _), (.stats, _):
            let body = Responses.errorBody("Method \(head.methodName) is not allowed here", code: "method_not_allowed")
            let allow: StaticString = head.route.isRestore ? "Allow: POST\r\n" : "Allow: GET\r\n"
            let reply = Responses.make(status: 405, body: body, keepAlive: head.keepAlive, extraHeader: allow)
            return ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive), delayNanoseconds: drawDelay())
        case (.other(let path), _):
            // Not Botsi's `not_found`, its answer for an unknown profile: a wrong base URL must not
            // read as every profile unknown.
            let body = Responses.errorBody(
                "No route for \(head.methodName) \(path); check --base-url", code: "route_not_found")
            let reply = Responses.make(status: 404, body: body, keepAlive: head.keepAlive)
            return ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive), delayNanoseconds: drawDelay())
        }
    }

    /// Decides a restore request: checks, fault draw and restore under the lock; reply bytes after it.
    func planRestore(authorization: [UInt8]?, body: [UInt8], keepAlive: Bool) -> ReplyPlan {
        let authorizationResult = classify(authorization)
        let parsedBody = authorizationResult == .accepted ? RestoreBodyScanner.scan(body) : nil
        var pair: PairKey?
        if case .valid(let profileId, let transactionId)? = parsedBody {
            pair = PairKey(profileId: profileId, originalTransactionId: transactionId)
        }
        let token = InFlightToken(pair: pair)
        var limiterOutcome: RateLimiter.Outcome?
        let (decision, delay) = state.withLock { state in
            state.stats.begin(token)
            let decision = decide(authorizationResult, parsedBody, pair, limiterOutcome: &limiterOutcome, state: &state)
            let key: String
            switch decision {
            case .failure(let status, _, _, _): key = String(status)
            case .restored:
                key = "200"
                if let pair { state.stats.pairs[pair]?.successes += 1 }
            case .fault(let fault, _):
                key = fault.rawValue
                state.stats.faultsInjected[fault.rawValue, default: 0] += 1
            case .fixed(let reply, _, _):
                key = Self.statsKey(reply)
            }
            state.stats.statusCounts[key, default: 0] += 1
            return (decision, drawDelay(&state.jitterRandom))
        }
        return ReplyPlan(
            action: action(for: decision, keepAlive: keepAlive, limiterOutcome: limiterOutcome),
            delayNanoseconds: delay, inFlight: token)
    }

    /// Delay for replies that are not restores (unknown paths, wrong methods): the same latency model.
    private func drawDelay() -> UInt64 {
        state.withLock { drawDelay(&$0.jitterRandom) }
    }

    /// `limiterOutcome` is set when the request reached the limiter.
    private func decide(
        _ authorization: Authorization, _ body: RestoreBody?, _ pair: PairKey?,
        limiterOutcome: inout RateLimiter.Outcome?, state: inout State
    ) -> Decision {
        switch authorization {
        case .missing:
            return .failure(status: 401, code: "unauthorized", message: "Missing Authorization header", retryAfter: nil)
        case .unknown:
            return .failure(status: 401, code: "unauthorized", message: "Unknown API key", retryAfter: nil)
        case .bearer:
            return .failure(
                status: 401, code: "unauthorized", message: "Send the API key without a Bearer prefix", retryAfter: nil)
        case .forbidden:
            return .failure(
                status: 403, code: "forbidden", message: "This API key may not restore purchases for this app",
                retryAfter: nil)
        case .accepted:
            break
        }
        if options.mode == .noIOSSettings {
            return .failure(status: 400, code: "bad_request", message: "No ios settings found", retryAfter: nil)
        }
        guard let pair else {
            var message = "Request body is not valid JSON"
            if case .invalid(let reason)? = body { message = reason }
            return .failure(status: 400, code: "bad_request", message: message, retryAfter: nil)
        }
        // The clock is read under the lock, so the limiter sees times in the order it decides them.
        let now = DispatchTime.now().uptimeNanoseconds
        state.catchUpLive(to: now)
        if let outcome = state.limiter?.admit(now: now) {
            limiterOutcome = outcome
        }
        if let limiterOutcome, !limiterOutcome.admitted {
            state.stats.rateLimited += 1
            return .failure(
                status: 429, code: "rate_limited", message: "Rate limit exceeded, slow down",
                retryAfter: options.retryAfterSeconds)
        }
        if let fixedReplies, let reply = fixedReplies[pair.originalTransactionId] {
            let profile = reply.kind == .hugeHeaders ? state.store.currentReply(profileId: pair.profileId) : []
            return .fixed(reply, profileId: pair.profileId, currentProfile: profile)
        }
        if options.faultRate > 0, !options.faults.isEmpty, state.faultRandom.nextUnit() < options.faultRate {
            let fault = options.faults[state.faultRandom.nextIndex(below: options.faults.count)]
            let partial = fault == .truncated ? state.store.currentReply(profileId: pair.profileId) : []
            return .fault(fault, partialBody: partial)
        }
        switch state.store.restore(profileId: pair.profileId, originalTransactionId: pair.originalTransactionId) {
        case .restored(let restoreCase, let body):
            state.stats.restoreCases[restoreCase.rawValue, default: 0] += 1
            return .restored(body: body)
        case .profileNotFound:
            return .failure(
                status: 404, code: "not_found", message: "Profile not found: \(pair.profileId)", retryAfter: nil)
        case .nothingToRestore:
            return .failure(
                status: 404, code: "nothing_to_restore",
                message: "Apple has no subscription for originalTransactionId: \(pair.originalTransactionId)",
                retryAfter: nil)
        }
    }

    private func drawDelay(_ random: inout SplitMix64) -> UInt64 {
        var milliseconds = options.latencyMilliseconds
        if options.jitterMilliseconds > 0 { milliseconds += random.nextUnit() * options.jitterMilliseconds }
        return milliseconds > 0 ? UInt64(milliseconds * 1_000_000) : 0
    }

    private func classify(_ authorization: [UInt8]?) -> Authorization {
        guard let authorization, !authorization.isEmpty else { return .missing }
        let bearer: [UInt8] = Array("bearer ".utf8)
        if authorization.count >= bearer.count,
            zip(authorization.prefix(bearer.count), bearer).allSatisfy({ $0 | 0x20 == $1 })
        {
            return .bearer
        }
        if keys.contains(authorization) { return .accepted }
        return forbiddenKeys.contains(authorization) ? .forbidden : .unknown
    }

    /// The HTTP status for fixed replies that carry one of their own; the kind for the hostile 200s.
    private static func statsKey(_ reply: SimulatorScenario.FixedReply) -> String {
        switch reply.kind {
        case .error, .html, .redirect: String(reply.effectiveStatus)
        case .hugeBody, .invalidJSON, .okFalse, .neverEndingBody, .hugeHeaders: reply.kind.rawValue
        }
    }

    /// The rate-limit fields go on the replies the limiter decided: the restore's own outcome and the
    /// limiter's 429. Faults and fixed replies stand for something else answering, so they carry none.
    private func rateLimitHeaders(_ outcome: RateLimiter.Outcome?) -> [UInt8] {
        guard let style = options.rateLimitHeaders, let outcome, let quota = options.limitQuota else { return [] }
        return ReplyHeaders.rateLimit(
            style, quota: quota, windowSeconds: options.limitWindowSeconds, outcome: outcome)
    }

    private func retryAfter(_ seconds: Int) -> [UInt8] {
        ReplyHeaders.retryAfter(seconds, format: options.retryAfterFormat)
    }

    private func action(for decision: Decision, keepAlive: Bool, limiterOutcome: RateLimiter.Outcome?)
        -> ReplyPlan.Action
    {
        switch decision {
        case .failure(let status, let code, let message, let retryAfterSeconds):
            let body = Responses.errorBody(message, code: code)
            let headers = (retryAfterSeconds.map(retryAfter) ?? []) + rateLimitHeaders(limiterOutcome)
            return .send(
                Responses.make(status: status, body: body, keepAlive: keepAlive, headers: headers),
                closeAfter: !keepAlive)
        case .restored(let body):
            return .send(
                Responses.make(
                    status: 200, body: body, keepAlive: keepAlive, headers: rateLimitHeaders(limiterOutcome)),
                closeAfter: !keepAlive)
        case .fault(.tooManyRequests, _):
            let body = Responses.errorBody("Too many requests, retry later", code: "rate_limited")
            return .send(
                Responses.make(
                    status: 429, body: body, keepAlive: keepAlive, headers: retryAfter(options.retryAfterSeconds)),
                closeAfter: !keepAlive)
        case .fault(.internalError, _):
            let body = Responses.errorBody("Internal server error", code: "internal_error")
            return .send(Responses.make(status: 500, body: body, keepAlive: keepAlive), closeAfter: !keepAlive)
        case .fault(.badGateway, _):
            return .send(
                Responses.make(status: 502, contentType: .html, body: Responses.badGatewayPage, keepAlive: keepAlive),
                closeAfter: !keepAlive)
        case .fault(.unavailable, _):
            return .send(
                Responses.make(
                    status: 503, contentType: .none, body: [], keepAlive: keepAlive,
                    headers: retryAfter(options.retryAfterSeconds)),
                closeAfter: !keepAlive)
        case .fault(.reset, _):
            return .reset
        case .fault(.stall, _):
            return .stall
        case .fixed(let reply, let profileId, let currentProfile):
            return FixedReplyRenderer.action(
                for: reply, profileId: profileId, currentProfile: currentProfile, keepAlive: keepAlive,
                retryAfterFormat: options.retryAfterFormat)
        case .fault(.truncated, let full):
            let sent = Array(full.prefix(max(1, full.count / 2)))
            return .truncated(
                Responses.make(status: 200, body: sent, keepAlive: true, declaredLength: full.count))
        }
    }
}
