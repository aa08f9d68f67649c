import BotsiSimulator
import BotsiTestSupport
import Foundation
import Synchronization
import Testing

@Suite("HTTP server behaviour")
struct ServerTests {
    @Test("start on port 0 reports the bound port and base URL; stop is idempotent")
    func lifecycle() throws {
        let simulator = Simulator(options: SimulatorOptions())
        let port = try simulator.start()
        #expect(port > 0)
        #expect(simulator.port == port)
        #expect(simulator.baseURL == "http://127.0.0.1:\(port)")
        #expect(try simulator.start() == port)
        simulator.stop()
        simulator.stop()
        #expect(throws: SimulatorError.self) { try simulator.start() }
        #expect(throws: (any Error).self) { try TestClient(port: port) }
    }

    @Test("invalid options are refused at start")
    func invalidOptions() {
        var options = SimulatorOptions()
        options.faultRate = 1.5
        #expect(throws: SimulatorError.self) { try Simulator(options: options).start() }
        options = SimulatorOptions()
        options.host = "not-an-address"
        #expect(throws: SimulatorError.self) { try Simulator(options: options).start() }
    }

    @Test("keep-alive: several requests on one connection")
    func keepAlive() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        for index in 0..<5 {
            #expect(try client.restoreResponse("p-\(index)", "200000000000000\(index)2").status == 200)
        }
        let stats = simulator.stats()
        #expect(stats.connectionsAccepted == 1)
        #expect(stats.requests == 5)
    }

    @Test("pipelined requests are answered in order")
    func pipelined() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(
            TestClient.request(body: TestClient.restoreBody("unknown-1", "2000000000000002"))
                + TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002")))
        #expect(try client.require(client.readResponse()).status == 404)
        #expect(try client.require(client.readResponse()).status == 200)
    }

    @Test("Connection: close is honoured")
    func connectionClose() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(
            TestClient.request(
                body: TestClient.restoreBody("p-1", "2000000000000002"), extraHeaders: ["Connection: close"]))
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 200)
        #expect(reply.headers["connection"] == "close")
        guard case .closed = client.readUntilClosed() else {
            Issue.record("the connection stayed open")
            return
        }
    }

    @Test("unknown path: 404 JSON; wrong method: 405")
    func routing() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(TestClient.request(path: "/v2/nowhere", body: "{}"))
        let missing = try client.require(client.readResponse())
        #expect(missing.status == 404)
        #expect(missing.code == "route_not_found", "not the code of a profile the app does not have")
        try client.send(TestClient.request(method: "GET"))
        let wrongMethod = try client.require(client.readResponse())
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "POST")
        #expect(simulator.stats().requests == 0, "stats count the restore route only")
    }

    /// An https:// base URL: the ClientHello holds no CRLF CRLF, and the run waited two minutes for
    /// its timeout. Answered and closed at once, so the client's TLS fails in a moment.
    @Test("a TLS handshake gets 400 and the connection closes at once")
    func tlsHandshake() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 400)
        guard case .closed = client.readUntilClosed() else {
            Issue.record("the connection stayed open")
            return
        }
    }

    @Test("a malformed request gets 400 and the connection closes")
    func malformed() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send("THIS IS NOT HTTP\r\n\r\n")
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 400)
        #expect(reply.code == "bad_request")
        guard case .closed = client.readUntilClosed() else {
            Issue.record("the connection stayed open")
            return
        }
    }

    @Test("a chunked request body is refused with 411")
    func chunked() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        try client.send(
            "POST /v2/purchases/apple-store/restore HTTP/1.1\r\nAuthorization: \(Simulator.defaultKey)\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        #expect(try client.require(client.readResponse()).status == 411)
    }

    @Test("Expect: 100-continue gets an interim reply before the body")
    func expectContinue() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let body = TestClient.restoreBody("p-1", "2000000000000002")
        try client.send(
            "POST /v2/purchases/apple-store/restore HTTP/1.1\r\nAuthorization: \(Simulator.defaultKey)\r\n"
                + "Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try client.require(client.readResponse()).status == 100)
        try client.send(body)
        #expect(try client.require(client.readResponse()).status == 200)
    }

    @Test("HTTP/1.0 closes after the reply unless it asks for keep-alive")
    func http10() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let body = TestClient.restoreBody("p-1", "2000000000000002")
        let head =
            "POST /v2/purchases/apple-store/restore HTTP/1.0\r\nAuthorization: \(Simulator.defaultKey)\r\n"
            + "Content-Length: \(body.utf8.count)\r\n"
        let closing = try TestClient(port: port)
        try closing.send(head + "\r\n" + body)
        #expect(try closing.require(closing.readResponse()).headers["connection"] == "close")
        let keeping = try TestClient(port: port)
        try keeping.send(head + "Connection: keep-alive\r\n\r\n" + body)
        #expect(try keeping.require(keeping.readResponse()).headers["connection"] == nil)
        try keeping.send(head + "Connection: keep-alive\r\n\r\n" + body)
        #expect(try keeping.require(keeping.readResponse()).status == 200)
    }

    @Test("a body split across several writes is read whole")
    func splitBody() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let request = TestClient.request(body: TestClient.restoreBody("p-1", "2000000000000002"))
        let bytes = Array(request.utf8)
        try client.send(Array(bytes[0..<40]))
        usleep(20_000)
        try client.send(Array(bytes[40..<(bytes.count - 10)]))
        usleep(20_000)
        try client.send(Array(bytes[(bytes.count - 10)...]))
        #expect(try client.require(client.readResponse()).status == 200)
    }

    @Test("latency delays each reply")
    func latency() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.latencyMilliseconds = 300 }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let started = Date()
        #expect(try client.restoreResponse("p-1", "2000000000000002").status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.25)
    }

    @Test("the stats endpoint reports requests, pairs and successes as JSON")
    func statsEndpoint() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        _ = try client.restoreResponse("p-1", "2000000000000002")
        _ = try client.restoreResponse("p-1", "2000000000000002")
        _ = try client.restoreResponse("p-2", "2000000000000000")
        try client.send(TestClient.request(method: "GET", path: "/__simulator/stats?pairs=1"))
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 200)
        let stats = try JSONDecoder().decode(SimulatorStats.self, from: Data(reply.body))
        #expect(stats.requests == 3)
        #expect(stats.statusCounts == ["200": 2, "404": 1])
        #expect(stats.pairs.map(\.profileId) == ["p-1", "p-2"])
        #expect(stats.pairs.map(\.requests) == [2, 1])
        #expect(stats.pairs.map(\.successes) == [2, 0])
        #expect(stats.maxInFlight == 1)
    }

    @Test("in-flight maxima per profile and per transaction")
    func inFlightMaxima() throws {
        // Stalled requests stay in flight until stop(), so the overlap is certain, not a matter of timing.
        let (simulator, port) = try startSimulatorOnPort { options in
            options.faultRate = 1
            options.faults = [.stall]
        }
        defer { simulator.stop() }
        let clients = try (0..<8).map { _ in try TestClient(port: port) }
        for (index, client) in clients.enumerated() {
            try client.send(
                TestClient.request(body: TestClient.restoreBody("shared-profile", "300000000000000\(index)")))
        }
        let extra = try TestClient(port: port)
        try extra.send(TestClient.request(body: TestClient.restoreBody("other-profile", "3000000000000001")))
        #expect(waitUntil { simulator.stats().requests == 9 })
        let stats = simulator.stats()
        #expect(stats.maxInFlight == 9)
        #expect(stats.inFlight == 9)
        #expect(stats.maxInFlightPerProfile == 8)
        #expect(stats.maxInFlightPerTransaction == 2)
    }

    @Test("concurrent requests with latency overlap and are all answered")
    func concurrentWithLatency() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.latencyMilliseconds = 400 }
        defer { simulator.stop() }
        // Blocking sockets on threads of their own: on the cooperative pool (two threads on this
        // machine, shared with other tests) the requests would not really overlap.
        let statuses = Mutex<[Int]>([])
        let group = DispatchGroup()
        for index in 0..<6 {
            group.enter()
            Thread {
                defer { group.leave() }
                let status = (try? TestClient(port: port).restoreResponse("same-profile", "40000000000000\(index)2"))?
                    .status
                statuses.withLock { $0.append(status ?? -1) }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(statuses.withLock { $0 } == Array(repeating: 200, count: 6))
        #expect(simulator.stats().maxInFlightPerProfile >= 2)
        // The server counts a request finished just after its last byte is handed to the kernel.
        #expect(waitUntil { simulator.stats().inFlight == 0 })
    }

    @Test("limitRate answers 429 with Retry-After above the rate")
    func limitRate() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.limitRate = 3
            options.retryAfterSeconds = 2
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let replies = try (0..<10).map { _ in try client.restoreResponse("p-1", "2000000000000002") }
        let limited = replies.filter { $0.status == 429 }
        #expect(!limited.isEmpty)
        #expect(limited.allSatisfy { $0.headers["retry-after"] == "2" && $0.code == "rate_limited" })
        #expect(replies.filter { $0.status == 200 }.count >= 3)
        #expect(simulator.stats().rateLimited == limited.count)
        #expect(simulator.stats().faultsInjected.isEmpty)
    }

    struct RefusedHead: Sendable, CustomTestStringConvertible {
        let name: String
        let request: String
        var testDescription: String { name }
    }

    /// A restore that would be served, but for what `version`, `headers` and `lengths` say.
    private static func restore(version: String = "HTTP/1.1", headers: [String] = [], lengths: [String]? = nil)
        -> String
    {
        TestClient.request(
            version: version, body: TestClient.restoreBody("p-1", "2000000000000002"), extraHeaders: headers,
            contentLengths: lengths)
    }

    private static let restoreLength = TestClient.restoreBody("p-1", "2000000000000002").utf8.count

    /// Each case breaks one rule of the strict parser, in a request that would otherwise be served.
    @Test(
        "a head the parser cannot trust gets 400 and the connection closes",
        arguments: [
            RefusedHead(name: "no request line at all", request: "\r\n\r\n"),
            RefusedHead(name: "an empty method", request: " " + restore().drop { $0 != " " }.dropFirst()),
            RefusedHead(
                name: "a target that is not a path",
                request: restore().replacingOccurrences(of: " /v2/", with: " v2/")),
            RefusedHead(name: "an HTTP version other than 1.0 and 1.1", request: restore(version: "HTTP/2.0")),
            RefusedHead(name: "a header without a name", request: restore(headers: [": value"])),
            RefusedHead(name: "a space in a header name", request: restore(headers: ["X Padding: 1"])),
            RefusedHead(name: "DEL in a header name", request: restore(headers: ["X-Padding\u{7F}: 1"])),
            RefusedHead(name: "an empty Content-Length", request: restore(lengths: [""])),
            // Eleven digits are refused before any arithmetic, even when their value is small.
            RefusedHead(
                name: "a Content-Length of 11 digits",
                request: restore(lengths: [String(repeating: "0", count: 9) + "\(restoreLength)"])),
            RefusedHead(
                name: "two Content-Lengths that differ",
                request: restore(lengths: ["\(restoreLength)", "\(restoreLength + 1)"]) + " "),
        ])
    func refusedHead(_ testCase: RefusedHead) throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port, receiveTimeoutSeconds: 5)
        try client.send(testCase.request)
        let reply = try client.require(client.readResponse())
        #expect(reply.status == 400)
        #expect(reply.code == "bad_request")
        guard case .closed = client.readUntilClosed() else {
            Issue.record("the connection stayed open")
            return
        }
        #expect(simulator.stats().requests == 0)
    }

    @Test("header values may be padded with spaces and tabs, and a repeated equal Content-Length is one")
    func paddedHeaderValues() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let request = Self.restore(lengths: ["\(Self.restoreLength)", "\t\(Self.restoreLength) \t"])
            .replacingOccurrences(of: "Authorization: ", with: "Authorization:\t ")
            .replacingOccurrences(of: "\(Simulator.defaultKey)\r\n", with: "\(Simulator.defaultKey) \t\r\n")
        try client.send(request)
        #expect(try client.require(client.readResponse()).status == 200)
    }

    /// The interim reply answers `100-continue` only: another expectation is not a promise to wait.
    @Test("Expect with anything but 100-continue gets no interim reply")
    func otherExpectation() throws {
        let (simulator, port) = try startSimulatorOnPort()
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let request = Self.restore(headers: ["Expect: 100-continue-not"])
        let headEnd = try #require(request.range(of: "\r\n\r\n")).upperBound
        try client.send(String(request[..<headEnd]))
        usleep(100_000)
        try client.send(String(request[headEnd...]))
        #expect(try client.require(client.readResponse()).status == 200)
    }
}
