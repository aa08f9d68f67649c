/// What the simulator saw, for tests and rehearsals. All counts cover the restore route only.
///
/// `Simulator.stats()` lists every pair. `GET /__simulator/stats` needs no key, so it gives counts only
/// (no `pairs` key in its JSON); `?pairs=1` with an accepted key in `Authorization` adds the pairs.
public struct SimulatorStats: Sendable, Codable {
    public struct Pair: Sendable, Codable {
        public let profileId: String
        public let originalTransactionId: String
        /// Authorized, well-formed requests for the pair, whatever their outcome.
        public let requests: Int
        /// 200 replies for the pair.
        public let successes: Int
    }

    /// Restore requests received (all outcomes).
    public let requests: Int
    /// Sorted by profileId, then originalTransactionId; empty when the stats were taken without pairs.
    public var pairs: [Pair] { listedPairs ?? [] }
    /// Distinct (profileId, originalTransactionId) pairs seen, listed or not.
    public let pairCount: Int
    /// nil (and absent from the JSON) when the pairs were not asked for.
    let listedPairs: [Pair]?
    /// Most restore requests in flight at once (from request fully read until its reply starts going out).
    public let maxInFlight: Int
    public let maxInFlightPerProfile: Int
    public let maxInFlightPerTransaction: Int
    /// "200", "404", ... and "reset", "stall", "truncated".
    public let statusCounts: [String: Int]
    /// Keyed by `SimulatorFault.rawValue`.
    public let faultsInjected: [String: Int]
    public let connectionsAccepted: Int
    /// Which of the four restore cases the 200 replies took: alreadyOwned, linked, attached, rebuilt.
    public let restoreCases: [String: Int]
    /// 429 replies caused by `limitRate` (not by injected faults).
    public let rateLimited: Int
    /// With `liveRate`: the live requests the simulator spent from its limiter, and those it refused.
    public let liveRequests: Int?
    public let liveRefused: Int?
    /// Restore requests in flight when the stats were taken.
    public let inFlight: Int
    /// Connections closed because they sat idle (or sent a request too slowly) for `idleTimeoutSeconds`.
    public let idleTimeouts: Int
    /// Connections open now (any route).
    public let openConnections: Int
    /// Times accepting paused because `maxConnections` were open.
    public let connectionLimitPauses: Int
    /// Times `accept` failed for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) and
    /// accepting paused for a back-off instead of retrying at once.
    public let acceptBackoffs: Int

    private enum CodingKeys: String, CodingKey {
        case requests, pairCount, maxInFlight, maxInFlightPerProfile, maxInFlightPerTransaction, statusCounts
        case faultsInjected, connectionsAccepted, restoreCases, rateLimited, liveRequests, liveRefused, inFlight
        case idleTimeouts
        case openConnections, connectionLimitPauses, acceptBackoffs
        case listedPairs = "pairs"
    }
}

struct PairKey: Hashable, Sendable {
    let profileId: String
    let originalTransactionId: String
}

/// What a request in flight holds, so finishing it decrements exactly what starting it incremented.
struct InFlightToken: Sendable {
    let pair: PairKey?
}

struct StatsCounters: Sendable {
    /// false with `forget`: no per-pair counts (`pairCount` stays 0).
    var countsPairs = true
    var requests = 0
    var pairs: [PairKey: (requests: Int, successes: Int)] = [:]
    var inFlight = 0
    var maxInFlight = 0
    var inFlightByProfile: [String: Int] = [:]
    var inFlightByTransaction: [String: Int] = [:]
    var maxInFlightPerProfile = 0
    var maxInFlightPerTransaction = 0
    var statusCounts: [String: Int] = [:]
    var faultsInjected: [String: Int] = [:]
    var connectionsAccepted = 0
    var restoreCases: [String: Int] = [:]
    var rateLimited = 0
    var idleTimeouts = 0
    var connectionLimitPauses = 0
    var acceptBackoffs = 0

    mutating func begin(_ token: InFlightToken) {
        requests += 1
        inFlight += 1
        maxInFlight = max(maxInFlight, inFlight)
        guard let pair = token.pair else { return }
        if countsPairs { pairs[pair, default: (0, 0)].requests += 1 }
        let forProfile = inFlightByProfile[pair.profileId, default: 0] + 1
        inFlightByProfile[pair.profileId] = forProfile
        maxInFlightPerProfile = max(maxInFlightPerProfile, forProfile)
        let forTransaction = inFlightByTransaction[pair.originalTransactionId, default: 0] + 1
        inFlightByTransaction[pair.originalTransactionId] = forTransaction
        maxInFlightPerTransaction = max(maxInFlightPerTransaction, forTransaction)
    }

    mutating func finish(_ token: InFlightToken) {
        inFlight -= 1
        guard let pair = token.pair else { return }
        Self.decrement(&inFlightByProfile, pair.profileId)
        Self.decrement(&inFlightByTransaction, pair.originalTransactionId)
    }

    /// Drops zero entries so the maps stay as small as what is in flight.
    private static func decrement(_ counts: inout [String: Int], _ key: String) {
        guard let count = counts[key] else { return }
        counts[key] = count > 1 ? count - 1 : nil
    }

    func snapshot(openConnections: Int, listingPairs: Bool, live: (requests: Int, refused: Int)?) -> SimulatorStats {
        var listed: [SimulatorStats.Pair]?
        if listingPairs {
            let sortedPairs = pairs.sorted { left, right in
                (left.key.profileId, left.key.originalTransactionId) < (
                    right.key.profileId, right.key.originalTransactionId
                )
            }
            listed = sortedPairs.map { key, counts in
                SimulatorStats.Pair(
                    profileId: key.profileId, originalTransactionId: key.originalTransactionId,
                    requests: counts.requests, successes: counts.successes)
            }
        }
        return SimulatorStats(
            requests: requests, pairCount: pairs.count, listedPairs: listed,
            maxInFlight: maxInFlight, maxInFlightPerProfile: maxInFlightPerProfile,
            maxInFlightPerTransaction: maxInFlightPerTransaction, statusCounts: statusCounts,
            faultsInjected: faultsInjected, connectionsAccepted: connectionsAccepted, restoreCases: restoreCases,
            rateLimited: rateLimited, liveRequests: live?.requests, liveRefused: live?.refused, inFlight: inFlight,
            idleTimeouts: idleTimeouts,
            openConnections: openConnections, connectionLimitPauses: connectionLimitPauses,
            acceptBackoffs: acceptBackoffs)
    }
}
