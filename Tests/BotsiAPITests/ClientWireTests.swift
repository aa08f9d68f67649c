import BotsiSimulator
import BotsiTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import BotsiAPI

/// A loopback HTTP/1.1 server that answers each request, on the connection it came on, with the next
/// of the replies a test scripted (raw bytes, so a test can send what the simulator never does), and
/// records each request as read. A reply that says `Connection: close` closes its connection; when
/// the script runs out, the server keeps the connection open and answers nothing.
final class ScriptedServer: Sendable {
    let port: Int
    private let listener: Int32
    private let state: Mutex<(replies: [String], requests: [String])>

    init(_ replies: [String]) throws {
        let bound = try Loopback.bind(listening: 8)
        listener = bound.descriptor
        port = bound.port
        state = Mutex((replies, []))
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var requests: [String] { state.withLock { $0.requests } }

    /// Stops accepting; a connection being served ends when the client closes it. The serving
    /// thread closes the listener: closed here, its number could go to the next test's listener
    /// while this thread still accepts on it.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                close(listener)
                return
            }
            answer(on: connection)
            close(connection)
        }
    }

    private func answer(on connection: Int32) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            // One request: its header section, then as many body bytes as its Content-Length says.
            var request: [UInt8]?
            while request == nil {
                if let end = headerEnd(bytes) {
                    let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                    let length =
                        head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                        ?? 0
                    if bytes.count >= end + length {
                        request = Array(bytes[..<(end + length)])
                        bytes.removeFirst(end + length)
                        break
                    }
                }
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { return }
                bytes.append(contentsOf: buffer[..<count])
            }
            let reply = state.withLock { state -> String? in
                state.requests.append(String(decoding: request ?? [], as: UTF8.self))
                return state.replies.isEmpty ? nil : state.replies.removeFirst()
            }
            guard let reply else {
                // Nothing scripted: hold the connection until the client gives up on it.
                while read(connection, &buffer, buffer.count) > 0 {}
                return
            }
            var written = 0
            let data = Array(reply.utf8)
            while written < data.count {
                let count = data[written...].withUnsafeBytes {
                    send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                guard count > 0 else { return }
                written += count
            }
            if reply.lowercased().contains("\r\nconnection: close\r\n") { return }
        }
    }

    private func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}

extension RestoreReply {
    /// The wait a retryable reply asks for, if any.
    fileprivate var retryAfterAsked: Double? {
        if case .retryable(_, _, let retryAfter, _) = self { retryAfter } else { nil }
    }
}

private let restoredBody = #"{"ok":true,"data":{"profileId":"profile-1","state":"subscribed","accessLevels":{}}}"#

private func reply(
    _ statusLine: String, headers: [String] = [], body: String = "", contentLength: Bool = true
) -> String {
    let length = contentLength ? ["Content-Length: \(body.utf8.count)"] : ["Connection: close"]
    return "HTTP/1.1 \(statusLine)\r\n" + (headers + length).map { "\($0)\r\n" }.joined() + "\r\n" + body
}

private func request(_ tag: Int64) -> RestoreRequest {
    RestoreRequest(tag: tag, profileId: "profile-1", originalTransactionId: "2000000261699241")
}

/// Sends requests one after the other through one client with one connection, each after the last
/// result, and returns the results in order.
private func sendInTurn(
    _ count: Int, to baseURL: String, key: String = "sk_test_key",
    _ configure: (inout ClientConfiguration) -> Void = { _ in }
) async throws -> [RestoreResult] {
    var configuration = ClientConfiguration(baseURL: baseURL, apiKey: key, userAgent: "botsi-restore/test")
    configuration.maxConnections = 1
    configure(&configuration)
    let results = ResultCollector()
    let client = try RestoreClient(configuration: configuration) { results.add($0) }
    for index in 0..<count {
        client.submit(request(Int64(index)))
        try await results.wait(for: index + 1)
    }
    client.shutdown()
    try #require(results.all.count == count)
    return results.all
}

@Suite("RestoreClient against scripted loopback replies", .serialized)
struct ClientWireTests {
    /// What goes on the wire: the key as it is, JSON both ways, the tool's user agent, and no
    /// `Expect: 100-continue` to wait on.
    @Test func theRequestCarriesTheKeyAndJSONHeaders() async throws {
        let server = try ScriptedServer([reply("200 OK", body: restoredBody)])
        defer { server.stop() }
        let results = try await sendInTurn(1, to: server.baseURL)
        #expect(results.first?.reply.code == nil)
        let sent = try #require(server.requests.first)
        #expect(sent.hasPrefix("POST /v2/purchases/apple-store/restore HTTP/1.1\r\n"), "\(sent)")
        for header in [
            "Authorization: sk_test_key", "Content-Type: application/json", "Accept: application/json",
            "User-Agent: botsi-restore/test",
        ] {
            #expect(sent.contains("\r\n\(header)\r\n"), "\(header) missing from \(sent)")
        }
        #expect(!sent.lowercased().contains("expect:"), "\(sent)")
    }

    /// A redirect is an answer, not a way on: the key must not travel where it points.
    @Test func aRedirectIsNotFollowed() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let server = try ScriptedServer([
            reply(
                "307 Temporary Redirect", headers: ["Location: \(simulator.baseURL)/v2/purchases/apple-store/restore"])
        ])
        defer { server.stop() }
        let results = try await sendInTurn(1, to: server.baseURL)
        #expect(results.first?.reply.code == "http_307")
        #expect(results.first?.httpStatus == 307)
        #expect(simulator.stats().requests == 0)
    }

    /// The reply size limit counts bytes: a reply of exactly the limit is read, one byte more is
    /// refused, whether its length was announced (Content-Length) or only found while reading (a body
    /// that ends when the connection closes).
    @Test(arguments: [true, false])
    func aReplyOfExactlyTheLimitIsReadAndOneByteMoreIsNot(announced: Bool) async throws {
        let limit = restoredBody.utf8.count
        for (maxResponseBytes, restored) in [(limit, true), (limit - 1, false)] {
            let server = try ScriptedServer([reply("200 OK", body: restoredBody, contentLength: announced)])
            defer { server.stop() }
            let result = try #require(
                try await sendInTurn(1, to: server.baseURL) { $0.maxResponseBytes = maxResponseBytes }.first)
            if restored {
                guard case .restored = result.reply else {
                    Issue.record("a reply of exactly the limit (\(limit) bytes) was not read: \(result.reply)")
                    continue
                }
            } else {
                #expect(result.reply.code == "invalid_response")
                #expect(result.httpStatus == 200)
                #expect(
                    result.reply.message
                        == "The server's 200 reply was larger than \(limit - 1) bytes and was not read.")
            }
        }
    }

    /// A refusal whose body is over the limit is still a refusal, with the wait its Retry-After asked.
    @Test func anOversizedRefusalKeepsItsStatusAndRetryAfter() async throws {
        let body = #"{"error":"slow down","code":"rate_limited","padding":"\#(String(repeating: "x", count: 200))"}"#
        for announced in [true, false] {
            let server = try ScriptedServer([
                reply("429 Too Many Requests", headers: ["Retry-After: 7"], body: body, contentLength: announced)
            ])
            defer { server.stop() }
            let result = try #require(
                try await sendInTurn(1, to: server.baseURL) { $0.maxResponseBytes = 64 }.first)
            guard case .retryable("http_429", 429, let retryAfter, _) = result.reply else {
                Issue.record("expected a retryable 429 with its body unread, got \(result.reply)")
                continue
            }
            #expect(retryAfter == 7)
        }
    }

    /// A server that never ends its header section gets an answer, not the request's whole timeout.
    @Test func endlessHeadersAreCutOffAndNamed() async throws {
        let filler = (0..<3000).map { "X-Filler-\($0): \(String(repeating: "a", count: 100))\r\n" }.joined()
        let server = try ScriptedServer(["HTTP/1.1 200 OK\r\n" + filler])
        defer { server.stop() }
        let result = try #require(try await sendInTurn(1, to: server.baseURL) { $0.requestTimeout = 20 }.first)
        #expect(result.reply.code == "invalid_response")
        #expect(result.reply.message == "The server's reply headers were larger than 262144 bytes and were not read.")
    }

    /// Retry-After is read whatever its case, and only from the final response: a 1xx's does not
    /// count, nor does the one the handle's previous request got.
    @Test func retryAfterComesFromTheFinalResponseOfThisRequest() async throws {
        let server = try ScriptedServer([
            "HTTP/1.1 100 Continue\r\nRetry-After: 9\r\n\r\n" + reply("503 Service Unavailable"),
            reply("503 Service Unavailable", headers: ["retry-after: 4"]),
            reply("503 Service Unavailable"),
            reply("503 Service Unavailable", headers: ["RETRY-AFTER:   5  "]),
        ])
        defer { server.stop() }
        let results = try await sendInTurn(4, to: server.baseURL)
        #expect(results.map(\.reply.code) == ["http_503", "http_503", "http_503", "http_503"])
        #expect(results.map(\.reply.retryAfterAsked) == [nil, 4, nil, 5])
    }

    /// The rate-limit fields reach the result (pacing reads them), `RateLimit-*` and `X-RateLimit-*`
    /// alike; the next request on the same handle does not inherit them.
    @Test func rateLimitFieldsReachTheResult() async throws {
        let server = try ScriptedServer([
            reply(
                "200 OK", headers: ["RateLimit-Remaining: 37", "x-ratelimit-limit: 100", "RateLimit-Reset:  2 "],
                body: restoredBody),
            reply("200 OK", body: restoredBody),
        ])
        defer { server.stop() }
        let results = try await sendInTurn(2, to: server.baseURL)
        let info = try #require(results.first?.rateLimit)
        #expect(info.remaining == 37)
        #expect(info.quota == 100)
        #expect(results.last?.rateLimit == nil)
    }

    /// A server that echoes the key in its error text: the result never carries it.
    @Test func aKeyEchoedByTheServerIsScrubbed() async throws {
        let key = "sk_echoed_key_0123456789"
        let server = try ScriptedServer([
            reply("500 Internal Server Error", body: #"{"error":"no shard for key \#(key)","code":"internal_error"}"#)
        ])
        defer { server.stop() }
        let result = try #require(try await sendInTurn(1, to: server.baseURL, key: key).first)
        #expect(result.reply.code == "internal_error")
        #expect(result.reply.message?.contains("no shard for key") == true)
        #expect(!String(describing: result).contains(key))
    }

    /// An https:// base URL with --proxy goes through the proxy as a CONNECT tunnel (the key stays
    /// inside the TLS it carries, never in what the proxy reads); a refused tunnel is a connection error.
    @Test func aProxyIsUsedAsATunnelThatNeverSeesTheKey() async throws {
        let proxy = try ScriptedServer([reply("403 Forbidden")])
        defer { proxy.stop() }
        let result = try #require(
            try await sendInTurn(1, to: "https://api.botsi.com", key: "sk_tunnel_key_0123456789") {
                $0.proxy = .url(proxy.baseURL)
            }.first)
        #expect(result.reply.code == "connection_error")
        let sent = try #require(proxy.requests.first)
        #expect(sent.hasPrefix("CONNECT api.botsi.com:443 HTTP/1.1\r\n"), "\(sent)")
        #expect(!sent.contains("sk_tunnel_key"), "\(sent)")
    }

    /// A host or proxy name that does not resolve is a DNS error, not a refused connection (`.invalid`
    /// never resolves; the timeouts leave a slow resolver time to say so).
    @Test func aNameThatDoesNotResolveIsADNSError() async throws {
        for proxy in [ProxySetting.none, .url("http://botsi-restore-proxy.invalid:3128")] {
            let result = try #require(
                try await sendInTurn(1, to: "https://botsi-restore-host.invalid") {
                    $0.proxy = proxy
                    $0.connectTimeout = 60
                    $0.requestTimeout = 90
                }.first)
            #expect(result.reply.code == "dns_error", "\(proxy): \(result.reply)")
        }
    }

    /// The request timeout is the configured number of seconds: a reply within it is read.
    @Test func aReplyWithinTheTimeoutIsRead() async throws {
        let simulator = try startSimulator { $0.latencyMilliseconds = 1000 }
        defer { simulator.stop() }
        let result = try #require(
            try await sendInTurn(1, to: simulator.baseURL, key: Simulator.defaultKey) { $0.requestTimeout = 10 }.first)
        guard case .restored = result.reply else {
            Issue.record("a reply after 1 s with a 10 s timeout was not read: \(result.reply)")
            return
        }
    }

    /// A request submitted to an idle client goes out at once: the submission wakes the driver
    /// rather than waiting for its next look (a second at most). Twenty in turn take far less than
    /// twenty of those looks, however slow the machine.
    @Test func requestsToAnIdleClientGoOutWithoutWaitingForTheDriversNextLook() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let started = ContinuousClock.now
        let results = try await sendInTurn(20, to: simulator.baseURL, key: Simulator.defaultKey)
        let elapsed = ContinuousClock.now - started
        #expect(results.allSatisfy { if case .restored = $0.reply { true } else { false } })
        #expect(elapsed < .seconds(10), "20 requests in turn took \(elapsed): each waited for the driver's idle look")
    }
}

@Suite struct ClientConfigurationRefusalTests {
    private static func configuration(_ change: (inout ClientConfiguration) -> Void) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            baseURL: "http://127.0.0.1:8080", apiKey: "sk_test_key", userAgent: "botsi-restore/test")
        change(&configuration)
        return configuration
    }

    @Test func aSoundConfigurationPasses() throws {
        try checkClientConfiguration(Self.configuration { _ in })
        try checkClientConfiguration(
            Self.configuration {
                $0.requestTimeout = 0.001
                $0.connectTimeout = 0.001
                $0.maxConnections = 1
                $0.maxResponseBytes = 1
            })
    }

    @Test(arguments: [
        ("", "The API key is empty"), ("user\u{7F}agent", "The user agent contains a control character"),
        ("user\tagent", "The user agent contains a control character"),
    ])
    func textThatCannotBeSentIsRefused(text: String, message: String) {
        let configuration = Self.configuration {
            if text.isEmpty { $0.apiKey = text } else { $0.userAgent = text }
        }
        #expect { try checkClientConfiguration(configuration) } throws: { error in
            (error as? ClientError)?.message.hasPrefix(message) == true
        }
    }

    @Test func limitsOfZeroAreRefused() {
        let cases: [(String, (inout ClientConfiguration) -> Void)] = [
            ("The request timeout", { $0.requestTimeout = 0 }),
            ("The connect timeout", { $0.connectTimeout = 0 }),
            ("The connection limit", { $0.maxConnections = 0 }),
            ("The response size limit", { $0.maxResponseBytes = 0 }),
        ]
        for (named, change) in cases {
            #expect { try checkClientConfiguration(Self.configuration(change)) } throws: { error in
                (error as? ClientError)?.message.hasPrefix(named) == true
            }
        }
    }
}
