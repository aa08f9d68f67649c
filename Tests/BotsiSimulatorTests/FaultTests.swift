import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("Injected faults")
struct FaultTests {
    private func startFaulting(_ fault: SimulatorFault, _ extra: (inout SimulatorOptions) -> Void = { _ in })
        throws -> (Simulator, Int)
    {
        try startSimulatorOnPort { options in
            options.faultRate = 1
            options.faults = [fault]
            options.retryAfterSeconds = 7
            extra(&options)
        }
    }

    @Test("429 with Retry-After and code rate_limited")
    func tooManyRequests() throws {
        let (simulator, port) = try startFaulting(.tooManyRequests)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000002")
        #expect(reply.status == 429)
        #expect(reply.headers["retry-after"] == "7")
        #expect(reply.code == "rate_limited")
        #expect(simulator.stats().faultsInjected == ["429": 1])
    }

    @Test("500 with code internal_error")
    func internalError() throws {
        let (simulator, port) = try startFaulting(.internalError)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000002")
        #expect(reply.status == 500)
        #expect(reply.code == "internal_error")
    }

    @Test("502 with an HTML body, as a proxy sends it")
    func badGateway() throws {
        let (simulator, port) = try startFaulting(.badGateway)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000002")
        #expect(reply.status == 502)
        #expect(reply.headers["content-type"] == "text/html")
        #expect(reply.text.contains("<h1>502 Bad Gateway</h1>"))
        #expect(reply.json.isEmpty)
    }

    @Test("503 with an empty body and Retry-After")
    func unavailable() throws {
        let (simulator, port) = try startFaulting(.unavailable)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let reply = try client.restoreResponse("p-1", "2000000000000002")
        #expect(reply.status == 503)
        #expect(reply.body.isEmpty)
        #expect(reply.headers["content-length"] == "0")
        #expect(reply.headers["retry-after"] == "7")
    }

    @Test("reset closes the connection with RST and no reply")
    func reset() throws {
        let (simulator, port) = try startFaulting(.reset)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let outcome = try client.restore("p-1", "2000000000000002")
        guard case .reset = outcome else {
            Issue.record("expected a reset, got \(outcome)")
            return
        }
        #expect(simulator.stats().statusCounts == ["reset": 1])
    }

    @Test("truncated: a 200 whose Content-Length promises more than arrives, then close")
    func truncated() throws {
        let (simulator, port) = try startFaulting(.truncated)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002")))
        let outcome = client.readUntilClosed()
        guard case .closed(let received) = outcome else {
            Issue.record("expected an early close, got \(outcome)")
            return
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let parts = text.components(separatedBy: "\r\n\r\n")
        let declared = parts[0].components(separatedBy: "\r\n").first { $0.hasPrefix("Content-Length: ") }
            .flatMap { Int($0.dropFirst("Content-Length: ".count)) }
        let bodyBytes = received.count - parts[0].utf8.count - 4
        #expect(try #require(declared) > bodyBytes)
        #expect(bodyBytes > 0)
        #expect(simulator.stats().statusCounts == ["truncated": 1])
    }

    @Test("stall holds the reply for stallSeconds, then closes without a reply")
    func stallThenClose() throws {
        let (simulator, port) = try startFaulting(.stall) { $0.stallSeconds = 0.5 }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let started = Date()
        let outcome = try client.restore("p-1", "2000000000000002")
        guard case .closed(let received) = outcome else {
            Issue.record("expected a close after the stall, got \(outcome)")
            return
        }
        #expect(received.isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.4)
        #expect(simulator.stats().inFlight == 0)
    }

    @Test("a stall does not hold up other connections, and stop() releases it")
    func stopReleasesStall() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.faultRate = 1
            options.faults = [.stall]
        }
        let stalled = try TestClient(port: port)
        try stalled.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002")))
        #expect(waitUntil { simulator.stats().statusCounts["stall"] == 1 })

        let other = try TestClient(port: port)
        try other.send(TestClient.request(method: "GET", path: "/__simulator/stats", authorization: nil))
        #expect(try other.require(other.readResponse()).status == 200)

        simulator.stop()
        let outcome = stalled.readUntilClosed()
        switch outcome {
        case .closed(let received): #expect(received.isEmpty)
        case .reset: break
        case .timedOut, .response: Issue.record("stop() did not release the stalled request: \(outcome)")
        }
        simulator.stop()
    }

    @Test("a faulted restore changes no state")
    func faultChangesNothing() throws {
        let (simulator, port) = try startFaulting(.internalError)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        for _ in 0..<3 { _ = try client.restoreResponse("p-1", "2000000000000002") }
        let stats = simulator.stats()
        #expect(stats.restoreCases.isEmpty)
        #expect(stats.pairs.count == 1)
        #expect(stats.pairs.first?.requests == 3)
        #expect(stats.pairs.first?.successes == 0)
    }

    @Test("faults are drawn only for authorized, well-formed requests")
    func faultsAfterChecks() throws {
        let (simulator, port) = try startFaulting(.internalError)
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        #expect(try client.require(client.restore("p-1", "2000000000000002", authorization: nil)).status == 401)
        try client.send(TestClient.request(body: "{}"))
        #expect(try client.require(client.readResponse()).status == 400)
        #expect(simulator.stats().faultsInjected.isEmpty)
    }

    private func statusSequence(seed: UInt64) throws -> [Int] {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.seed = seed
            options.faultRate = 0.5
            options.faults = [.tooManyRequests, .internalError, .badGateway, .unavailable]
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        return try (0..<60).map { index in
            try client.restoreResponse("p-\(index % 5)", "20000000000000\(index)2").status
        }
    }

    @Test("the same seed and request order give the same faults; another seed does not")
    func seedReproducibility() throws {
        let first = try statusSequence(seed: 42)
        let again = try statusSequence(seed: 42)
        let other = try statusSequence(seed: 43)
        #expect(first == again)
        #expect(first != other)
        #expect(Set(first).count > 2, "a 50% fault rate over four kinds should show several statuses: \(first)")
    }
}
