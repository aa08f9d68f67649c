import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// The limits that keep one client (or a crowd) from holding the simulator: head size, idle connections,
/// the connection cap, and what the unauthenticated stats route gives away.
@Suite("Simulator limits")
struct LimitsTests {
    /// A restore whose head is exactly `headBytes` long (request line to the blank line), padded with one header.
    private static func restore(headBytes: Int) -> String {
        let body = TestClient.restoreBody("p-1", "2000000000000002")
        let bare = TestClient.request(body: body, extraHeaders: ["X-Padding: "])
        let bareHead = bare.utf8.count - body.utf8.count
        let padding = String(repeating: "x", count: headBytes - bareHead)
        return TestClient.request(body: body, extraHeaders: ["X-Padding: " + padding])
    }

    @Test("a head of 16 KiB is served; one byte more is 431 and the connection closes")
    func headLimit() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let atLimit = try TestClient(port: port)
        try atLimit.send(Self.restore(headBytes: 16 * 1024))
        #expect(try atLimit.require(atLimit.readResponse()).status == 200)

        // Sent in one write, so the whole head (and its end) is in the first read: the case that was served.
        let over = try TestClient(port: port)
        try over.send(Self.restore(headBytes: 16 * 1024 + 1))
        let reply = try over.require(over.readResponse())
        #expect(reply.status == 431)
        #expect(reply.headers["connection"] == "close")
        guard case .closed = over.readUntilClosed() else {
            Issue.record("the connection stayed open after 431")
            return
        }
        #expect(simulator.stats().requests == 1, "the oversized request never reached the restore route")
    }

    @Test("a 20 KB head is refused whether it arrives whole or in pieces")
    func twentyKilobyteHead() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let request = Array(Self.restore(headBytes: 20_000).utf8)
        let whole = try TestClient(port: port)
        try whole.send(request)
        #expect(try whole.require(whole.readResponse()).status == 431)

        let pieces = try TestClient(port: port)
        for start in stride(from: 0, to: request.count, by: 4096) {
            try pieces.send(Array(request[start..<min(start + 4096, request.count)]))
            usleep(5_000)
        }
        #expect(try pieces.require(pieces.readResponse()).status == 431)
    }

    @Test("a head trickled in a few bytes at a time is found, its end split across reads")
    func trickledHead() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        for _ in 0..<2 {
            let request = Array(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002")).utf8)
            // Three-byte pieces: the four-byte end of the head always straddles two of them.
            for start in stride(from: 0, to: request.count, by: 3) {
                try client.send(Array(request[start..<min(start + 3, request.count)]))
                usleep(500)
            }
            #expect(try client.require(client.readResponse()).status == 200)
        }
    }

    // MARK: Idle timeout

    /// True when the server closed (or reset) the connection; false when nothing happened for `seconds`.
    private static func closedByServer(_ client: TestClient) -> Bool {
        switch client.readUntilClosed() {
        case .closed, .reset: true
        case .timedOut, .response: false
        }
    }

    @Test("a connection that sends nothing is closed after the idle timeout")
    func silentConnection() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.idleTimeoutSeconds = 0.5 }
        defer { simulator.stop() }
        let started = Date()
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        #expect(Self.closedByServer(client))
        #expect(Date().timeIntervalSince(started) >= 0.4)
        #expect(waitUntil { simulator.stats().idleTimeouts == 1 })
    }

    @Test("a head sent a byte at a time is cut off at the idle timeout, however steady the trickle")
    func slowHead() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.idleTimeoutSeconds = 0.5 }
        defer { simulator.stop() }
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        let request = Array(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002")).utf8)
        let started = Date()
        var cutOff = false
        // 100 ms per byte: the request would take ~10 s; every byte is activity, but none completes it.
        for byte in request {
            do {
                try client.send([byte])
            } catch {
                cutOff = true
                break
            }
            usleep(100_000)
        }
        #expect(cutOff, "the server kept reading the trickled head")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(simulator.stats().requests == 0)
    }

    @Test("a kept-alive connection closes when idle after its reply, and stays while requests keep coming")
    func keptAliveConnection() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.idleTimeoutSeconds = 0.5 }
        defer { simulator.stop() }
        let busy = try TestClient(port: port, receiveTimeoutSeconds: 5)
        // Six requests 200 ms apart: 1.2 s on one connection, more than twice the timeout.
        for index in 0..<6 {
            #expect(try busy.restoreResponse("p-\(index)", "2000000000000002").status == 200)
            usleep(200_000)
        }
        #expect(simulator.stats().connectionsAccepted == 1)
        #expect(Self.closedByServer(busy))
    }

    @Test("a client that stops taking a large reply is closed after the idle timeout")
    func clientStopsReading() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.idleTimeoutSeconds = 0.5
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: [.init(originalTransactionId: "2000000000000122", kind: .hugeBody, bytes: 8 << 20)])
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        try client.send(TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000122")))
        // Never read: the 8 MiB reply fills both socket buffers and the server waits to write the rest.
        #expect(waitUntil(seconds: 10) { simulator.stats().idleTimeouts == 1 })
        #expect(waitUntil { simulator.stats().inFlight == 0 })
    }

    @Test("a reply held back by latency longer than the idle timeout is still sent")
    func latencyIsNotIdleness() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.idleTimeoutSeconds = 0.3
            options.latencyMilliseconds = 800
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        #expect(try client.restoreResponse("p-1", "2000000000000002").status == 200)
        #expect(simulator.stats().idleTimeouts == 0)
    }

    // MARK: Connection cap

    @Test("at the connection cap a new connection waits in the backlog and is served once another closes")
    func connectionCap() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.maxConnections = 3 }
        defer { simulator.stop() }
        var held: [TestClient] = try (0..<3).map { index in
            let client = try TestClient(port: port)
            #expect(try client.restoreResponse("p-\(index)", "2000000000000002").status == 200)
            return client
        }
        let waiting = try TestClient(port: port, receiveTimeoutSeconds: 1)
        try waiting.send(TestClient.request(body: TestClient.restoreBody("p-9", "2000000000000002")))
        guard case .timedOut = waiting.readResponse() else {
            Issue.record("a fourth connection was served while three were open")
            return
        }
        var stats = simulator.stats()
        #expect(stats.connectionsAccepted == 3)
        #expect(stats.openConnections == 3)
        #expect(stats.connectionLimitPauses >= 1)

        held.removeFirst()  // closes one: the server sees EOF and frees its slot
        var outcome = waiting.readResponse()
        for _ in 0..<10 {
            guard case .timedOut = outcome else { break }
            outcome = waiting.readResponse()
        }
        #expect(try waiting.require(outcome).status == 200)
        stats = simulator.stats()
        #expect(stats.connectionsAccepted == 4)
        #expect(stats.openConnections == 3)
        _ = held
    }

    // MARK: What the unauthenticated stats route gives away

    private static func stats(_ client: TestClient, query: String = "", authorization: String? = nil) throws
        -> TestClient.Response
    {
        try client.send(
            TestClient.request(method: "GET", path: "/__simulator/stats" + query, authorization: authorization))
        return try client.require(client.readResponse())
    }

    @Test("the stats route gives counts, never ids, unless asked for pairs with an accepted key")
    func statsWithoutIds() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        _ = try client.restoreResponse("profile-secret-1", "2000000000007772")
        _ = try client.restoreResponse("profile-secret-2", "2000000000007770")

        let counts = try Self.stats(client)
        #expect(counts.status == 200)
        #expect(!counts.text.contains("profile-secret") && !counts.text.contains("200000000000777"), "\(counts.text)")
        #expect(counts.json["pairs"] == nil)
        #expect(counts.json["pairCount"] as? Int == 2)
        #expect(counts.json["requests"] as? Int == 2)

        for authorization in [nil, "wrong-key"] {
            let refused = try Self.stats(client, query: "?pairs=1", authorization: authorization)
            #expect(refused.status == 401)
            #expect(refused.code == "unauthorized")
            #expect(!refused.text.contains("profile-secret"))
        }

        let listed = try Self.stats(client, query: "?pairs=1", authorization: Simulator.defaultKey)
        #expect(listed.status == 200)
        let stats = try JSONDecoder().decode(SimulatorStats.self, from: Data(listed.body))
        #expect(stats.pairs.map(\.profileId) == ["profile-secret-1", "profile-secret-2"])
        #expect(stats.pairCount == 2)
        #expect(simulator.stats().pairs.count == 2, "in-process stats still list every pair")

        // `pairs=true` asks the same, among other fields of the query.
        let listedByTrue = try Self.stats(client, query: "?x=1&pairs=true", authorization: Simulator.defaultKey)
        #expect((listedByTrue.json["pairs"] as? [Any])?.count == 2)
    }

    // MARK: Binding beyond loopback

    @Test("binding anything but loopback comes with a warning")
    func exposureWarning() {
        var options = SimulatorOptions()
        for host in ["127.0.0.1", "127.8.9.10", "localhost"] {
            options.host = host
            #expect(options.exposureWarning == nil, "\(host)")
        }
        options.host = "0.0.0.0"
        #expect(options.exposureWarning?.contains("every interface") == true)
        options.host = "192.168.1.10"
        #expect(options.exposureWarning?.contains("192.168.1.10") == true)
    }

    @Test("a head that reaches 16 KiB without its end is 431 at once, not left waiting for more")
    func headFullWithoutEnd() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        let start = "POST /v2/purchases/apple-store/restore HTTP/1.1\r\nX-Padding: "
        try client.send(start + String(repeating: "x", count: 16 * 1024 - start.utf8.count))
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 431)
    }

    @Test("a body of 1 MiB is read; a Content-Length one byte more is 413 before any body arrives")
    func bodyLimit() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let restoreBody = TestClient.restoreBody("p-1", "2000000000000002")
        // JSON allows the padding, so the largest body is still a restore that is served.
        let body = restoreBody + String(repeating: " ", count: 1024 * 1024 - restoreBody.utf8.count)
        let atLimit = try TestClient(port: port)
        try atLimit.send(TestClient.request(body: body))
        #expect(try atLimit.require(atLimit.readResponse()).status == 200)

        let over = try TestClient(port: port, receiveTimeoutSeconds: 5)
        try over.send(
            TestClient.request().replacingOccurrences(of: "\r\n\r\n", with: "\r\nContent-Length: 1048577\r\n\r\n"))
        let reply = try over.require(over.readResponse())
        #expect(reply.status == 413)
        #expect(reply.headers["connection"] == "close")
    }
}
