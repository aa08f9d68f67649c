import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiSimulator

/// The `limitRate` limiter, the rate-limit header fields that describe it, and the forms of `Retry-After`.
@Suite("Rate limit")
struct RateLimitTests {
    private static let second: UInt64 = 1_000_000_000
    private static let millisecond: UInt64 = 1_000_000

    // MARK: The limiter, on a clock the test holds

    @Test("100/s: a request every millisecond for 5 s gets exactly 100 admitted per second, in bursts")
    func limiterAdmitsItsQuotaPerWindow() {
        var limiter = RateLimiter(quota: 100, windowSeconds: 1)
        // Starts late on the uptime clock, as a real one does; the first window is [start, start + 1 s).
        let start = 7 * Self.second
        var admitted: [UInt64] = []
        for step in 0..<5000 {
            let now = start + UInt64(step) * Self.millisecond
            if limiter.admit(now: now).admitted { admitted.append(now - start) }
        }
        #expect(admitted.count == 500)
        for window in 0..<5 {
            let first = UInt64(window) * Self.second
            let expected = (0..<100).map { first + UInt64($0) * Self.millisecond }
            #expect(admitted.filter { $0 >= first && $0 < first + Self.second } == expected)
        }
        // The promise itself: no interval of one second holds more than 100 admissions.
        for (index, time) in admitted.enumerated() where index + 100 < admitted.count {
            #expect(admitted[index + 100] >= time + Self.second)
        }
    }

    @Test("refused requests take no quota, and a steady 0.97 of the rate is never refused")
    func refusalsAndSteadyPace() {
        var limiter = RateLimiter(quota: 40, windowSeconds: 1)
        for step in 0..<40 { #expect(limiter.admit(now: UInt64(step) * Self.millisecond).admitted) }
        for step in 40..<1000 { #expect(!limiter.admit(now: UInt64(step) * Self.millisecond).admitted) }
        #expect(limiter.admit(now: Self.second).admitted, "the first slot is free a whole window after its use")

        var steady = RateLimiter(quota: 40, windowSeconds: 1)
        let interval = Self.second * 100 / (40 * 97)  // 0.97 of 40/s, evenly spaced, for 30 s
        let refused = (0..<1164).filter { !steady.admit(now: UInt64($0) * interval).admitted }
        #expect(refused.isEmpty)
    }

    @Test("remaining and reset follow the window")
    func remainingAndReset() {
        var limiter = RateLimiter(quota: 3, windowSeconds: 2)
        let first = limiter.admit(now: 0)
        #expect(first.admitted && first.remaining == 2 && first.resetNanoseconds == 2 * Self.second)
        _ = limiter.admit(now: 500 * Self.millisecond)
        let third = limiter.admit(now: Self.second)
        #expect(third.admitted && third.remaining == 0 && third.resetNanoseconds == Self.second)
        let refused = limiter.admit(now: 1500 * Self.millisecond)
        #expect(!refused.admitted && refused.remaining == 0 && refused.resetNanoseconds == 500 * Self.millisecond)
        let freed = limiter.admit(now: 2 * Self.second)
        #expect(freed.admitted && freed.remaining == 0 && freed.resetNanoseconds == 500 * Self.millisecond)
    }

    @Test("rate × window must be a whole number of requests")
    func quotaValidation() {
        var options = SimulatorOptions()
        options.limitRate = 2.5
        #expect(options.limitQuota == nil)
        #expect(throws: SimulatorError.self) { try Simulator(options: options).start() }
        options.limitWindowSeconds = 2
        #expect(options.limitQuota == 5)
        options.limitRate = 0.1
        options.limitWindowSeconds = 10
        #expect(options.limitQuota == 1)
        options.limitRate = nil
        options.rateLimitHeaders = .ietf
        #expect(throws: SimulatorError.self) { try Simulator(options: options).start() }
    }

    // MARK: Over the wire, on the real clock

    /// Counts what arrives in real time; under a sanitizer's slowdown the client stalls and bursts, which
    /// says nothing about the limiter (the clock-held tests above still run there).
    @Test(
        "over 3.5 s of demand at four times the limit, 20/s admits more than three windows' worth, at most four",
        .enabled(
            if: ProcessInfo.processInfo.environment["BOTSI_UNDER_SANITIZER"] == nil,
            "request timing under a sanitizer's slowdown does not test the limiter"))
    func limiterOnTheWire() throws {
        let (simulator, port) = try startSimulatorOnPort { $0.limitRate = 20 }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let started = Date()
        var statuses: [Int] = []
        while Date().timeIntervalSince(started) < 3.5 {
            statuses.append(try client.restoreResponse("p-1", "2000000000000002").status)
            usleep(12_500)
        }
        let admitted = statuses.filter { $0 == 200 }.count
        // The windows begin at 0, 1, 2 and 3 s from the first request: at most 4 × 20 fit in 3.5 s.
        #expect(admitted <= 80)
        #expect(admitted > 60, "\(admitted) admitted in 3.5 s at 20/s")
        #expect(statuses.filter { $0 == 429 }.count == statuses.count - admitted)
        #expect(simulator.stats().rateLimited == statuses.count - admitted)
    }

    // MARK: Header fields

    private func replies(
        _ count: Int, _ configure: @escaping (inout SimulatorOptions) -> Void
    ) throws -> [TestClient.Response] {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.limitRate = 5
            options.retryAfterSeconds = 2
            configure(&options)
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        return try (0..<count).map { _ in try client.restoreResponse("p-1", "2000000000000002") }
    }

    @Test("IETF draft fields: RateLimit-Policy and RateLimit count down to the 429")
    func ietfFields() throws {
        let replies = try replies(6) { $0.rateLimitHeaders = .ietf }
        #expect(replies.map(\.status) == [200, 200, 200, 200, 200, 429])
        #expect(replies.allSatisfy { $0.headers["ratelimit-policy"] == "\"default\";q=5;w=1" })
        #expect(replies.map { $0.headers["ratelimit"] } == (0..<6).map { "\"default\";r=\(max(0, 4 - $0));t=1" })
        #expect(replies[5].headers["retry-after"] == "2")
    }

    @Test("the older RateLimit-Limit, -Remaining and -Reset fields")
    func rateLimitLimitFields() throws {
        let replies = try replies(6) { options in
            options.rateLimitHeaders = .rateLimitLimit
            options.limitRate = 2.5
            options.limitWindowSeconds = 2
        }
        #expect(replies.map(\.status) == [200, 200, 200, 200, 200, 429])
        #expect(
            replies.allSatisfy { $0.headers["ratelimit-limit"] == "5" && $0.headers["ratelimit-policy"] == "5;w=2" })
        #expect(replies.map { $0.headers["ratelimit-remaining"] } == ["4", "3", "2", "1", "0", "0"])
        #expect(replies.allSatisfy { $0.headers["ratelimit-reset"] == "2" || $0.headers["ratelimit-reset"] == "1" })
    }

    @Test("X-RateLimit fields, the reset as a UNIX time in seconds")
    func xRateLimitFields() throws {
        let before = Date().timeIntervalSince1970
        let replies = try replies(6) { $0.rateLimitHeaders = .xRateLimit }
        let after = Date().timeIntervalSince1970
        #expect(replies.map { $0.headers["x-ratelimit-remaining"] } == ["4", "3", "2", "1", "0", "0"])
        #expect(replies.allSatisfy { $0.headers["x-ratelimit-limit"] == "5" })
        for reply in replies {
            let reset = try #require(reply.headers["x-ratelimit-reset"].flatMap(Double.init))
            #expect(reset >= before.rounded(.down) + 1 && reset <= after.rounded(.up) + 1)
        }
    }

    @Test("no rate-limit fields without the option, nor on requests the limiter never saw")
    func fieldsOnlyWhereTheLimiterDecided() throws {
        let plain = try replies(1) { _ in }
        #expect(plain[0].headers.keys.allSatisfy { !$0.contains("ratelimit") })
        let (simulator, port) = try startSimulatorOnPort { options in
            options.limitRate = 5
            options.rateLimitHeaders = .ietf
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let unauthorized = try client.require(client.restore("p-1", "2000000000000002", authorization: "nope"))
        #expect(unauthorized.status == 401 && unauthorized.headers["ratelimit"] == nil)
        #expect(try client.restoreResponse("p-1", "2000000000000002").headers["ratelimit"] == "\"default\";r=4;t=1")
    }

    // MARK: Retry-After

    @Test("Retry-After as Apple writes it: a UNIX time in milliseconds")
    func retryAfterUnixMilliseconds() throws {
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let limited = try replies(6) { $0.retryAfterFormat = .unixMilliseconds }[5]
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(limited.status == 429)
        let value = try #require(limited.headers["retry-after"].flatMap { Int64($0) })
        #expect(value >= before + 2000 && value <= after + 2001)
    }

    @Test("Retry-After as a UNIX time in seconds and as an HTTP date, both rounded up")
    func retryAfterAbsoluteForms() throws {
        let before = Date().timeIntervalSince1970
        let unix = try replies(6) { $0.retryAfterFormat = .unixSeconds }[5]
        let dated = try replies(6) { $0.retryAfterFormat = .httpDate }[5]
        let after = Date().timeIntervalSince1970
        let seconds = try #require(unix.headers["retry-after"].flatMap(Double.init))
        #expect(seconds >= (before + 2).rounded(.up) && seconds <= (after + 2).rounded(.up))

        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = try #require(dated.headers["retry-after"].flatMap { formatter.date(from: $0) })
        #expect(date.timeIntervalSince1970 >= (before + 2).rounded(.up))
        #expect(date.timeIntervalSince1970 <= (after + 2).rounded(.up))
    }

    @Test("an HTTP date is IMF-fixdate, as RFC 9110's own example")
    func httpDateFormat() {
        #expect(
            String(decoding: ReplyHeaders.httpDate(epochSeconds: 784_111_777), as: UTF8.self)
                == "Sun, 06 Nov 1994 08:49:37 GMT")
        let line = ReplyHeaders.retryAfter(2, format: .httpDate, wallNanoseconds: 784_111_775_000_000_001)
        #expect(String(decoding: line, as: UTF8.self) == "Retry-After: Sun, 06 Nov 1994 08:49:38 GMT\r\n")
    }

    @Test("the format applies to injected 503s and to a fixed reply's own Retry-After too")
    func formatEverywhere() throws {
        let (simulator, port) = try startSimulatorOnPort { options in
            options.retryAfterFormat = .unixMilliseconds
            options.faultRate = 1
            options.faults = [.unavailable]
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: [.init(originalTransactionId: "2000000000000122", status: 429, retryAfterSeconds: 5)])
        }
        defer { simulator.stop() }
        let client = try TestClient(port: port)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let unavailable = try client.restoreResponse("p-1", "2000000000000002")
        let fixed = try client.restoreResponse("p-1", "2000000000000122")
        #expect(unavailable.status == 503 && fixed.status == 429)
        let unavailableValue = try #require(unavailable.headers["retry-after"].flatMap { Int64($0) })
        let fixedValue = try #require(fixed.headers["retry-after"].flatMap { Int64($0) })
        #expect(abs(unavailableValue - (now + 1000)) < 5000)
        #expect(abs(fixedValue - (now + 5000)) < 5000 && fixedValue > unavailableValue)
    }
}
