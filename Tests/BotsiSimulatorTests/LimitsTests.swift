import BotsiSimulator
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
        let (simulator, port) = try startSimulator()
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
        let (simulator, port) = try startSimulator()
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
        let (simulator, port) = try startSimulator()
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
}
