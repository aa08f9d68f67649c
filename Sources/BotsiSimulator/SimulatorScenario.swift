import Foundation

/// Which profiles and purchases exist, for a rehearsal whose outcomes are chosen row by row.
///
/// File format (JSON; see `samples/scenario.json` and `docs/simulator.md`):
/// ```json
/// {
///   "createUnknownProfiles": false,
///   "unlistedTransactions": "nothing_to_restore",
///   "profiles": ["p-1", {"profileId": "p-2", "appUserId": "user-2"}],
///   "transactions": [
///     {"originalTransactionId": "2000000000000001", "productId": "premium_annual", "status": "active",
///      "owner": "p-1"},
///     {"originalTransactionId": "2000000000000002", "botsiHasRecord": true},
///     {"originalTransactionId": "2000000000000003", "appleKnows": false}
///   ]
/// }
/// ```
/// Only listed profiles exist unless `createUnknownProfiles` is true. A transaction that is not listed
/// is unknown to Apple (`nothing_to_restore`) unless `unlistedTransactions` is `"rule"`, in which case
/// the deterministic rule of the simulator (see `Simulator`) decides.
public struct SimulatorScenario: Sendable, Codable {
    public enum UnlistedTransactions: String, Sendable, Codable {
        case nothingToRestore = "nothing_to_restore"
        case rule
    }

    /// What Apple reports for the purchase; each status fixes the entitlement's flags and default expiry.
    public enum Status: String, Sendable, Codable, CaseIterable {
        case active, trial, cancelled, expired, lifetime
        case billingIssue = "billing_issue"
    }

    public struct Profile: Sendable, Codable {
        public var profileId: String
        public var appUserId: String?

        public init(profileId: String, appUserId: String? = nil) {
            self.profileId = profileId
            self.appUserId = appUserId
        }

        private enum CodingKeys: String, CodingKey {
            case profileId, appUserId
        }

        /// Accepts a bare string as shorthand for a profile without an app user id.
        public init(from decoder: any Decoder) throws {
            if let single = try? decoder.singleValueContainer(), let profileId = try? single.decode(String.self) {
                self.init(profileId: profileId)
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                profileId: try container.decode(String.self, forKey: .profileId),
                appUserId: try container.decodeIfPresent(String.self, forKey: .appUserId))
        }
    }

    public struct Transaction: Sendable, Codable {
        public var originalTransactionId: String
        public var productId: String
        public var status: Status
        /// Days from the simulator's start to expiry (negative: already expired). Default depends on
        /// status and product: a year for annual products, a month otherwise, 3 days for a trial.
        public var expiresInDays: Double?
        /// Revenue the purchase adds to its owner's `totalRevenueUsd`; default from the product.
        public var priceUsd: Double?
        public var accessLevel: String
        /// false: Apple has no subscription for it, so a restore answers 404 `nothing_to_restore`.
        public var appleKnows: Bool
        /// The profile that owns it already (must be listed in `profiles`).
        public var owner: String?
        /// true without an owner: Botsi has a record with no profile attached. Defaults to `owner != nil`.
        public var botsiHasRecord: Bool?

        public init(
            originalTransactionId: String, productId: String = "premium_annual", status: Status = .active,
            expiresInDays: Double? = nil, priceUsd: Double? = nil, accessLevel: String = "premium",
            appleKnows: Bool = true, owner: String? = nil, botsiHasRecord: Bool? = nil
        ) {
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.status = status
            self.expiresInDays = expiresInDays
            self.priceUsd = priceUsd
            self.accessLevel = accessLevel
            self.appleKnows = appleKnows
            self.owner = owner
            self.botsiHasRecord = botsiHasRecord
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case originalTransactionId, productId, status, expiresInDays, priceUsd, accessLevel, appleKnows, owner
            case botsiHasRecord
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                originalTransactionId: try container.decode(String.self, forKey: .originalTransactionId),
                productId: try container.decodeIfPresent(String.self, forKey: .productId) ?? "premium_annual",
                status: try container.decodeIfPresent(Status.self, forKey: .status) ?? .active,
                expiresInDays: try container.decodeIfPresent(Double.self, forKey: .expiresInDays),
                priceUsd: try container.decodeIfPresent(Double.self, forKey: .priceUsd),
                accessLevel: try container.decodeIfPresent(String.self, forKey: .accessLevel) ?? "premium",
                appleKnows: try container.decodeIfPresent(Bool.self, forKey: .appleKnows) ?? true,
                owner: try container.decodeIfPresent(String.self, forKey: .owner),
                botsiHasRecord: try container.decodeIfPresent(Bool.self, forKey: .botsiHasRecord))
        }

        static let knownKeys = Set(CodingKeys.allCases.map(\.stringValue))
    }

    public var createUnknownProfiles: Bool
    public var unlistedTransactions: UnlistedTransactions
    public var profiles: [Profile]
    public var transactions: [Transaction]
    /// Fixed replies, served instead of the restore for their transaction (see `FixedReply`).
    public var replies: [FixedReply]
    /// Keys the server knows but refuses with 403 `forbidden` (a key of another app, or without the
    /// permission to restore). They need not be among `SimulatorOptions.keys` and must not overlap them.
    public var forbiddenKeys: [String]

    public init(
        profiles: [Profile] = [], transactions: [Transaction] = [], createUnknownProfiles: Bool = false,
        unlistedTransactions: UnlistedTransactions = .nothingToRestore, replies: [FixedReply] = [],
        forbiddenKeys: [String] = []
    ) {
        self.profiles = profiles
        self.transactions = transactions
        self.createUnknownProfiles = createUnknownProfiles
        self.unlistedTransactions = unlistedTransactions
        self.replies = replies
        self.forbiddenKeys = forbiddenKeys
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case createUnknownProfiles, unlistedTransactions, profiles, transactions, replies, forbiddenKeys
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            profiles: try container.decodeIfPresent([Profile].self, forKey: .profiles) ?? [],
            transactions: try container.decodeIfPresent([Transaction].self, forKey: .transactions) ?? [],
            createUnknownProfiles: try container.decodeIfPresent(Bool.self, forKey: .createUnknownProfiles) ?? false,
            unlistedTransactions: try container.decodeIfPresent(
                UnlistedTransactions.self, forKey: .unlistedTransactions)
                ?? .nothingToRestore,
            replies: try container.decodeIfPresent([FixedReply].self, forKey: .replies) ?? [],
            forbiddenKeys: try container.decodeIfPresent([String].self, forKey: .forbiddenKeys) ?? [])
    }

    /// Reads, decodes and validates a scenario file; every failure names the file and the offending entry.
    public static func load(path: String) throws -> SimulatorScenario {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw SimulatorScenarioError("scenario file \(path): cannot be read (\(error.localizedDescription))")
        }
        return try parse(data, source: "scenario file \(path)")
    }

    /// Decodes and validates scenario JSON; `source` prefixes error messages.
    public static func parse(_ data: Data, source: String = "scenario") throws -> SimulatorScenario {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw SimulatorScenarioError("\(source): not valid JSON (\(error.localizedDescription))")
        }
        try checkKeys(object, source: source)
        let scenario: SimulatorScenario
        do {
            scenario = try JSONDecoder().decode(SimulatorScenario.self, from: data)
        } catch let error as DecodingError {
            throw SimulatorScenarioError("\(source): \(describe(error))")
        }
        try scenario.validate(source: source)
        return scenario
    }

    /// Checks the consistency rules a file cannot express by its shape alone.
    public func validate(source: String = "scenario") throws {
        var profileIds = Set<String>()
        for (position, profile) in profiles.enumerated() {
            guard !profile.profileId.isEmpty else {
                throw SimulatorScenarioError("\(source): profiles[\(position)] has an empty profileId")
            }
            guard profileIds.insert(profile.profileId).inserted else {
                throw SimulatorScenarioError("\(source): profile '\(profile.profileId)' is listed twice")
            }
        }
        var transactionIds = Set<String>()
        for (position, transaction) in transactions.enumerated() {
            let name = "transactions[\(position)] ('\(transaction.originalTransactionId)')"
            guard !transaction.originalTransactionId.isEmpty else {
                throw SimulatorScenarioError("\(source): transactions[\(position)] has an empty originalTransactionId")
            }
            guard transactionIds.insert(transaction.originalTransactionId).inserted else {
                throw SimulatorScenarioError("\(source): \(name) is listed twice")
            }
            if let owner = transaction.owner, !profileIds.contains(owner) {
                throw SimulatorScenarioError("\(source): \(name) has owner '\(owner)', which is not in profiles")
            }
            if transaction.owner != nil, transaction.botsiHasRecord == false {
                throw SimulatorScenarioError("\(source): \(name) has an owner but botsiHasRecord false")
            }
            if let price = transaction.priceUsd, !(price >= 0) {
                throw SimulatorScenarioError("\(source): \(name) has a negative priceUsd")
            }
            if transaction.status == .lifetime, transaction.expiresInDays != nil {
                throw SimulatorScenarioError("\(source): \(name) is a lifetime purchase and cannot have expiresInDays")
            }
            if transaction.accessLevel.isEmpty || transaction.productId.isEmpty {
                throw SimulatorScenarioError("\(source): \(name) has an empty productId or accessLevel")
            }
        }
        var replyIds = Set<String>()
        for (position, reply) in replies.enumerated() {
            try reply.validate(at: "\(source): replies[\(position)]")
            guard replyIds.insert(reply.originalTransactionId).inserted else {
                throw SimulatorScenarioError(
                    "\(source): replies[\(position)] ('\(reply.originalTransactionId)') is listed twice")
            }
        }
        // Positions only: a key is never echoed, not even a simulator's.
        for (position, key) in forbiddenKeys.enumerated() {
            guard !key.isEmpty, !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw SimulatorScenarioError(
                    "\(source): forbiddenKeys[\(position)] is empty or contains a control character")
            }
        }
    }

    /// Catches misspelt keys, which the decoder would otherwise ignore silently.
    private static func checkKeys(_ object: Any, source: String) throws {
        guard let top = object as? [String: Any] else {
            throw SimulatorScenarioError("\(source): the top level must be a JSON object")
        }
        try rejectUnknown(
            Set(top.keys), known: Set(CodingKeys.allCases.map(\.stringValue)), at: "the top level", source)
        for (position, entry) in (top["transactions"] as? [Any] ?? []).enumerated() {
            if let fields = entry as? [String: Any] {
                try rejectUnknown(
                    Set(fields.keys), known: Transaction.knownKeys, at: "transactions[\(position)]", source)
            }
        }
        for (position, entry) in (top["replies"] as? [Any] ?? []).enumerated() {
            if let fields = entry as? [String: Any] {
                try rejectUnknown(Set(fields.keys), known: FixedReply.knownKeys, at: "replies[\(position)]", source)
            }
        }
        for (position, entry) in (top["profiles"] as? [Any] ?? []).enumerated() {
            if let fields = entry as? [String: Any] {
                try rejectUnknown(
                    Set(fields.keys), known: ["profileId", "appUserId"], at: "profiles[\(position)]", source)
            }
        }
    }

    private static func rejectUnknown(_ keys: Set<String>, known: Set<String>, at place: String, _ source: String)
        throws
    {
        if let unknown = keys.subtracting(known).sorted().first {
            throw SimulatorScenarioError(
                "\(source): unknown key '\(unknown)' in \(place); known keys: \(known.sorted().joined(separator: ", "))"
            )
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let text = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
            return text.hasPrefix(".") ? String(text.dropFirst()) : (text.isEmpty ? "the top level" : text)
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// A scenario that cannot be used, with a message that names the file and the entry at fault.
public struct SimulatorScenarioError: Error, CustomStringConvertible, LocalizedError {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}
