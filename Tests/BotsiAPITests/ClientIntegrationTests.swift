import BotsiSimulator
import BotsiTestSupport
import Foundation
import Synchronization
import Testing

@testable import BotsiAPI

/// Collects results delivered on the client's driver thread.
/// Collects results delivered on the client's driver thread.
final class ResultCollector: Sendable {
    private let results = Mutex<[RestoreResult]>([])

    var count: Int { results.withLock { $0.count } }
    var all: [RestoreResult] { results.withLock { $0 } }

    func add(_ result: RestoreResult) {
        results.withLock { $0.append(result) }
    }

    /// Waits until `expected` results arrived or a generous sanity deadline passes.
    func wait(for expected: Int, seconds: Double = 60) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while count < expected && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

private func configuration(for simulator: Simulator, key: String = Simulator.defaultKey) -> ClientConfiguration {
    ClientConfiguration(baseURL: simulator.baseURL, apiKey: key, userAgent: "botsi-restore/test")
}

/// Sends `requests` through a fresh client and returns their results keyed by tag.
private func send(
    _ requests: [RestoreRequest], with configuration: ClientConfiguration
) async throws -> [Int64: RestoreResult] {
    let collector = ResultCollector()
    let client = try RestoreClient(configuration: configuration) { collector.add($0) }
    for request in requests { client.submit(request) }
    try await collector.wait(for: requests.count)
    #expect(client.inFlight == 0)
    client.shutdown()
    #expect(collector.count == requests.count)
    return Dictionary(collector.all.map { ($0.tag, $0) }, uniquingKeysWith: { first, _ in first })
}

private func sendOne(
    profileId: String = "profile-1", transactionId: String = "2000000261699241", with configuration: ClientConfiguration
) async throws -> RestoreResult {
    let results = try await send(
        [RestoreRequest(tag: 1, profileId: profileId, originalTransactionId: transactionId)], with: configuration)
    return try #require(results[1])
}

@Suite("RestoreClient over loopback against the simulator", .serialized)
struct ClientIntegrationTests {
    @Test func deterministicOutcomes() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let requests = [
            RestoreRequest(tag: 1, profileId: "profile-a", originalTransactionId: "2000000261699241"),
            RestoreRequest(tag: 2, profileId: "profile-b", originalTransactionId: "2000000261699240"),
            RestoreRequest(tag: 3, profileId: "unknown-c", originalTransactionId: "2000000261699243"),
            RestoreRequest(tag: 4, profileId: #"quote"and\backslash"#, originalTransactionId: "17"),
        ]
        let results = try await send(requests, with: configuration(for: simulator))
        guard case .restored(let snapshot) = results[1]?.reply else {
            Issue.record("expected restored, got \(String(describing: results[1]?.reply))")
            return
        }
        #expect(snapshot.profileId == "profile-a")
        #expect(results[1]?.httpStatus == 200)
        #expect(results[2]?.reply.code == "nothing_to_restore")
        #expect(results[2]?.httpStatus == 404)
        #expect(results[3]?.reply.code == "not_found")
        guard case .restored(let escaped) = results[4]?.reply else {
            Issue.record("an escaped profile id should restore, got \(String(describing: results[4]?.reply))")
            return
        }
        #expect(escaped.profileId == #"quote"and\backslash"#)
        #expect(simulator.stats().requests == 4)
    }

    /// The request goes where the base URL says, its path prefix kept and `localhost` answered by
    /// the pinned loopback address: the start line and Host header as a server reads them.
    @Test func theRequestReachesTheBaseURLsHostAndPath() async throws {
        let body = #"{"ok":true,"data":{"profileId":"profile-1","state":"subscribed","accessLevels":{}}}"#
        let server = try ScriptedServer([
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        ])
        defer { server.stop() }
        let port = server.port
        let result = try await sendOne(
            with: ClientConfiguration(
                baseURL: "http://localhost:\(port)/prefix", apiKey: "sk_test_key", userAgent: "botsi-restore/test"))
        guard case .restored(let snapshot) = result.reply else {
            Issue.record("expected restored, got \(result.reply)")
            return
        }
        #expect(snapshot.state == "subscribed")
        let request = server.requests.first ?? ""
        #expect(request.hasPrefix("POST /prefix/v2/purchases/apple-store/restore HTTP/1.1\r\n"), "\(request)")
        #expect(request.contains("\r\nHost: localhost:\(port)\r\n"), "\(request)")
        #expect(
            request.hasSuffix(#"{"profileId":"profile-1","originalTransactionId":"2000000261699241"}"#), "\(request)")
    }

    @Test func unknownKeyStopsTheRunWithoutLeakingIt() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let secret = "sk_wrong_key_0123456789"
        let result = try await sendOne(with: configuration(for: simulator, key: secret))
        guard case .fatal(.unauthorized, 401, let message) = result.reply else {
            Issue.record("expected fatal unauthorized, got \(result.reply)")
            return
        }
        #expect(!message.contains(secret))
        #expect(!String(describing: result).contains(secret))
    }

    /// The raw key succeeds (other tests) and the same key behind "Bearer " is refused:
    /// so the header carries exactly what the configuration holds.
    @Test func bearerPrefixedKeyIsRefused() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let result = try await sendOne(with: configuration(for: simulator, key: "Bearer \(Simulator.defaultKey)"))
        #expect(result.reply.code == "unauthorized")
        #expect(result.httpStatus == 401)
    }

    @Test func missingIOSSettingsStopsTheRun() async throws {
        let simulator = try startSimulator { $0.mode = .noIOSSettings }
        defer { simulator.stop() }
        let result = try await sendOne(with: configuration(for: simulator))
        guard case .fatal(.iosSettingsMissing, 400, _) = result.reply else {
            Issue.record("expected fatal ios_settings_missing, got \(result.reply)")
            return
        }
    }

    struct FaultCase: Sendable, CustomStringConvertible {
        let fault: SimulatorFault
        let codes: Set<String>
        let httpStatus: Int?
        let retryAfter: Double?
        var description: String { fault.rawValue }
    }

    @Test(arguments: [
        FaultCase(fault: .tooManyRequests, codes: ["rate_limited"], httpStatus: 429, retryAfter: 3),
        FaultCase(fault: .internalError, codes: ["internal_error"], httpStatus: 500, retryAfter: nil),
        FaultCase(fault: .badGateway, codes: ["http_502"], httpStatus: 502, retryAfter: nil),
        FaultCase(fault: .unavailable, codes: ["http_503"], httpStatus: 503, retryAfter: 3),
        FaultCase(fault: .reset, codes: ["connection_error"], httpStatus: nil, retryAfter: nil),
        FaultCase(fault: .stall, codes: ["timeout"], httpStatus: nil, retryAfter: nil),
        FaultCase(
            fault: .truncated, codes: ["invalid_response", "connection_error"], httpStatus: 200, retryAfter: nil),
    ])
    func faultsAreRetryable(_ faultCase: FaultCase) async throws {
        let simulator = try startSimulator { options in
            options.faultRate = 1
            options.faults = [faultCase.fault]
            options.retryAfterSeconds = 3
            options.stallSeconds = 5
        }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.requestTimeout = 1
        let result = try await sendOne(with: configuration)
        guard case .retryable(let code, let httpStatus, let retryAfter, _) = result.reply else {
            Issue.record("\(faultCase.fault): expected retryable, got \(result.reply)")
            return
        }
        #expect(faultCase.codes.contains(code), "\(faultCase.fault) gave \(code)")
        if faultCase.fault != .truncated {
            #expect(httpStatus == faultCase.httpStatus)
        }
        #expect(retryAfter == faultCase.retryAfter)
    }

    @Test func replyLargerThanTheLimitIsNotRead() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxResponseBytes = 16
        let result = try await sendOne(with: configuration)
        #expect(result.reply.code == "invalid_response")
        #expect(result.httpStatus == 200)
    }

    @Test func refusedConnectionIsRetryable() async throws {
        let simulator = try startSimulator()
        let configuration = configuration(for: simulator)
        simulator.stop()
        let result = try await sendOne(with: configuration)
        #expect(result.reply.code == "connection_error")
        #expect(result.httpStatus == nil)
    }

    @Test func hundredsInFlightShareBoundedConnections() async throws {
        let simulator = try startSimulator { $0.latencyMilliseconds = 50 }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 64
        let requests = (0..<300).map { index in
            RestoreRequest(tag: Int64(index), profileId: "profile-\(index)", originalTransactionId: "\(index * 10 + 1)")
        }
        let results = try await send(requests, with: configuration)
        #expect(results.count == 300)
        #expect(results.values.allSatisfy { if case .restored = $0.reply { true } else { false } })
        let stats = simulator.stats()
        #expect(stats.requests == 300)
        #expect(stats.maxInFlight <= 64)
        #expect(stats.maxInFlight > 1)
        #expect(stats.connectionsAccepted <= 64)
    }

    /// With 256 in flight and replies spread over 50-100 ms, several come back each millisecond
    /// (collected as they come, about 1.5 rounds a millisecond here). Under load the driver collects
    /// them once a round, 4% of a typical transfer's time capped at 2 ms, so its wake-ups (and the run's
    /// batches) follow the clock rather than the replies. Every transfer here takes 50 ms or more, so
    /// every round is the 2 ms cap: a bound by construction, whatever the machine's speed.
    @Test func repliesUnderLoadAreCollectedOnceARound() async throws {
        let simulator = try startSimulator {
            $0.latencyMilliseconds = 50
            $0.jitterMilliseconds = 50
        }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 256
        let requests = (0..<3000).map { index in
            RestoreRequest(tag: Int64(index), profileId: "profile-\(index)", originalTransactionId: "\(index * 10 + 1)")
        }
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration) { collector.add($0) }
        let started = ContinuousClock.now
        for request in requests { client.submit(request) }
        try await collector.wait(for: requests.count)
        let elapsed = ContinuousClock.now - started
        let rounds = client.pacedRounds
        client.shutdown()
        #expect(collector.count == requests.count)
        #expect(collector.all.allSatisfy { if case .restored = $0.reply { true } else { false } })
        let milliseconds = Int(
            elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        #expect(rounds > 0, "the driver never paused with many transfers in flight")
        #expect(
            rounds <= milliseconds / 2 + 1,
            "\(rounds) rounds in \(milliseconds) ms: replies were collected more often than once every 2 ms")
    }

    /// Requests beyond the connection cap wait in the client and start, first in first out, on the
    /// driver's thread when a transfer ends: the submitter need not be woken to refill a connection,
    /// and its submissions while every connection is busy do not wake the driver. A queued request's
    /// time is counted from when it starts, not from when it was submitted: the pacer reads the
    /// server's latency from it.
    @Test func requestsBeyondTheConnectionCapQueueInTheClientAndStartInOrder() async throws {
        let simulator = try startSimulator { $0.latencyMilliseconds = 150 }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 2
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration) { collector.add($0) }
        let request = { (index: Int) in
            RestoreRequest(tag: Int64(index), profileId: "p\(index)", originalTransactionId: "\(index)1")
        }
        client.submit(request(0))
        client.submit(request(1))
        try await Task.sleep(for: .milliseconds(30))
        let wakeUpsBefore = client.wakeUps
        for index in 2..<8 {
            client.submit(request(index))
            try await Task.sleep(for: .milliseconds(5))
        }
        let queuedWakeUps = client.wakeUps - wakeUpsBefore
        #expect(client.inFlight == 8)
        try await collector.wait(for: 8)
        client.shutdown()
        let results = collector.all
        #expect(results.count == 8)
        #expect(results.allSatisfy { if case .restored = $0.reply { true } else { false } })
        // Two connections, 150 ms each: the requests finish two by two, in the order submitted.
        #expect(
            results.map { $0.tag / 2 } == [0, 0, 1, 1, 2, 2, 3, 3], "\(results.map(\.tag)): not first in, first out")
        let longest = results.map(\.duration).max() ?? 0
        #expect(longest < 0.3, "a transfer took \(longest) s: the queued time was counted as the server's")
        let stats = simulator.stats()
        #expect(stats.maxInFlight == 2)
        #expect(stats.connectionsAccepted == 2)
        #expect(queuedWakeUps <= 1, "six submissions to a busy client woke its driver \(queuedWakeUps) times")
    }

    /// What waits behind busy connections can be taken back before it starts: no result comes for
    /// it and the server never sees it.
    @Test func queuedRequestsAreWithdrawnUnsent() async throws {
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 1
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration) { collector.add($0) }
        for index in 0..<4 {
            client.submit(RestoreRequest(tag: Int64(index), profileId: "p\(index)", originalTransactionId: "\(index)1"))
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(client.withdrawQueued() == [1, 2, 3])
        #expect(client.inFlight == 1)
        try await collector.wait(for: 1)
        try await Task.sleep(for: .milliseconds(300))
        client.shutdown()
        #expect(collector.all.map(\.tag) == [0])
        #expect(simulator.stats().requests == 1)
    }

    /// Between requests the driver sleeps in epoll_wait and curl drops the idle connection from the
    /// epoll set; each submit must wake the driver and curl must get the same connection back.
    @Test func requestsOneAtATimeReuseOneConnection() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 1
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration) { collector.add($0) }
        for index in 0..<5 {
            client.submit(
                RestoreRequest(tag: Int64(index), profileId: "p\(index)", originalTransactionId: "1\(index)1"))
            try await collector.wait(for: index + 1)
            try await Task.sleep(for: .milliseconds(50))
        }
        // One in flight at a time: replies are collected as they come, no round is paced.
        #expect(client.pacedRounds == 0)
        client.shutdown()
        #expect(collector.all.map(\.tag) == [0, 1, 2, 3, 4])
        #expect(collector.all.allSatisfy { if case .restored = $0.reply { true } else { false } })
        #expect(simulator.stats().requests == 5)
        #expect(simulator.stats().connectionsAccepted == 1)
    }

    /// An idle connection stays in the driver's epoll set (parked) so that its next request costs no
    /// system call; when the server closes it, the parked socket reports once and leaves the set,
    /// rather than waking the driver again and again until curl next looks at the connection, and the
    /// next request goes out on a new connection.
    @Test func anIdleConnectionTheServerClosesWakesTheDriverOnceAndIsReplaced() async throws {
        let simulator = try startSimulator { $0.idleTimeoutSeconds = 0.2 }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 1
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration) { collector.add($0) }
        client.submit(RestoreRequest(tag: 1, profileId: "p1", originalTransactionId: "11"))
        try await collector.wait(for: 1)
        // The server closes the idle connection after 0.2 s; the client then waits idle for 0.6 s more.
        try await Task.sleep(for: .milliseconds(300))
        let wakeUpsAfterTheClose = client.wakeUps
        try await Task.sleep(for: .milliseconds(600))
        let idleWakeUps = client.wakeUps - wakeUpsAfterTheClose
        client.submit(RestoreRequest(tag: 2, profileId: "p2", originalTransactionId: "21"))
        try await collector.wait(for: 2)
        client.shutdown()
        #expect(collector.all.map(\.tag) == [1, 2])
        #expect(collector.all.allSatisfy { if case .restored = $0.reply { true } else { false } })
        #expect(simulator.stats().connectionsAccepted == 2)
        #expect(idleWakeUps <= 3, "the idle driver woke \(idleWakeUps) times in 0.6 s: a closed socket kept reporting")
    }

    /// A reset after the request was read, on a reused connection, makes libcurl resend the request on
    /// a fresh connection by itself; the resend guard refuses that, so every request Botsi receives is
    /// one result (one attempt the caller counts and journals), and no pair is received twice.
    @Test func aResetOnAReusedConnectionIsNotResentByLibcurl() async throws {
        let simulator = try startSimulator { options in
            options.faultRate = 0.3
            options.faults = [.reset]
            options.seed = 7
        }
        defer { simulator.stop() }
        var configuration = configuration(for: simulator)
        configuration.maxConnections = 2
        let requests = (0..<200).map { index in
            RestoreRequest(tag: Int64(index), profileId: "resend-\(index)", originalTransactionId: "\(index * 10 + 1)")
        }
        let results = try await send(requests, with: configuration)
        #expect(results.count == 200)
        let stats = simulator.stats()
        #expect(stats.requests == results.count, "Botsi received more requests than the client answered")
        let repeated = stats.pairs.filter { $0.requests > 1 }.map { "\($0.profileId) ×\($0.requests)" }
        #expect(repeated.isEmpty, "received more than once: \(repeated)")
        let refused = results.values.filter { $0.reply.message?.contains("libcurl would have resent") == true }
        #expect(!refused.isEmpty, "no reset landed on a reused connection: the test proves nothing")
        #expect(refused.allSatisfy { $0.reply.code == "connection_error" && $0.httpStatus == nil })
        #expect(results.values.filter { $0.reply.code == "connection_error" }.count == stats.faultsInjected["reset"])
    }

    @Test func shutdownCancelsRequestsInFlight() async throws {
        let simulator = try startSimulator { $0.latencyMilliseconds = 20_000 }
        defer { simulator.stop() }
        let collector = ResultCollector()
        let client = try RestoreClient(configuration: configuration(for: simulator)) { collector.add($0) }
        for index in 0..<50 {
            client.submit(
                RestoreRequest(tag: Int64(index), profileId: "p\(index)", originalTransactionId: "1\(index)1"))
        }
        let deadline = Date().addingTimeInterval(10)
        while simulator.stats().inFlight < 8 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        // All 8 default connections carry a request before any reply: none waits behind another.
        #expect(simulator.stats().inFlight == 8)
        #expect(client.inFlight == 50)
        let started = Date()
        client.shutdown()
        // A sanity bound far below the 20 s latency: shutdown cancelled rather than waited.
        #expect(Date().timeIntervalSince(started) < 10)
        client.shutdown()
        client.submit(RestoreRequest(tag: 99, profileId: "late", originalTransactionId: "11"))
        #expect(client.inFlight == 0)
        #expect(collector.count == 0)
    }

    @Test func shutdownFromTheResultHandlerStopsDelivery() async throws {
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let collector = ResultCollector()
        let holder = Mutex<RestoreClient?>(nil)
        let client = try RestoreClient(configuration: configuration(for: simulator)) { result in
            collector.add(result)
            holder.withLock { $0 }?.shutdown()
        }
        holder.withLock { $0 = client }
        for index in 0..<20 {
            client.submit(
                RestoreRequest(tag: Int64(index), profileId: "p\(index)", originalTransactionId: "1\(index)1"))
        }
        try await collector.wait(for: 1)
        try await Task.sleep(for: .milliseconds(200))
        client.shutdown()
        holder.withLock { $0 = nil }
        #expect(collector.count == 1)
    }
}
