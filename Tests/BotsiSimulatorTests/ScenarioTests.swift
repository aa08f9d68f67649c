import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("Scenario files")
struct ScenarioTests {
    private static let samplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("samples/scenario.json").path

    private let owner = "3f0c1a52-0001-4e7a-9d1e-000000000001"
    private let second = "3f0c1a52-0002-4e7a-9d1e-000000000002"

    @Test("the bundled sample loads and drives all outcomes")
    func sampleScenario() throws {
        let scenario = try SimulatorScenario.load(path: Self.samplePath)
        #expect(scenario.profiles.count == 3)
        #expect(scenario.transactions.count == 6)
        let (simulator, port) = try startSimulatorOnPort { $0.scenario = scenario }
        defer { simulator.stop() }
        let client = try TestClient(port: port)

        #expect(try client.restoreResponse("p-not-listed", "2000000261699101").code == "not_found")
        #expect(try client.restoreResponse(owner, "2000000261699106").code == "nothing_to_restore")
        #expect(try client.restoreResponse(owner, "2000000261699199").code == "nothing_to_restore", "unlisted")

        let owned = try client.restoreResponse(owner, "2000000261699101")
        #expect(owned.status == 200)
        let linked = try client.restoreResponse(second, "2000000261699101")
        #expect(linked.status == 200)
        let attached = try client.restoreResponse(second, "2000000261699102")
        let attachedData = try #require(attached.json["data"] as? [String: Any])
        #expect(attachedData["appUserId"] as? String == "user-2")
        #expect(attachedData["state"] as? String == "subscribed", "the linked annual plan outranks the grace period")
        let monthly = (attachedData["subscriptions"] as? [String: Any])?["premium_monthly"] as? [String: Any]
        #expect(monthly?["isInGracePeriod"] as? Bool == true)
        let lifetime = try client.restoreResponse(second, "2000000261699105")
        let lifetimeData = try #require(lifetime.json["data"] as? [String: Any])
        #expect((lifetimeData["accessLevels"] as? [String: Any])?["pro"] != nil)
        let expired = try client.restoreResponse("3f0c1a52-0003-4e7a-9d1e-000000000003", "2000000261699104")
        let expiredData = try #require(expired.json["data"] as? [String: Any])
        #expect(expiredData["state"] as? String == "expired")
        #expect(expiredData["totalRevenueUsd"] as? Double == 39.99)

        #expect(
            simulator.stats().restoreCases == ["alreadyOwned": 1, "linked": 1, "attached": 1, "rebuilt": 2])
    }

    @Test("createUnknownProfiles and the rule for unlisted transactions")
    func flags() throws {
        let json = """
            {"createUnknownProfiles": true, "unlistedTransactions": "rule", "profiles": [], "transactions": []}
            """
        let scenario = try SimulatorScenario.parse(Data(json.utf8))
        let (simulator, port) = try startSimulatorOnPort { $0.scenario = scenario }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        #expect(try client.restoreResponse("anyone", "2000000000000002").status == 200)
        #expect(try client.restoreResponse("anyone", "2000000000000000").code == "nothing_to_restore")
    }

    struct BadScenario: Sendable, CustomTestStringConvertible {
        let name: String
        let json: String
        let mentions: [String]
        var testDescription: String { name }
    }

    @Test(
        "a bad scenario file gets an error that names the file and the entry",
        arguments: [
            BadScenario(name: "not JSON", json: "{profiles: ", mentions: ["not valid JSON"]),
            BadScenario(name: "not an object", json: "[]", mentions: ["top level"]),
            BadScenario(
                name: "misspelt key", json: #"{"transactions": [{"originalTransactionId": "1", "ownr": "p"}]}"#,
                mentions: ["unknown key 'ownr'", "transactions[0]"]),
            BadScenario(
                name: "owner not listed",
                json: #"{"profiles": ["a"], "transactions": [{"originalTransactionId": "1", "owner": "b"}]}"#,
                mentions: ["owner 'b'", "transactions[0]"]),
            BadScenario(
                name: "bad status", json: #"{"transactions": [{"originalTransactionId": "1", "status": "gone"}]}"#,
                mentions: ["transactions[0].status"]),
            BadScenario(
                name: "missing id", json: #"{"transactions": [{"productId": "x"}]}"#,
                mentions: ["transactions[0].originalTransactionId is required"]),
            BadScenario(
                name: "duplicate profile", json: #"{"profiles": ["a", "a"]}"#, mentions: ["'a' is listed twice"]),
        ])
    func badScenario(_ testCase: BadScenario) throws {
        let directory = Workspace()
        let path = directory.file("scenario.json")
        try Data(testCase.json.utf8).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SimulatorScenarioError.self) { try SimulatorScenario.load(path: path) }
        #expect(error.message.contains(path))
        for mention in testCase.mentions {
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test("a missing scenario file is a clear error")
    func missingFile() throws {
        let directory = Workspace()
        let path = directory.file("absent.json")
        let error = try #require(throws: SimulatorScenarioError.self) { try SimulatorScenario.load(path: path) }
        #expect(error.message.contains("cannot be read"))
        #expect(error.message.contains(path))
    }

    @Test("an invalid scenario passed in code is refused at start")
    func invalidInCode() {
        var options = SimulatorOptions()
        options.scenario = SimulatorScenario(
            profiles: [], transactions: [.init(originalTransactionId: "1", owner: "nobody")])
        #expect(throws: SimulatorError.self) { try Simulator(options: options).start() }
    }

    @Test("a scenario round-trips through JSON")
    func roundTrip() throws {
        let scenario = try SimulatorScenario.load(path: Self.samplePath)
        let encoded = try JSONEncoder().encode(scenario)
        let decoded = try SimulatorScenario.parse(encoded)
        #expect(decoded.transactions.map(\.originalTransactionId) == scenario.transactions.map(\.originalTransactionId))
        #expect(decoded.profiles.map(\.profileId) == scenario.profiles.map(\.profileId))
    }
}
