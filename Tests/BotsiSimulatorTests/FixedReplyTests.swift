import BotsiSimulator
import BotsiTestSupport
import Foundation
import Glibc
import Testing

/// Scenario fixed replies and forbidden keys, checked on the wire with the raw-socket client.
@Suite("Fixed replies")
struct FixedReplyTests {
    private typealias Reply = SimulatorScenario.FixedReply

    private static let hostileSamplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("samples/scenario-hostile.json").path

    /// Every other transaction follows the deterministic rule, so a test sees the fixed reply and nothing else.
    private func start(
        _ replies: [Reply], forbiddenKeys: [String] = [], _ configure: (inout SimulatorOptions) -> Void = { _ in }
    ) throws -> (Simulator, Int) {
        try startSimulatorOnPort { options in
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule, replies: replies,
                forbiddenKeys: forbiddenKeys)
            configure(&options)
        }
    }

    private func parseError(_ json: String) -> String? {
        do {
            _ = try SimulatorScenario.parse(Data(json.utf8))
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("an error reply: its status, code and message, and no restore happens")
    func errorReply() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", status: 422, code: "unprocessable", message: "Nope")
        ])
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 422)
        #expect(reply.code == "unprocessable")
        #expect(reply.json["error"] as? String == "Nope")
        // A second call is the same fixed reply: nothing was restored in between.
        #expect(try client.restoreResponse("p-1", "2000000000000122").status == 422)
        #expect(try client.restoreResponse("p-1", "2000000000000124").status == 200, "other ids follow the rule")
        let stats = simulator.stats()
        #expect(stats.statusCounts == ["422": 2, "200": 1])
        #expect(stats.restoreCases == ["rebuilt": 1])
        let pair = stats.pairs.first { $0.originalTransactionId == "2000000000000122" }
        #expect(pair?.requests == 2)
        #expect(pair?.successes == 0)
    }

    @Test("an error reply without a code, with Retry-After")
    func errorWithoutCode() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", status: 408, retryAfterSeconds: 3)
        ])
        defer { simulator.stop() }
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 408)
        #expect(reply.code == nil)
        #expect(reply.json["error"] is String)
        #expect(reply.headers["retry-after"] == "3")
    }

    @Test("an HTML reply is not JSON")
    func htmlReply() throws {
        let (simulator, port) = try start([Reply(originalTransactionId: "2000000000000122", kind: .html, status: 418)])
        defer { simulator.stop() }
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 418)
        #expect(reply.headers["content-type"] == "text/html")
        #expect(reply.text.contains("<h1>418</h1>"))
        #expect((try? JSONSerialization.jsonObject(with: Data(reply.body))) == nil)
    }

    @Test("a forbidden key gets 403 forbidden; accepted and unknown keys are unaffected")
    func forbiddenKey() throws {
        let (simulator, port) = try start([], forbiddenKeys: ["other_app_key"])
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let refused = try client.require(client.restore("p-1", "2000000000000122", authorization: "other_app_key"))
        #expect(refused.status == 403)
        #expect(refused.code == "forbidden")
        #expect(!refused.text.contains("other_app_key"), "a key is never echoed")
        #expect(try client.restoreResponse("p-1", "2000000000000122").status == 200)
        #expect(try client.require(client.restore("p-1", "2000000000000124", authorization: "nope")).status == 401)
        #expect(simulator.stats().statusCounts == ["403": 1, "200": 1, "401": 1])
    }

    @Test("a key both accepted and forbidden is refused at start")
    func overlappingKeys() throws {
        var options = SimulatorOptions()
        options.scenario = SimulatorScenario(forbiddenKeys: [Simulator.defaultKey])
        let simulator = Simulator(options: options)
        #expect(throws: SimulatorError.self) { try simulator.start() }
    }

    @Test("a huge body with its length: valid JSON of exactly the size asked for")
    func hugeBodyWithLength() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .hugeBody, bytes: 3 << 20)
        ])
        defer { simulator.stop() }
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 200)
        #expect(reply.headers["content-length"] == String(3 << 20))
        #expect(reply.body.count == 3 << 20)
        #expect((reply.json["data"] as? [String: Any])?["profileId"] as? String == "p-1")
        #expect(simulator.stats().statusCounts == ["hugeBody": 1])
    }

    @Test("a huge body without a length runs until the connection closes")
    func hugeBodyWithoutLength() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .hugeBody, bytes: 2 << 20, contentLength: false)
        ])
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000122")))
        guard case .closed(let received) = client.readUntilClosed() else {
            Issue.record("expected the server to close after the body")
            return
        }
        let text = String(decoding: received.prefix(512), as: UTF8.self).lowercased()
        #expect(text.hasPrefix("http/1.1 200"))
        #expect(!text.contains("content-length"))
        #expect(text.contains("connection: close"))
        #expect(received.count > 2 << 20)
    }

    @Test("invalid JSON and ok:false are 200s whose bodies are not a restored profile")
    func invalidJSONAndOkFalse() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .invalidJSON),
            Reply(originalTransactionId: "2000000000000124", kind: .okFalse, message: "Something broke"),
        ])
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let invalid = try client.restoreResponse("p-1", "2000000000000122")
        #expect(invalid.status == 200)
        #expect((try? JSONSerialization.jsonObject(with: Data(invalid.body))) == nil)
        let notOK = try client.restoreResponse("p-1", "2000000000000124")
        #expect(notOK.status == 200)
        #expect(notOK.json["ok"] as? Bool == false)
        #expect(notOK.json["error"] as? String == "Something broke")
        #expect(simulator.stats().statusCounts == ["invalidJSON": 1, "okFalse": 1])
    }

    @Test("a never-ending body trickles, holds up no other connection, and ends when the client leaves")
    func neverEndingBody() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .neverEndingBody, intervalMilliseconds: 20)
        ])
        defer { simulator.stop() }
        var trickling: TestClient? = try TestClient(port: port)
        try trickling?.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000122")))
        #expect(waitUntil { simulator.stats().inFlight == 1 })
        #expect(try TestClient(port: port).restoreResponse("p-2", "2000000000000124").status == 200)
        #expect(waitUntil { simulator.stats().inFlight == 1 }, "the never-ending reply is still going")
        trickling = nil
        #expect(waitUntil { simulator.stats().inFlight == 0 }, "closing the client ends the reply")
        #expect(simulator.stats().statusCounts == ["neverEndingBody": 1, "200": 1])
    }

    @Test("stop() ends a never-ending body, which had been trickling until then")
    func stopEndsNeverEndingBody() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .neverEndingBody, intervalMilliseconds: 10)
        ])
        let client = try TestClient(port: port, receiveTimeoutSeconds: 15)
        try client.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000122")))
        #expect(waitUntil { simulator.stats().inFlight == 1 })
        usleep(500_000)  // time for some ticks; the bytes wait in the socket
        simulator.stop()
        guard case .closed(let received) = client.readUntilClosed() else {
            Issue.record("expected the connection to close on stop()")
            return
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(text.contains("\"padding\":\"xxxxxxxx"))
    }

    @Test("huge headers: padding lines of the size asked for, then the profile as it is")
    func hugeHeaders() throws {
        let (simulator, port) = try start([
            Reply(originalTransactionId: "2000000000000122", kind: .hugeHeaders, bytes: 150_000, lineBytes: 1000)
        ])
        defer { simulator.stop() }
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 200)
        let padding = reply.headers.filter { $0.key.hasPrefix("x-padding-") }
        #expect(padding.count == 150)
        #expect(padding.values.allSatisfy { $0.count + "X-Padding-000: \r\n".count >= 998 })
        let data = try #require(reply.json["data"] as? [String: Any])
        #expect(data["profileId"] as? String == "p-1")
        #expect(simulator.stats().restoreCases.isEmpty, "no restore happened")
    }

    @Test("a redirect names its Location and has an empty body")
    func redirect() throws {
        let (simulator, port) = try start([
            Reply(
                originalTransactionId: "2000000000000122", kind: .redirect, status: 307,
                location: "http://127.0.0.1:9/v2/purchases/apple-store/restore")
        ])
        defer { simulator.stop() }
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 307)
        #expect(reply.headers["location"] == "http://127.0.0.1:9/v2/purchases/apple-store/restore")
        #expect(reply.body.isEmpty)
        #expect(reply.headers["content-length"] == "0")
    }

    @Test("latency applies and a fixed reply wins over the fault draw")
    func latencyAndFaults() throws {
        let (simulator, port) = try start([Reply(originalTransactionId: "2000000000000122", status: 409)]) {
            $0.latencyMilliseconds = 150
            $0.faultRate = 1
            $0.faults = [.reset]
        }
        defer { simulator.stop() }
        let started = Date()
        let reply = try TestClient(port: port).restoreResponse("p-1", "2000000000000122")
        #expect(reply.status == 409)
        #expect(Date().timeIntervalSince(started) >= 0.14, "a delay is never shorter than the latency")
        #expect(simulator.stats().faultsInjected.isEmpty)
    }

    @Test("the hostile sample loads and serves each kind")
    func hostileSample() throws {
        let scenario = try SimulatorScenario.load(path: Self.hostileSamplePath)
        #expect(Set(scenario.replies.map(\.kind)) == Set(Reply.Kind.allCases))
        #expect(!scenario.forbiddenKeys.isEmpty)
        let (simulator, port) = try startSimulatorOnPort { $0.scenario = scenario }
        defer { simulator.stop() }
        let conflict = try #require(scenario.replies.first { $0.status == 409 })
        let reply = try TestClient(port: port).restoreResponse("p-1", conflict.originalTransactionId)
        #expect(reply.status == 409)
        #expect(reply.code == conflict.code)
    }

    @Test("bad replies entries are refused with the entry and the key named")
    func validation() {
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "staus": 422}]}"#)?.contains(
                "unknown key 'staus' in replies[0]") == true)
        #expect(parseError(#"{"replies": [{"originalTransactionId": "1"}]}"#)?.contains("status is required") == true)
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "status": 200}]}"#)?.contains(
                "status must be 400–599") == true)
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "kind": "teapot"}]}"#)?.contains(
                "replies[0].kind") == true)
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "kind": "okFalse", "bytes": 5}]}"#)?.contains(
                "replies[0] ('1', kind 'okFalse'): 'bytes' does not apply to this kind; it takes message") == true)
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "kind": "redirect"}]}"#)?.contains(
                "location is required") == true)
        #expect(
            parseError(#"{"replies": [{"originalTransactionId": "1", "kind": "redirect", "location": "a\nb"}]}"#)?
                .contains("control characters") == true)
        #expect(
            parseError(
                #"{"replies": [{"originalTransactionId": "1", "status": 409}, {"originalTransactionId": "1", "status": 422}]}"#
            )?.contains("replies[1] ('1') is listed twice") == true)
        #expect(
            parseError(
                #"{"replies": [{"originalTransactionId": "1", "kind": "neverEndingBody", "intervalMilliseconds": 0}]}"#)?
                .contains("intervalMilliseconds") == true)
        #expect(parseError(#"{"forbiddenKeys": ["ok", ""]}"#)?.contains("forbiddenKeys[1] is empty") == true)
        #expect(parseError(#"{"forbiddenKeys": "k"}"#)?.contains("forbiddenKeys") == true)
        #expect(parseError(#"{"replies": [], "forbiddenKeys": ["k"]}"#) == nil)
    }
}
