import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Every row of the outcome table (issue 2) and every hostile reply of issue 5, over loopback HTTP through
/// the real runner, client and journal, against a simulator whose scenario fixes the reply per transaction.
/// Each test checks the journal's status and code and that the run ended within a generous bound.
@Suite struct OutcomeTableTests {
    typealias Reply = SimulatorScenario.FixedReply

    /// Far above what any of these runs needs on a quiet machine; only a hang reaches it.
    private static let generousSeconds: Double = 60

    /// The rule decides every transaction without a fixed reply.
    private func harness(
        _ replies: [Reply], forbiddenKeys: [String] = [], _ configure: (inout SimulatorOptions) -> Void = { _ in }
    ) throws -> Harness {
        try Harness { options in
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule, replies: replies,
                forbiddenKeys: forbiddenKeys)
            configure(&options)
        }
    }

    /// Runs and returns the summary with the wall time it took.
    private func timedRun(
        _ harness: Harness, _ inputs: [String], key: String = Simulator.defaultKey,
        configure: (inout RunOptions) -> Void = { _ in }
    ) throws -> (RunSummary, Double) {
        let started = Date()
        let summary = try harness.run(inputs, key: key, configure: configure)
        return (summary, Date().timeIntervalSince(started))
    }

    private func expectRecord(
        _ harness: Harness, _ profile: String, _ transaction: String, status: ItemStatus, code: String?,
        httpStatus: Int? = nil, attempts: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let record = try #require(try harness.record(profile, transaction), sourceLocation: sourceLocation)
        #expect(record.status == status, sourceLocation: sourceLocation)
        #expect(record.code == code, sourceLocation: sourceLocation)
        if let httpStatus { #expect(record.httpStatus == httpStatus, sourceLocation: sourceLocation) }
        if let attempts { #expect(record.attempts == attempts, sourceLocation: sourceLocation) }
    }

    // MARK: Final statuses

    @Test func aBadRequestForTheRowIsRejectedAndRetryFailedResendsIt() throws {
        let harness = try harness([
            Reply(
                originalTransactionId: "2000000000000402", status: 400, code: "bad_request", message: "Not this app's")
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000402"), ("p-2", "2000000000000404")])
        let (summary, seconds) = try timedRun(harness, [input])
        #expect(summary.exitCode == 0)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000402", status: .rejected, code: "bad_request", httpStatus: 400)
        try expectRecord(harness, "p-2", "2000000000000404", status: .restored, code: nil)

        _ = try harness.run([input])
        #expect(harness.requests("p-1", "2000000000000402") == 1, "a plain rerun leaves a rejected row alone")
        let (retried, _) = try timedRun(harness, [input]) { $0.retryFailed = true }
        #expect(retried.exitCode == 0)
        #expect(harness.requests("p-1", "2000000000000402") == 2, "--retry-failed resends it")
        #expect(harness.requests("p-2", "2000000000000404") == 1)
    }

    @Test func otherClientErrorsFailWithTheReplysCodeOrTheStatus() throws {
        let harness = try harness([
            Reply(originalTransactionId: "2000000000000404", status: 409, code: "conflict", message: "Busy"),
            Reply(originalTransactionId: "2000000000000406", status: 422, code: "unprocessable", message: "No"),
            Reply(originalTransactionId: "2000000000000412", kind: .html, status: 418),
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [
            ("p-1", "2000000000000404"), ("p-2", "2000000000000406"), ("p-3", "2000000000000412"),
        ])
        let (summary, seconds) = try timedRun(harness, [input])
        #expect(summary.exitCode == 0, "failed is a final status")
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000404", status: .failed, code: "conflict", httpStatus: 409)
        try expectRecord(harness, "p-2", "2000000000000406", status: .failed, code: "unprocessable", httpStatus: 422)
        try expectRecord(harness, "p-3", "2000000000000412", status: .failed, code: "http_418", httpStatus: 418)
        #expect(harness.simulator.stats().requests == 3, "a failed row is not retried")
    }

    // MARK: Stopping the run

    @Test func aForbiddenKeyStopsTheRunWith77AndLeavesEveryRowPending() throws {
        let harness = try harness([], forbiddenKeys: ["other_app_key"]) { $0.latencyMilliseconds = 20 }
        defer { harness.simulator.stop() }
        let rows = (0..<50).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let (summary, seconds) = try timedRun(harness, [harness.scratch.csv(rows: rows)], key: "other_app_key") {
            $0.concurrency = 4
        }
        #expect(summary.exitCode == 77)
        #expect(seconds < Self.generousSeconds)
        #expect(harness.simulator.stats().requests <= 4)
        #expect(harness.simulator.stats().statusCounts.keys.sorted() == ["403"])
        let records = try harness.records()
        #expect(records.count == 50)
        #expect(records.allSatisfy { $0.status == .pending })
        #expect(records.contains { $0.code == "forbidden" })
        #expect(records.allSatisfy { $0.code == nil || $0.code == "forbidden" })
        #expect(summary.stopMessage?.contains("403") == true)
    }

    // MARK: Retried, then pending

    @Test func a408IsRetriedThenLeftPendingAfterMaxAttempts() throws {
        let harness = try harness([Reply(originalTransactionId: "2000000000000408", status: 408, retryAfterSeconds: 0)])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000408"), ("p-2", "2000000000000404")])
        let (summary, seconds) = try timedRun(harness, [input]) { $0.maxAttempts = 3 }
        #expect(summary.exitCode == 75)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(
            harness, "p-1", "2000000000000408", status: .pending, code: "http_408", httpStatus: 408, attempts: 3)
        #expect(harness.requests("p-1", "2000000000000408") == 3)
        try expectRecord(harness, "p-2", "2000000000000404", status: .restored, code: nil)
    }

    /// Replies that arrive but cannot be read as a restored profile: retried, then `invalid_response`.
    @Test(
        arguments: [
            Reply(originalTransactionId: "2000000000000414", kind: .hugeBody, bytes: 4 << 20),
            Reply(originalTransactionId: "2000000000000414", kind: .hugeBody, bytes: 4 << 20, contentLength: false),
            Reply(originalTransactionId: "2000000000000414", kind: .invalidJSON),
            Reply(originalTransactionId: "2000000000000414", kind: .okFalse),
            Reply(originalTransactionId: "2000000000000414", kind: .html, status: 200),
        ])
    func anUnreadable200IsRetriedThenLeftPendingAsInvalidResponse(_ reply: Reply) throws {
        let harness = try harness([reply])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000414"), ("p-2", "2000000000000404")])
        let (summary, seconds) = try timedRun(harness, [input]) { $0.maxAttempts = 3 }
        #expect(summary.exitCode == 75)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(
            harness, "p-1", "2000000000000414", status: .pending, code: "invalid_response", httpStatus: 200,
            attempts: 3)
        #expect(harness.requests("p-1", "2000000000000414") == 3)
        try expectRecord(harness, "p-2", "2000000000000404", status: .restored, code: nil)
    }

    @Test func aBodyThatNeverEndsTimesOutWithinTheTimeout() throws {
        let harness = try harness([
            Reply(originalTransactionId: "2000000000000422", kind: .neverEndingBody, intervalMilliseconds: 50)
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000422"), ("p-2", "2000000000000404")])
        let (summary, seconds) = try timedRun(harness, [input]) { options in
            options.timeout = 1
            options.maxAttempts = 2
        }
        #expect(summary.exitCode == 75)
        // Two attempts of one second each, plus backoff: a hang would run until the body stopped, i.e. never.
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000422", status: .pending, code: "timeout", attempts: 2)
        try expectRecord(harness, "p-2", "2000000000000404", status: .restored, code: nil)
    }

    /// libcurl (7.88) refuses one header line over 100 KiB; the client refuses a header section over 256 KiB.
    /// Below both, the headers are only read past and the body decides.
    @Test func aHeaderSectionOver256KiBInShortLinesIsAnInvalidResponse() throws {
        let harness = try harness([
            Reply(originalTransactionId: "2000000000000424", kind: .hugeHeaders, bytes: 1 << 20, lineBytes: 1024)
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000424")])
        let (summary, seconds) = try timedRun(harness, [input]) { $0.maxAttempts = 2 }
        #expect(summary.exitCode == 75)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000424", status: .pending, code: "invalid_response", attempts: 2)
    }

    @Test func oneHeaderLineOver100KiBIsAConnectionError() throws {
        let harness = try harness([
            Reply(originalTransactionId: "2000000000000424", kind: .hugeHeaders, bytes: 150_000, lineBytes: 150_000)
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000424")])
        let (summary, seconds) = try timedRun(harness, [input]) { $0.maxAttempts = 2 }
        #expect(summary.exitCode == 75)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000424", status: .pending, code: "connection_error", attempts: 2)
    }

    @Test func a150KBHeaderSectionInShortLinesIsReadPast() throws {
        let harness = try harness([
            Reply(originalTransactionId: "2000000000000424", kind: .hugeHeaders, bytes: 150_000, lineBytes: 1024)
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000424")])
        let (summary, seconds) = try timedRun(harness, [input])
        #expect(summary.exitCode == 0)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000424", status: .restored, code: nil, attempts: 1)
    }

    // MARK: Redirects

    @Test func aRedirectFailsAsHttp302AndItsTargetIsNeverContacted() throws {
        let elsewhere = Simulator(options: SimulatorOptions())
        _ = try elsewhere.start()
        defer { elsewhere.stop() }
        let harness = try harness([
            Reply(
                originalTransactionId: "2000000000000426", kind: .redirect, status: 302,
                location: elsewhere.baseURL + "/v2/purchases/apple-store/restore")
        ])
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p-1", "2000000000000426")])
        let (summary, seconds) = try timedRun(harness, [input])
        #expect(summary.exitCode == 0)
        #expect(seconds < Self.generousSeconds)
        try expectRecord(harness, "p-1", "2000000000000426", status: .failed, code: "http_302", httpStatus: 302)
        #expect(harness.simulator.stats().requests == 1)
        #expect(elsewhere.stats().requests == 0)
        #expect(elsewhere.stats().connectionsAccepted == 0)
    }
}
