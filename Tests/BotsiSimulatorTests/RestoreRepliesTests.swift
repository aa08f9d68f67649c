import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("Documented restore replies")
struct RestoreRepliesTests {
    struct AuthorizationCase: Sendable, CustomTestStringConvertible {
        let name: String
        let authorization: String?
        var testDescription: String { name }
    }

    @Test(
        "401 unauthorized",
        arguments: [
            AuthorizationCase(name: "missing key", authorization: nil),
            AuthorizationCase(name: "unknown key", authorization: "sk_wrong"),
            AuthorizationCase(name: "Bearer prefix", authorization: "Bearer \(Simulator.defaultKey)"),
            AuthorizationCase(name: "empty key", authorization: ""),
        ])
    func unauthorized(_ testCase: AuthorizationCase) throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.require(client.restore("p-1", "2000000000000002", authorization: testCase.authorization))
        #expect(reply.status == 401)
        #expect(reply.code == "unauthorized")
        #expect(reply.json["error"] is String)
        #expect(!reply.text.contains(Simulator.defaultKey), "an error must never echo the key")
    }

    @Test("any of several configured keys is accepted")
    func severalKeys() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.keys = ["sk_one", "pk_two"] }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        #expect(try client.require(client.restore("p-1", "2000000000000002", authorization: "pk_two")).status == 200)
        #expect(try client.require(client.restore("p-1", "2000000000000002", authorization: "sk_one")).status == 200)
        #expect(
            try client.require(client.restore("p-1", "2000000000000002", authorization: Simulator.defaultKey)).status
                == 401)
    }

    struct BodyCase: Sendable, CustomTestStringConvertible {
        let name: String
        let body: String
        let message: String
        var testDescription: String { name }
    }

    @Test(
        "400 bad_request for a body that cannot be restored",
        arguments: [
            BodyCase(name: "not JSON", body: "profileId=p-1", message: "not valid JSON"),
            BodyCase(name: "truncated JSON", body: "{\"profileId\":\"p-1\"", message: "not valid JSON"),
            BodyCase(name: "empty body", body: "", message: "not valid JSON"),
            BodyCase(name: "array", body: "[1,2]", message: "JSON object"),
            BodyCase(
                name: "missing profileId", body: "{\"originalTransactionId\":\"2000000000000002\"}",
                message: "profileId is required"),
            BodyCase(
                name: "missing originalTransactionId", body: "{\"profileId\":\"p-1\"}",
                message: "originalTransactionId is required"),
            BodyCase(
                name: "empty profileId", body: "{\"profileId\":\"\",\"originalTransactionId\":\"2000000000000002\"}",
                message: "profileId must not be empty"),
            BodyCase(
                name: "empty originalTransactionId", body: "{\"profileId\":\"p-1\",\"originalTransactionId\":\"\"}",
                message: "originalTransactionId must not be empty"),
            BodyCase(
                name: "numeric originalTransactionId",
                body: "{\"profileId\":\"p-1\",\"originalTransactionId\":2000000000000002}",
                message: "originalTransactionId must be a string"),
            BodyCase(
                name: "null profileId", body: "{\"profileId\":null,\"originalTransactionId\":\"2000000000000002\"}",
                message: "profileId must be a string"),
        ])
    func badRequest(_ testCase: BodyCase) throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(TestClient.request(body: testCase.body))
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 400)
        #expect(reply.code == "bad_request")
        #expect((reply.json["error"] as? String)?.contains(testCase.message) == true, "\(reply.text)")
        #expect(simulator.stats().statusCounts["400"] == 1)
    }

    @Test("extra fields, escapes and whitespace are accepted")
    func lenientBody() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let body =
            " { \"note\": [1, {\"a\": null}, -2.5e3, true],\n \"profileId\": \"p\\u002d\\\"x\\\"\",\n"
            + " \"originalTransactionId\": \"2000000000000002\" } "
        try client.send(TestClient.request(body: body))
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 200)
        let data = try #require(reply.json["data"] as? [String: Any])
        #expect(data["profileId"] as? String == "p-\"x\"")
    }

    @Test("400 No ios settings found for every authorized request in no-ios-settings mode")
    func noIOSSettings() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.mode = .noIOSSettings }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000002")
        #expect(reply.status == 400)
        #expect(reply.code == "bad_request")
        #expect(reply.json["error"] as? String == "No ios settings found")
        #expect(try client.require(client.restore("p-1", "2000000000000002", authorization: "nope")).status == 401)
        try client.send(TestClient.request(body: "not json"))
        #expect(try client.require(client.readResponse()).json["error"] as? String == "No ios settings found")
    }

    @Test("404 not_found for a profile the app does not have")
    func unknownProfile() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("unknown-42", "2000000000000002")
        #expect(reply.status == 404)
        #expect(reply.code == "not_found")
    }

    @Test("404 nothing_to_restore when Apple has no subscription")
    func nothingToRestore() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000261699240")
        #expect(reply.status == 404)
        #expect(reply.code == "nothing_to_restore")
        #expect(
            reply.json["error"] as? String == "Apple has no subscription for originalTransactionId: 2000000261699240")
        #expect(try client.restoreResponse("p-1", "not-digits-x").code == "nothing_to_restore")
    }

    @Test("never seen: rebuilt from Apple, with every Profile and entitlement field")
    func rebuiltHasEveryField() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("fff3c120-0ca8-480f-9b19-3955a5428e39", "2000000261699248")
        #expect(reply.status == 200)
        #expect(reply.headers["content-type"] == "application/json")
        #expect(reply.json["ok"] as? Bool == true)
        let data = try #require(reply.json["data"] as? [String: Any])
        let profileFields: Set = [
            "profileId", "appUserId", "state", "totalRevenueUsd", "accessLevels", "subscriptions", "nonSubscriptions",
        ]
        #expect(Set(data.keys) == profileFields)
        #expect(data["profileId"] as? String == "fff3c120-0ca8-480f-9b19-3955a5428e39")
        #expect(data["state"] as? String == "subscribed")
        #expect(data["totalRevenueUsd"] as? Double == 49.99)
        let premium = try #require((data["accessLevels"] as? [String: Any])?["premium"] as? [String: Any])
        let entitlementFields: Set = [
            "createdDate", "id", "isActive", "sourceProductId", "sourceBasePlanId", "store", "activatedAt", "startsAt",
            "renewedAt", "expiresAt", "unsubscribedAt", "billingIssueDetectedAt", "isLifetime", "isRefund",
            "willRenew", "isInGracePeriod", "cancellationReason", "offerId", "activeIntroductoryOfferType",
            "activePromotionalOfferType", "activePromotionalOfferId",
        ]
        #expect(Set(premium.keys) == entitlementFields)
        #expect(premium["isActive"] as? Bool == true)
        #expect(premium["willRenew"] as? Bool == true)
        #expect(premium["sourceProductId"] as? String == "premium_annual")
        #expect(premium["store"] as? String == "app_store")
        #expect(premium["id"] is Int)
        #expect(premium["startsAt"] is NSNull)
        let subscription = try #require((data["subscriptions"] as? [String: Any])?["premium_annual"] as? [String: Any])
        #expect(Set(subscription.keys) == entitlementFields)
        #expect((data["nonSubscriptions"] as? [String: Any])?.isEmpty == true)
        #expect(simulator.stats().restoreCases == ["rebuilt": 1])
    }

    @Test("record without a profile: attached to the restoring profile")
    func attached() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000001")
        #expect(reply.status == 200)
        let data = try #require(reply.json["data"] as? [String: Any])
        #expect((data["subscriptions"] as? [String: Any])?["premium_monthly"] != nil)
        #expect(simulator.stats().restoreCases == ["attached": 1])
    }

    @Test("the owner restoring again gets its profile as it is")
    func alreadyOwned() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let first = try client.restoreResponse("p-1", "2000000000000004")
        let second = try client.restoreResponse("p-1", "2000000000000004")
        #expect(second.status == 200)
        #expect(second.body == first.body)
        #expect(simulator.stats().restoreCases == ["rebuilt": 1, "alreadyOwned": 1])
    }

    @Test("--forget: the owner restoring again is answered as the first time, and no pair is kept")
    func forgetful() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.forget = true }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let first = try client.restoreResponse("p-1", "2000000000000004")
        let second = try client.restoreResponse("p-1", "2000000000000004")
        #expect(first.status == 200 && second.status == 200)
        #expect(second.body == first.body)
        #expect(try client.restoreResponse("p-2", "2000000000000004").status == 200)
        #expect(simulator.stats().restoreCases == ["rebuilt": 3], "nothing remembered: no owner, no link")
        #expect(simulator.stats().pairCount == 0)
        #expect(simulator.stats().requests == 3)
        var options = SimulatorOptions()
        options.forget = true
        options.scenario = SimulatorScenario()
        #expect(throws: SimulatorError.self) { try options.validate() }
    }

    @Test("a second profile restoring an owned purchase gets its access, and the owner keeps it")
    func linking() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        #expect(try client.restoreResponse("owner", "2000000000000006").status == 200)
        let second = try client.restoreResponse("second-device", "2000000000000006")
        #expect(second.status == 200)
        let data = try #require(second.json["data"] as? [String: Any])
        #expect(data["profileId"] as? String == "second-device")
        let premium = try #require((data["accessLevels"] as? [String: Any])?["premium"] as? [String: Any])
        #expect(premium["isActive"] as? Bool == true)
        #expect(data["totalRevenueUsd"] as? Double == 0, "revenue stays with the buyer")

        let owner = try client.restoreResponse("owner", "2000000000000006")
        let ownerData = try #require(owner.json["data"] as? [String: Any])
        #expect(
            ((ownerData["accessLevels"] as? [String: Any])?["premium"] as? [String: Any])?["isActive"] as? Bool == true)
        #expect(simulator.stats().restoreCases == ["rebuilt": 1, "linked": 1, "alreadyOwned": 1])
    }

    struct ProductCase: Sendable, CustomTestStringConvertible {
        let transactionId: String
        let state: String
        let productId: String
        let isActive: Bool
        var testDescription: String { "id ending \(transactionId.suffix(1)) -> \(state)" }
    }

    @Test(
        "the last digit decides product and state",
        arguments: [
            ProductCase(
                transactionId: "1000000000000001", state: "subscribed", productId: "premium_monthly", isActive: true),
            ProductCase(
                transactionId: "1000000000000002", state: "subscribed", productId: "premium_annual", isActive: true),
            ProductCase(
                transactionId: "1000000000000003", state: "billing-issue", productId: "premium_monthly", isActive: true),
            ProductCase(
                transactionId: "1000000000000005", state: "expired", productId: "premium_annual", isActive: false),
            ProductCase(
                transactionId: "1000000000000007", state: "active-trial", productId: "premium_weekly", isActive: true),
            ProductCase(
                transactionId: "1000000000000009", state: "subscribed", productId: "premium_lifetime", isActive: true),
        ])
    func productRule(_ testCase: ProductCase) throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", testCase.transactionId)
        #expect(reply.status == 200)
        let data = try #require(reply.json["data"] as? [String: Any])
        #expect(data["state"] as? String == testCase.state)
        let premium = try #require((data["accessLevels"] as? [String: Any])?["premium"] as? [String: Any])
        #expect(premium["sourceProductId"] as? String == testCase.productId)
        #expect(premium["isActive"] as? Bool == testCase.isActive)
        if testCase.productId == "premium_lifetime" {
            #expect(premium["isLifetime"] as? Bool == true)
            #expect(premium["expiresAt"] is NSNull)
            #expect((data["nonSubscriptions"] as? [String: Any])?["premium_lifetime"] != nil)
        }
    }

    /// Epoch seconds of an entitlement date field, nil for null.
    private static func seconds(_ entitlement: [String: Any], _ field: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (entitlement[field] as? String).flatMap { formatter.date(from: $0) }
            .map { Int64($0.timeIntervalSince1970) }
    }

    private static let day: Int64 = 86_400

    /// The one profile's premium entitlement and its revenue, after restoring `transactionId`.
    private static func premium(_ client: TestClient, _ profileId: String, _ transactionId: String) throws
        -> (entitlement: [String: Any], revenue: Double?)
    {
        let reply = try client.restoreResponse(profileId, transactionId)
        let data = try #require(reply.json["data"] as? [String: Any], "\(reply.text)")
        let levels = try #require(data["accessLevels"] as? [String: Any])
        let entitlement = try #require((levels["premium"] ?? levels["pro"]) as? [String: Any])
        return (entitlement, data["totalRevenueUsd"] as? Double)
    }

    /// docs/simulator.md's expiries and prices, to the day and the cent, and renewal and purchase one period
    /// apart: no other test compared a reply's dates or priced anything but an annual plan.
    @Test("the rule's dates and prices: one period from purchase to renewal and from renewal to expiry")
    func ruleDatesAndPrices() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        // The billing issue was detected a day before the simulator's start: its clock, to the second.
        let (billing, billingRevenue) = try Self.premium(client, "p-3", "1000000000000003")
        let now = try #require(Self.seconds(billing, "billingIssueDetectedAt")) + Self.day
        #expect(Self.seconds(billing, "expiresAt") == now + 6 * Self.day)
        #expect(Self.seconds(billing, "renewedAt") == now + 6 * Self.day - 30 * Self.day)
        #expect(Self.seconds(billing, "createdDate") == now + 6 * Self.day - 60 * Self.day)
        #expect(billingRevenue == 9.99)

        let (monthly, monthlyRevenue) = try Self.premium(client, "p-1", "1000000000000001")
        #expect(Self.seconds(monthly, "expiresAt") == now + 30 * Self.day)
        #expect(Self.seconds(monthly, "renewedAt") == now)
        #expect(Self.seconds(monthly, "createdDate") == now - 30 * Self.day)
        #expect(monthlyRevenue == 9.99)

        let (annual, _) = try Self.premium(client, "p-2", "1000000000000002")
        #expect(Self.seconds(annual, "expiresAt") == now + 365 * Self.day)
        #expect(Self.seconds(annual, "createdDate") == now - 365 * Self.day)

        let (expired, expiredRevenue) = try Self.premium(client, "p-5", "1000000000000005")
        #expect(Self.seconds(expired, "expiresAt") == now - 30 * Self.day)
        #expect(Self.seconds(expired, "unsubscribedAt") == now - 50 * Self.day)
        #expect(expired["willRenew"] as? Bool == false)
        #expect(expiredRevenue == 49.99)

        // A trial has no renewal: it began one trial (3 days) before it ends, and cost nothing.
        let (trial, trialRevenue) = try Self.premium(client, "p-7", "1000000000000007")
        #expect(Self.seconds(trial, "expiresAt") == now + 3 * Self.day)
        #expect(Self.seconds(trial, "renewedAt") == nil)
        #expect(Self.seconds(trial, "createdDate") == now)
        #expect(trialRevenue == 0)

        let (lifetime, lifetimeRevenue) = try Self.premium(client, "p-9", "1000000000000009")
        #expect(Self.seconds(lifetime, "expiresAt") == nil)
        #expect(Self.seconds(lifetime, "createdDate") == now - 30 * Self.day)
        #expect(lifetimeRevenue == 149.99)
    }

    @Test("a scenario's cancelled, weekly and yearly plans, its owners' revenue, and expiries that are past")
    func scenarioStatusesAndProducts() throws {
        let json = """
            {"createUnknownProfiles": true, "unlistedTransactions": "nothing_to_restore", "profiles": ["owner"],
             "transactions": [
              {"originalTransactionId": "owned", "productId": "premium_monthly", "status": "active", "owner": "owner"},
              {"originalTransactionId": "billing", "productId": "premium_monthly", "status": "billing_issue"},
              {"originalTransactionId": "cancelled", "productId": "premium_monthly", "status": "cancelled"},
              {"originalTransactionId": "weekly", "productId": "premium_weekly", "status": "active"},
              {"originalTransactionId": "yearly", "productId": "premium_yearly", "status": "active"},
              {"originalTransactionId": "expired-later", "productId": "premium_monthly", "status": "expired",
               "expiresInDays": 5},
              {"originalTransactionId": "ends-now", "productId": "premium_monthly", "status": "active",
               "expiresInDays": 0}
             ]}
            """
        let scenario = try SimulatorScenario.parse(Data(json.utf8))
        let (simulator, port) = try startSimulatorOnPort { $0.scenario = scenario }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let (billing, _) = try Self.premium(client, "p-billing", "billing")
        let now = try #require(Self.seconds(billing, "billingIssueDetectedAt")) + Self.day

        // Cancelled: still active for its 10 days, but it will not renew.
        let (cancelled, _) = try Self.premium(client, "p-cancelled", "cancelled")
        #expect(Self.seconds(cancelled, "expiresAt") == now + 10 * Self.day)
        #expect(Self.seconds(cancelled, "unsubscribedAt") == now - 10 * Self.day)
        #expect(cancelled["isActive"] as? Bool == true)
        #expect(cancelled["willRenew"] as? Bool == false)

        let (weekly, weeklyRevenue) = try Self.premium(client, "p-weekly", "weekly")
        #expect(Self.seconds(weekly, "expiresAt") == now + 7 * Self.day)
        #expect(weeklyRevenue == 2.99)
        let (yearly, yearlyRevenue) = try Self.premium(client, "p-yearly", "yearly")
        #expect(Self.seconds(yearly, "expiresAt") == now + 365 * Self.day)
        #expect(yearlyRevenue == 49.99)

        // A listed owner paid for what it owns before any restore.
        #expect(try Self.premium(client, "owner", "owned").revenue == 9.99)

        // Expired is inactive whatever its expiry says; an expiry at this very second is already past.
        let (expiredLater, _) = try Self.premium(client, "p-expired", "expired-later")
        #expect(expiredLater["isActive"] as? Bool == false)
        let (endsNow, _) = try Self.premium(client, "p-now", "ends-now")
        #expect(endsNow["isActive"] as? Bool == false)
    }
}
