import BotsiAPI
import Foundation
import Testing

@testable import BotsiRestore

/// What the summary says about replies without HTTP (issue 19 items 11 and 12), and the waits
/// the progress line counts.
@Suite struct ReplyTallyTests {
    static let refused =
        "Couldn't connect to server: Failed to connect to 127.0.0.1 port 28099 after 0 ms: Couldn't connect to server"

    static func transport(_ code: String, _ message: String) -> RestoreReply {
        .retryable(code: code, httpStatus: nil, retryAfter: nil, message: message)
    }

    @Test func theSummaryNamesTheCommonestTransportErrorVerbatim() throws {
        var summary = RunSummary()
        summary.note(Self.transport("connection_error", Self.refused), duration: 0.001)
        summary.note(
            Self.transport("connection_error", Self.refused.replacingOccurrences(of: "after 0 ms", with: "after 3 ms")),
            duration: 0.003)
        summary.note(Self.transport("dns_error", "Couldn't resolve host name"), duration: 0.01)
        // An HTTP reply is not a transport error, however it failed.
        summary.note(.retryable(code: "http_503", httpStatus: 503, retryAfter: nil, message: "busy"), duration: 0.01)
        let common = try #require(summary.transportErrors.mostCommon)
        #expect(common.code == "connection_error" && common.count == 2)
        #expect(common.message.contains("after 3 ms"), "the latest message of the kind, as curl said it")
        let rendered = summary.render(journalPath: "j.sqlite")
        #expect(
            rendered.contains(
                "most common transport error (connection_error, 2 of the 3 requests answered without HTTP): "
                    + "Couldn't connect to server: Failed to connect to 127.0.0.1 port 28099 after 3 ms"),
            "\(rendered)")
        #expect(!RunSummary().render(journalPath: "j").contains("transport error"))
    }

    @Test func kindsIgnoreDurationsAndStayBounded() {
        #expect(
            TransportErrorTally.kind(of: "Operation timed out after 30001 milliseconds with 0 bytes received")
                == "Operation timed out after N milliseconds with 0 bytes received")
        var tally = TransportErrorTally()
        for index in 0..<100 { tally.add(code: "connection_error", message: "host\(index) refused") }
        #expect(tally.entries.count == TransportErrorTally.limit && tally.total == 100)
    }

    @Test func theSummarySaysWhenTimeoutsHeldTheSlots() {
        var summary = RunSummary()
        summary.requestTimeout = 30
        for _ in 0..<95 { summary.note(.restored(.init()), duration: 0.05) }
        let timedOut = Self.transport("timeout", "Timeout was reached: Operation timed out after 30001 milliseconds")
        for _ in 0..<5 { summary.note(timedOut, duration: 30) }
        #expect(summary.timeouts == 5)
        let rendered = summary.render(journalPath: "j.sqlite")
        #expect(
            rendered.contains(
                "requests that waited the whole --timeout 30s: 5, 97% of the slots' busy time; timeouts dominated"),
            "\(rendered)")
        var few = RunSummary()
        few.note(timedOut, duration: 1)
        for _ in 0..<10 { few.note(.restored(.init()), duration: 1) }
        let quiet = few.render(journalPath: "j")
        #expect(
            quiet.contains("--timeout 30s: 1, 9% of the slots' busy time") && !quiet.contains("dominated"), "\(quiet)")
        var half = RunSummary()
        half.note(timedOut, duration: 1)
        half.note(.restored(.init()), duration: 1)
        let even = half.render(journalPath: "j")
        #expect(even.contains("50% of the slots' busy time; timeouts dominated"), "half is dominating: \(even)")
    }

    /// A kind is its code and its message: the same words under two codes are two kinds; of kinds
    /// seen as often, the commonest is the one seen first.
    @Test func kindsAreTheirCodeAndMessageAndTiesGoToTheFirstSeen() throws {
        var tally = TransportErrorTally()
        tally.add(code: "connection_error", message: "refused")
        tally.add(code: "tls_error", message: "refused")
        tally.add(code: "tls_error", message: "refused")
        tally.add(code: "connection_error", message: "refused")
        #expect(tally.entries.map(\.count) == [2, 2] && tally.total == 4)
        #expect(try #require(tally.mostCommon).code == "connection_error")
    }

    @Test func waitsCountTheRequestsSlowerThanTheThreshold() {
        var waits = ReplyWaits()
        waits.sent(1, at: 0)
        waits.sent(2, at: 5)
        waits.sent(3, at: 14)
        #expect(waits.slow(now: 16, threshold: 10).count == 2 && waits.slow(now: 16, threshold: 10).longest == 16)
        waits.replied(1)
        #expect(waits.slow(now: 16, threshold: 10).count == 1)
        #expect(waits.slow(now: 16, threshold: 10).longest == 11)
        #expect(ReplyWaits.slowAfter(timeout: 30) == 10 && ReplyWaits.slowAfter(timeout: 4) == 2)
    }
}
