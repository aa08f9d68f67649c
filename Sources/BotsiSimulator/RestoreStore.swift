/// One purchase as Botsi and Apple see it. Dates are epoch seconds fixed when the record is made, so
/// a reply for the same transaction renders the same bytes for the life of the simulator.
struct TransactionRecord: Sendable {
    let originalTransactionId: String
    let productId: String
    let accessLevel: String
    let status: SimulatorScenario.Status
    /// First purchase of the subscription chain (or of the lifetime product).
    let purchasedAt: Int64
    /// Start of the current period; nil for trials and lifetime purchases.
    let renewedAt: Int64?
    let expiresAt: Int64?
    let priceCents: Int
    let appleKnows: Bool
    var botsiHasRecord: Bool
    var owner: String?
    let entitlementId: Int
    let baseTime: Int64

    var isLifetime: Bool { status == .lifetime }
    var isActive: Bool {
        status != .expired && (expiresAt.map { $0 > baseTime } ?? true)
    }
    var willRenew: Bool { isActive && !isLifetime && status != .cancelled }
    var isTrial: Bool { status == .trial }
    var hasBillingIssue: Bool { status == .billingIssue }
    var unsubscribedAt: Int64? {
        status == .cancelled || status == .expired ? (expiresAt ?? baseTime) - 20 * 86_400 : nil
    }

    init(
        originalTransactionId: String, productId: String, accessLevel: String = "premium",
        status: SimulatorScenario.Status, expiresInDays: Double?, priceUsd: Double?, appleKnows: Bool,
        botsiHasRecord: Bool, owner: String?, baseTime: Int64
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.accessLevel = accessLevel
        self.status = status
        self.appleKnows = appleKnows
        self.botsiHasRecord = botsiHasRecord
        self.owner = owner
        self.baseTime = baseTime
        let days: Double? = status == .lifetime ? nil : expiresInDays ?? Self.defaultExpiryDays(status, productId)
        expiresAt = days.map { baseTime + Int64(($0 * 86_400).rounded()) }
        let period = Self.periodDays(productId, status) * 86_400
        if let expiresAt, status != .trial {
            renewedAt = expiresAt - period
            purchasedAt = expiresAt - 2 * period
        } else {
            renewedAt = nil
            purchasedAt = (expiresAt ?? baseTime) - (status == .lifetime ? 30 * 86_400 : period)
        }
        let defaultCents = status == .trial ? 0 : Self.defaultPriceCents(productId)
        priceCents = priceUsd.map { Int(($0 * 100).rounded()) } ?? defaultCents
        entitlementId = Self.stableIdentifier(originalTransactionId)
    }

    /// The rule used without a scenario (documented on `Simulator` and in docs/simulator.md).
    static func fromRule(_ originalTransactionId: String, baseTime: Int64) -> TransactionRecord {
        let last = originalTransactionId.utf8.last ?? 0
        let digit = last >= UInt8(ascii: "0") && last <= UInt8(ascii: "9") ? Int(last - UInt8(ascii: "0")) : nil
        let productId: String
        let status: SimulatorScenario.Status
        switch digit {
        case 1: (productId, status) = ("premium_monthly", .active)
        case 3: (productId, status) = ("premium_monthly", .billingIssue)
        case 5: (productId, status) = ("premium_annual", .expired)
        case 7: (productId, status) = ("premium_weekly", .trial)
        case 9: (productId, status) = ("premium_lifetime", .lifetime)
        default: (productId, status) = ("premium_annual", .active)
        }
        return TransactionRecord(
            originalTransactionId: originalTransactionId, productId: productId, status: status, expiresInDays: nil,
            priceUsd: nil, appleKnows: digit != nil && digit != 0, botsiHasRecord: digit == 1, owner: nil,
            baseTime: baseTime)
    }

    private static func defaultExpiryDays(_ status: SimulatorScenario.Status, _ productId: String) -> Double {
        switch status {
        case .trial: return 3
        case .billingIssue: return 6
        case .cancelled: return 10
        case .expired: return -30
        case .active, .lifetime: return Double(periodDays(productId, status))
        }
    }

    private static func periodDays(_ productId: String, _ status: SimulatorScenario.Status) -> Int64 {
        if status == .trial { return 3 }
        if productId.contains("annual") || productId.contains("year") { return 365 }
        if productId.contains("week") { return 7 }
        return 30
    }

    private static func defaultPriceCents(_ productId: String) -> Int {
        if productId.contains("lifetime") { return 14_999 }
        if productId.contains("annual") || productId.contains("year") { return 4_999 }
        if productId.contains("week") { return 299 }
        return 999
    }

    /// FNV-1a, so the entitlement id is the same in every run for the same transaction.
    private static func stableIdentifier(_ text: String) -> Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return Int(hash & 0x7FFF_FFFF) + 1
    }
}

struct ProfileRecord: Sendable {
    let profileId: String
    let appUserId: String?
    /// Transactions whose access this profile holds, in the order it got them.
    var access: [String] = []
    var revenueCents = 0
    /// The rendered 200 body, dropped whenever `access` changes.
    var renderedReply: [UInt8]?
}

/// Which of the seed's four cases a restore took.
enum RestoreCase: String, Sendable, CaseIterable {
    case alreadyOwned, linked, attached, rebuilt
}

enum RestoreOutcome {
    case restored(RestoreCase, body: [UInt8])
    case profileNotFound
    case nothingToRestore
}

/// Profiles, purchases and who owns what. Lives inside the simulator's mutex.
struct RestoreStore: Sendable {
    private let baseTime: Int64
    private let scenario: SimulatorScenario?
    private var profiles: [String: ProfileRecord] = [:]
    private var transactions: [String: TransactionRecord] = [:]
    /// Nothing outlives its restore (`SimulatorOptions.forget`).
    private let forget: Bool

    init(scenario: SimulatorScenario?, baseTime: Int64, forget: Bool = false) {
        self.baseTime = baseTime
        self.scenario = scenario
        self.forget = forget
        guard let scenario else { return }
        for profile in scenario.profiles {
            profiles[profile.profileId] = ProfileRecord(profileId: profile.profileId, appUserId: profile.appUserId)
        }
        for listed in scenario.transactions {
            let record = TransactionRecord(
                originalTransactionId: listed.originalTransactionId, productId: listed.productId,
                accessLevel: listed.accessLevel, status: listed.status, expiresInDays: listed.expiresInDays,
                priceUsd: listed.priceUsd, appleKnows: listed.appleKnows,
                botsiHasRecord: listed.botsiHasRecord ?? (listed.owner != nil), owner: listed.owner,
                baseTime: baseTime)
            transactions[listed.originalTransactionId] = record
            if let owner = listed.owner {
                profiles[owner]?.access.append(record.originalTransactionId)
                profiles[owner]?.revenueCents += record.priceCents
            }
        }
    }

    /// Does the restore and returns the profile after it; a refused restore changes nothing.
    mutating func restore(profileId: String, originalTransactionId: String) -> RestoreOutcome {
        defer {
            if forget {
                profiles[profileId] = nil
                transactions[originalTransactionId] = nil
            }
        }
        guard ensureProfile(profileId) else { return .profileNotFound }
        guard var transaction = transaction(originalTransactionId), transaction.appleKnows else {
            return .nothingToRestore
        }
        let restoreCase: RestoreCase
        switch transaction.owner {
        case profileId?:
            restoreCase = .alreadyOwned
        case .some:
            restoreCase = .linked
            grant(originalTransactionId, to: profileId)
        case nil:
            restoreCase = transaction.botsiHasRecord ? .attached : .rebuilt
            transaction.owner = profileId
            transaction.botsiHasRecord = true
            transactions[originalTransactionId] = transaction
            grant(originalTransactionId, to: profileId)
            profiles[profileId]?.revenueCents += transaction.priceCents
        }
        return .restored(restoreCase, body: renderedReply(profileId))
    }

    /// The 200 body for the profile as it is now, without restoring anything (used for truncated replies).
    mutating func currentReply(profileId: String) -> [UInt8] {
        if profiles[profileId] == nil {
            return ProfileRenderer.render(ProfileRecord(profileId: profileId, appUserId: nil), transactions: [:])
        }
        return renderedReply(profileId)
    }

    private func profileExistsByRule(_ profileId: String) -> Bool {
        guard let scenario else { return !profileId.hasPrefix("unknown") }
        return scenario.createUnknownProfiles
    }

    private mutating func ensureProfile(_ profileId: String) -> Bool {
        if profiles[profileId] != nil { return true }
        guard profileExistsByRule(profileId) else { return false }
        profiles[profileId] = ProfileRecord(profileId: profileId, appUserId: nil)
        return true
    }

    private func transaction(_ originalTransactionId: String) -> TransactionRecord? {
        if let known = transactions[originalTransactionId] { return known }
        if let scenario, scenario.unlistedTransactions == .nothingToRestore { return nil }
        return TransactionRecord.fromRule(originalTransactionId, baseTime: baseTime)
    }

    private mutating func grant(_ originalTransactionId: String, to profileId: String) {
        guard let profile = profiles[profileId], !profile.access.contains(originalTransactionId) else { return }
        profiles[profileId]?.access.append(originalTransactionId)
        profiles[profileId]?.renderedReply = nil
    }

    private mutating func renderedReply(_ profileId: String) -> [UInt8] {
        guard let profile = profiles[profileId] else { return [] }
        if let cached = profile.renderedReply { return cached }
        let body = ProfileRenderer.render(profile, transactions: transactions)
        profiles[profileId]?.renderedReply = body
        return body
    }
}
