import BotsiBasics
import BotsiSimulator
import BotsiTestSupport
import Foundation

/// A definitive reply as the journal records it: the row's final status and code.
struct Answer: Equatable, CustomStringConvertible {
    let status: String
    let code: String?

    static let restored = Answer(status: "restored", code: nil)
    static let nothingToRestore = Answer(status: "nothing_to_restore", code: "nothing_to_restore")
    static let profileNotFound = Answer(status: "profile_not_found", code: "not_found")
    static let rejected = Answer(status: "rejected", code: "bad_request")
    static let failed = Answer(status: "failed", code: "unprocessable")

    var description: String { "\(status)/\(code ?? "-")" }
}

/// The fixed universe of pairs every sequence draws its "days" from, and what the simulated Botsi
/// answers for each. Generation 0 is the first world; in generation 1 Apple has learned two
/// transactions it did not know (nothing_to_restore becomes restored) and two that failed with 422
/// now restore, so refreshes and `--retry-failed` can turn a final row into another final row.
enum ModelUniverse {
    static let base: UInt64 = 3_000_000_000_000_000

    private static func transaction(_ offset: UInt64) -> String { String(base + offset) }

    /// 64 pairs over 16 profiles (4 each, two of them side by side, as an export sorted by user
    /// has them: the ordering rule matters), three transactions shared with a second profile (a
    /// linked restore), and four rows of profiles Botsi does not have.
    static let pairs: [Pair] = {
        var pairs = (0..<64).map { Pair("mb-\(($0 / 2) % 16)", transaction(UInt64($0))) }
        pairs.append(Pair("mb-9", transaction(3)))
        pairs.append(Pair("mb-12", transaction(18)))
        pairs.append(Pair("mb-1", transaction(40)))
        pairs.append(Pair("unknown-1", transaction(101)))
        pairs.append(Pair("unknown-2", transaction(102)))
        pairs.append(Pair("unknown-1", transaction(103)))
        pairs.append(Pair("unknown-3", transaction(104)))
        return pairs
    }()

    /// Server-side 400 bad_request (the row is `rejected`), in every generation.
    static let rejectedTransactions: Set<String> = [transaction(5), transaction(45)]
    /// 422 in generation 0 (`failed`), restored by the last-digit rule from generation 1 on.
    static let failingTransactions: Set<String> = [transaction(7), transaction(13), transaction(37)]
    /// End in 0 (nothing to restore) in generation 0; Apple knows them from generation 1 on.
    static let lateTransactions: Set<String> = [transaction(10), transaction(20), transaction(50)]

    /// `mb-4/+12` for the pair of profile mb-4 and transaction base + 12, as step lists print it.
    static func short(_ pair: Pair) -> String {
        guard let transaction = UInt64(pair.transactionId), transaction >= base else { return pair.description }
        return "\(pair.profileId)/+\(transaction - base)"
    }

    static let profiles: [String] = Array(Set(pairs.map(\.profileId).filter { !$0.hasPrefix("unknown") })).sorted()

    /// The simulator's answer for a pair when the key is accepted and the app is set up.
    static func answer(_ pair: Pair, generation: Int) -> Answer {
        let transaction = pair.transactionId
        if rejectedTransactions.contains(transaction) { return .rejected }
        if generation == 0 && failingTransactions.contains(transaction) { return .failed }
        if pair.profileId.hasPrefix("unknown") { return .profileNotFound }
        if generation >= 1 && lateTransactions.contains(transaction) { return .restored }
        return transaction.hasSuffix("0") ? .nothingToRestore : .restored
    }

    /// The scenario that makes the simulator answer as `answer(_:generation:)` says.
    static func scenario(generation: Int, forbiddenKey: String) throws -> SimulatorScenario {
        var replies = rejectedTransactions.sorted().map {
            #"{"originalTransactionId": "\#($0)", "status": 400, "code": "bad_request", "message": "originalTransactionId is not valid for this app"}"#
        }
        if generation == 0 {
            replies += failingTransactions.sorted().map {
                #"{"originalTransactionId": "\#($0)", "status": 422, "code": "unprocessable", "message": "cannot restore this purchase now"}"#
            }
        }
        let transactions =
            generation >= 1
            ? lateTransactions.sorted().map { #"{"originalTransactionId": "\#($0)", "status": "active"}"# } : []
        let json = """
            {"createUnknownProfiles": false, "unlistedTransactions": "rule",
             "profiles": [\(profiles.map { "\"\($0)\"" }.joined(separator: ", "))],
             "transactions": [\(transactions.joined(separator: ", "))],
             "replies": [\(replies.joined(separator: ", "))],
             "forbiddenKeys": ["\(forbiddenKey)"]}
            """
        return try SimulatorScenario.parse(Data(json.utf8), source: "model world \(generation)")
    }
}

/// What the simulated Botsi is like during one step.
struct World: CustomStringConvertible {
    enum Key: String {
        case accepted
        /// Not a key Botsi knows: 401.
        case unknown
        /// A key Botsi knows but does not allow to restore: 403.
        case forbidden
    }

    var generation = 0
    var key = Key.accepted
    /// Every authorized request answers 400 "No ios settings found".
    var noIOSSettings = false
    var faultRate = 0.0
    var faults: [SimulatorFault] = []
    var latencyMilliseconds = 0.0
    var jitterMilliseconds = 0.0

    /// Whether a sent row can get a definitive reply at all.
    var answers: Bool { key == .accepted && !noIOSSettings }

    var description: String {
        var parts = ["generation \(generation)"]
        if key != .accepted { parts.append("key \(key.rawValue)") }
        if noIOSSettings { parts.append("no-ios") }
        if faultRate > 0 {
            parts.append("faults \(Int(faultRate * 100))% \(faults.map(\.rawValue).joined(separator: ","))")
        }
        if latencyMilliseconds > 0 { parts.append("latency \(Int(latencyMilliseconds))+\(Int(jitterMilliseconds))ms") }
        return parts.joined(separator: ", ")
    }

    /// The secrets of one sequence: random, so that finding one in an output is never a coincidence.
    struct Keys {
        let accepted: String
        let unknown: String
        let forbidden: String

        init(seed: UInt64) {
            var random = SplitMix64(seed: seed ^ 0x5EC2_E7)
            func key(_ name: String) -> String {
                "sk_model_\(name)_" + String(random.next(), radix: 36) + String(random.next(), radix: 36)
            }
            accepted = key("live")
            unknown = key("stale")
            forbidden = key("readonly")
        }

        var all: [String] { [accepted, unknown, forbidden] }

        func key(for world: World) -> String {
            switch world.key {
            case .accepted: return accepted
            case .unknown: return unknown
            case .forbidden: return forbidden
            }
        }
    }

    func makeSimulator(keys: Keys, seed: UInt64) throws -> Simulator {
        let scenario = try ModelUniverse.scenario(generation: generation, forbiddenKey: keys.forbidden)
        return try startSimulator { options in
            options.keys = [keys.accepted]
            options.scenario = scenario
            options.mode = noIOSSettings ? .noIOSSettings : .normal
            options.faultRate = faultRate
            options.faults = faults.isEmpty ? SimulatorFault.allCases : faults
            options.retryAfterSeconds = 0
            options.stallSeconds = 0.2
            options.latencyMilliseconds = latencyMilliseconds
            options.jitterMilliseconds = jitterMilliseconds
            options.seed = seed
        }
    }
}
