/// Renders `{"ok": true, "data": <Profile>}` with every Profile and entitlement field of the API facts.
enum ProfileRenderer {
    static func render(_ profile: ProfileRecord, transactions: [String: TransactionRecord]) -> [UInt8] {
        let held = profile.access.compactMap { transactions[$0] }
        var accessLevels: [String: TransactionRecord] = [:]
        var subscriptions: [String: TransactionRecord] = [:]
        var nonSubscriptions: [String: TransactionRecord] = [:]
        for transaction in held {
            if accessLevels[transaction.accessLevel].map({ isBetter(transaction, than: $0) }) ?? true {
                accessLevels[transaction.accessLevel] = transaction
            }
            if transaction.isLifetime {
                nonSubscriptions[transaction.productId] = transaction
            } else if subscriptions[transaction.productId].map({ isBetter(transaction, than: $0) }) ?? true {
                subscriptions[transaction.productId] = transaction
            }
        }

        var json = JSONBytes(capacity: 1024 + 900 * held.count)
        json.raw("{\"ok\":true,\"data\":{\"profileId\":")
        json.string(profile.profileId)
        json.raw(",\"appUserId\":")
        json.optionalString(profile.appUserId)
        json.raw(",\"state\":")
        json.string(state(of: Array(accessLevels.values)))
        json.raw(",\"totalRevenueUsd\":")
        json.usd(cents: profile.revenueCents)
        json.raw(",\"accessLevels\":")
        writeObject(accessLevels, into: &json, entry: writeEntitlement)
        json.raw(",\"subscriptions\":")
        writeObject(subscriptions, into: &json, entry: writeEntitlement)
        json.raw(",\"nonSubscriptions\":")
        writeObject(nonSubscriptions, into: &json, entry: writeNonSubscription)
        json.raw("}}")
        return json.bytes
    }

    /// Active beats inactive; among equals, lifetime or the later expiry wins.
    private static func isBetter(_ candidate: TransactionRecord, than current: TransactionRecord) -> Bool {
        if candidate.isActive != current.isActive { return candidate.isActive }
        return (candidate.expiresAt ?? .max) > (current.expiresAt ?? .max)
    }

    private static func state(of levels: [TransactionRecord]) -> String {
        guard !levels.isEmpty else { return "never-subscribed" }
        let active = levels.filter(\.isActive)
        if active.isEmpty { return "expired" }
        if active.contains(where: { $0.hasBillingIssue }) { return "billing-issue" }
        if active.allSatisfy(\.isTrial) { return "active-trial" }
        return "subscribed"
    }

    private static func writeObject(
        _ entries: [String: TransactionRecord], into json: inout JSONBytes,
        entry: (TransactionRecord, inout JSONBytes) -> Void
    ) {
        json.raw("{")
        for (position, key) in entries.keys.sorted().enumerated() {
            if position > 0 { json.raw(",") }
            json.string(key)
            json.raw(":")
            entry(entries[key]!, &json)
        }
        json.raw("}")
    }

    private static func writeEntitlement(_ transaction: TransactionRecord, into json: inout JSONBytes) {
        json.raw("{\"createdDate\":")
        json.optionalDate(transaction.purchasedAt)
        json.raw(",\"id\":")
        json.integer(transaction.entitlementId)
        json.raw(",\"isActive\":")
        json.bool(transaction.isActive)
        json.raw(",\"sourceProductId\":")
        json.string(transaction.productId)
        json.raw(",\"sourceBasePlanId\":null,\"store\":\"app_store\",\"activatedAt\":")
        json.optionalDate(transaction.purchasedAt)
        json.raw(",\"startsAt\":null,\"renewedAt\":")
        json.optionalDate(transaction.renewedAt)
        json.raw(",\"expiresAt\":")
        json.optionalDate(transaction.expiresAt)
        json.raw(",\"unsubscribedAt\":")
        json.optionalDate(transaction.unsubscribedAt)
        json.raw(",\"billingIssueDetectedAt\":")
        json.optionalDate(transaction.hasBillingIssue ? transaction.baseTime - 86_400 : nil)
        json.raw(",\"isLifetime\":")
        json.bool(transaction.isLifetime)
        json.raw(",\"isRefund\":false,\"willRenew\":")
        json.bool(transaction.willRenew)
        json.raw(",\"isInGracePeriod\":")
        json.bool(transaction.hasBillingIssue && transaction.isActive)
        json.raw(",\"cancellationReason\":")
        json.optionalString(transaction.unsubscribedAt == nil ? nil : "voluntarily_cancelled")
        json.raw(",\"offerId\":null,\"activeIntroductoryOfferType\":")
        json.optionalString(transaction.isTrial && transaction.isActive ? "free_trial" : nil)
        json.raw(",\"activePromotionalOfferType\":null,\"activePromotionalOfferId\":null}")
    }

    private static func writeNonSubscription(_ transaction: TransactionRecord, into json: inout JSONBytes) {
        json.raw("{\"isConsumable\":false,\"isOneTime\":true,\"isRefund\":false,\"purchasedAt\":")
        json.optionalDate(transaction.purchasedAt)
        json.raw(",\"purchasedId\":")
        json.string(transaction.originalTransactionId)
        json.raw(",\"store\":\"app_store\",\"sourceProductId\":")
        json.string(transaction.productId)
        json.raw(",\"transactionId\":")
        json.string(transaction.originalTransactionId)
        json.raw("}")
    }
}
