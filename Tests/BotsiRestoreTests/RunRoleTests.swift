import BotsiAPI
import BotsiBasics
import BotsiJournal
import Foundation
import Testing

@testable import BotsiRestore

/// The small roles of a run, each alone: no curl, no journal file, no simulator.
@Suite struct FailureThresholdTests {
    @Test func stopsOnlyOnceTheSampleIsInAndTheShareIsAboveTheThreshold() {
        var threshold = FailureThreshold(maxFailureRate: 50, minSample: 4)
        #expect(threshold.record(.failed) == nil)
        #expect(threshold.record(.failed) == nil)
        #expect(threshold.record(.failed) == nil, "three bad rows of three, but the sample is four")
        let stop = threshold.record(.restored)
        guard let stop, stop.cause == .failureThreshold else {
            Issue.record("expected a failure-threshold stop, got \(String(describing: stop))")
            return
        }
        let message = stop.message
        #expect(message.contains("75% of the 4 rows sent"), "\(message)")
        #expect(message.contains("threshold 50% after 4 rows"), "\(message)")
    }

    @Test func exactlyAtTheThresholdGoesOn() {
        var threshold = FailureThreshold(maxFailureRate: 50, minSample: 2)
        #expect(threshold.record(.restored) == nil)
        #expect(threshold.record(.failed) == nil, "50% is not above 50%")
    }

    @Test func rowsWithoutAnAnswerCountAsBadAndDefinitiveOnesOtherThanFailedDoNot() {
        var threshold = FailureThreshold(maxFailureRate: 10, minSample: 1)
        for status in [ItemStatus.restored, .nothingToRestore, .profileNotFound, .rejected] {
            #expect(threshold.record(status) == nil, "\(status)")
        }
        #expect(threshold.bad == 0)
        #expect(threshold.record(.pending) != nil, "1 of 5 is above 10%")
        #expect(threshold.bad == 1)
    }
}

@Suite struct ProgressTrackerTests {
    private static func summary(requests: Int) -> RunSummary {
        var summary = RunSummary()
        summary.requests = requests
        return summary
    }

    @Test func journalsEveryFiveSecondsAndReportsAtItsInterval() {
        var tracker = ProgressTracker(reportInterval: 2, journals: true, reports: true)
        let dues = [1.0, 2, 4.9, 5, 6, 10.5].map { tracker.due(at: $0) }
        #expect(dues.map(\.journal) == [false, false, false, true, false, true])
        #expect(dues.map(\.report) == [false, true, true, false, false, true])
    }

    @Test func aDryRunJournalsNoProgressAndNoCallbackMeansNoReports() {
        var tracker = ProgressTracker(reportInterval: 1, journals: false, reports: false)
        #expect((1...20).map { tracker.due(at: Double($0)) }.allSatisfy { !$0.journal && !$0.report })
    }

    @Test func theRecentRateIsMeasuredOverTheLastFewSeconds() {
        var tracker = ProgressTracker(reportInterval: 1, journals: true, reports: true)
        #expect(tracker.recentRate(at: 0, requests: 0) == 0)
        #expect(tracker.recentRate(at: 2, requests: 20) == 10)
        #expect(tracker.recentRate(at: 4, requests: 40) == 10)
        // A pause: the samples older than five seconds fall away, so the rate reads the pause.
        #expect(tracker.recentRate(at: 12, requests: 40) == 0)
        #expect(tracker.recentRate(at: 13, requests: 140) == 100, "over the last second, two samples kept")
    }

    /// A sample exactly `rateWindow` old still counts; and when samples come further apart than
    /// that (a terminal's progress every 10 s), the one before is kept, so the rate is over the gap.
    @Test func theRateWindowKeepsASampleOfItsLengthAndAlwaysTwo() {
        var tracker = ProgressTracker(reportInterval: 1, journals: true, reports: true)
        for (at, requests) in [(5.0, 50), (7.5, 60)] { _ = tracker.recentRate(at: at, requests: requests) }
        #expect(tracker.recentRate(at: 10, requests: 150) == 20, "over 5–10 s, not 7.5–10 s")
        #expect(tracker.recentRate(at: 20, requests: 250) == 10, "over 10–20 s: a rate, not 0")
    }

    /// Issue 19, item 15: the first progress line said "0 req/s" with 131 rows done.
    @Test func theFirstRateIsTheRateSinceTheStart() {
        var tracker = ProgressTracker(reportInterval: 1, journals: true, reports: true)
        #expect(tracker.recentRate(at: 1, requests: 50) == 50)
        #expect(tracker.recentRate(at: 2, requests: 150) == 75)
    }

    @Test func theSnapshotTakesEachFigureFromItsRole() {
        var tracker = ProgressTracker(reportInterval: 1, journals: true, reports: true)
        var summary = Self.summary(requests: 7)
        summary.rowsRead = 12
        summary.alreadyFinished = [.restored: 2, .failed: 1]
        summary.stopMessage = "stopping"
        let progress = tracker.snapshot(
            at: 3, summary: summary, input: InputPosition(bytesRead: 100, totalBytes: 400),
            sending: SendCounts(
                inFlight: 4, waitingToRetry: 2, throttledRate: 9.5, concurrencyLimit: 6, throttleEvents: 1))
        #expect(progress.elapsed == 3)
        #expect(progress.rowsRead == 12)
        #expect(progress.bytesRead == 100 && progress.totalBytes == 400)
        #expect(progress.inFlight == 4 && progress.waitingToRetry == 2)
        #expect(progress.requests == 7)
        #expect(progress.skipped == 3)
        #expect(progress.stopping == "stopping")
        #expect(progress.throttledRate == 9.5 && progress.concurrencyLimit == 6 && progress.throttleEvents == 1)
    }
}

@Suite struct RunStopTests {
    private static let every: [RunStop] = [
        .fatal(.unauthorized, message: "m"), .fatal(.forbidden, message: "m"),
        .fatal(.iosSettingsMissing, message: "m"),
        .fatal(.tlsFailure, message: "m"), .signal(SIGINT), .signal(SIGTERM), .journalFailure(message: "m"),
        .inputDamaged(message: "m"), .windowEnded(at: Date()), .failureThreshold(message: "m"),
    ]

    @Test func eachStopExitsWithItsDocumentedStatus() {
        #expect(Self.every.map(\.exitCode) == [77, 77, 78, 69, 130, 143, 73, 65, 75, 69])
    }

    @Test func theExitStatusAgreesWithTheCause() {
        for stop in Self.every {
            #expect(stop.cause.exitCodes.contains(stop.exitCode), "\(stop)")
        }
        #expect(Set(Self.every.map(\.cause)) == Set(StopCause.allCases), "every cause has a stop")
    }

    @Test func eachFatalReplyStopsWithTheCauseItsTableClassNames() {
        for (reason, cause) in [
            (FatalReason.unauthorized, StopCause.unauthorized), (.forbidden, .forbidden),
            (.iosSettingsMissing, .iosSettingsMissing), (.tlsFailure, .tlsFailure),
        ] {
            #expect(StopCause(reason) == cause)
            #expect(OutcomePolicy.ReplyClass(reason).stopCause == cause)
        }
    }

    @Test func aRunNothingStoppedExits0WhenEveryRowIsFinalAnd75WhenSomeAreOwed() {
        #expect(ExitCode.forRun(stoppedBy: nil, pendingRows: 0) == 0)
        #expect(ExitCode.forRun(stoppedBy: nil, pendingRows: 1) == 75, "one row owed is enough")
        #expect(ExitCode.forRun(stoppedBy: .signal(SIGTERM), pendingRows: 0) == 143)
    }

    @Test func eachStopSaysWhatStoppedTheRun() {
        #expect(RunStop.signal(SIGINT).message.hasPrefix("interrupted (SIGINT);"))
        #expect(RunStop.signal(SIGTERM).message.hasPrefix("terminated (SIGTERM);"))
        #expect(RunStop.fatal(.forbidden, message: "the key may not restore").message == "the key may not restore")
        let window = RunStop.windowEnded(at: Date(timeIntervalSince1970: 0))
        #expect(window.message.hasPrefix("the time window ended (1970-01-01T00:00:00"), "\(window.message)")
        #expect(window.exitCode == 75)
        #expect(RunStop.fatal(.iosSettingsMissing, message: "no settings").exitCode == 78)
    }
}

@Suite struct ReplyDeciderTests {
    private static func row(attempts: Int) -> RunRow {
        var row = RunRow(itemID: 1, owedSource: "in.csv:2", attemptsBefore: 0, status: .pending, readerIndex: 0)
        row.attemptsThisRun = attempts
        return row
    }

    private static func options(adaptive: Bool = true) -> RunOptions {
        var options = RunOptions()
        options.seed = 7
        options.maxAttempts = 1000
        options.adaptive = adaptive
        return options
    }

    @Test func aFailingServiceDrainsTheRetryBudgetAndThenRowsAreNotRetried() {
        var decider = ReplyDecider(options: Self.options())
        let serverError = RestoreReply.retryable(code: "http_500", httpStatus: 500, retryAfter: nil, message: nil)
        let decisions = (0..<101).map { _ in
            var row = Self.row(attempts: 1)
            return decider.decide(serverError, row: &row, isStopping: false)
        }
        #expect(decisions.prefix(100).allSatisfy { $0.reply == .retryable && $0.retryDelay != nil })
        #expect(decisions.last?.reply == .budgetExhausted)
        #expect(decisions.last?.action.next == .done)
    }

    @Test func a429AnsweredBySlowingDownCostsNoBudget() {
        var decider = ReplyDecider(options: Self.options())
        let tooMany = RestoreReply.retryable(code: "http_429", httpStatus: 429, retryAfter: nil, message: nil)
        for _ in 0..<200 {
            var row = Self.row(attempts: 1)
            #expect(decider.decide(tooMany, row: &row, isStopping: false).reply == .retryable)
        }
        #expect(decider.budget.tokens == decider.budget.capacity)
    }

    @Test func aSuccessAfterARetryPaysItsCostBack() {
        var decider = ReplyDecider(options: Self.options())
        let serverError = RestoreReply.retryable(code: "http_500", httpStatus: 500, retryAfter: nil, message: nil)
        var row = Self.row(attempts: 1)
        _ = decider.decide(serverError, row: &row, isStopping: false)
        #expect(decider.budget.tokens == decider.budget.capacity - RetryBudget.retryCost)
        let restored = RestoreReply.restored(ProfileSnapshot(state: nil, accessLevels: [:]))
        row.attemptsThisRun = 2
        _ = decider.decide(restored, row: &row, isStopping: false)
        #expect(decider.budget.tokens == decider.budget.capacity)
    }

    /// A timeout's retry costs twice a server error's (as in the AWS SDKs' standard retry mode),
    /// and a success after it pays that back, not a plain retry's cost.
    @Test func aTimeoutsRetryCostsMoreAndIsPaidBackInFull() {
        var decider = ReplyDecider(options: Self.options())
        let timeout = RestoreReply.retryable(code: "timeout", httpStatus: nil, retryAfter: nil, message: nil)
        var row = Self.row(attempts: 1)
        _ = decider.decide(timeout, row: &row, isStopping: false)
        #expect(decider.budget.tokens == decider.budget.capacity - RetryBudget.timeoutCost)
        row.attemptsThisRun = 2
        _ = decider.decide(
            RestoreReply.restored(ProfileSnapshot(state: nil, accessLevels: [:])), row: &row, isStopping: false)
        #expect(decider.budget.tokens == decider.budget.capacity)
    }

    /// A retry that cost nothing (a 429 answered by slowing down) pays nothing back on success:
    /// only a first try's token (a reviewer: it refunded a retry's 5, filling the budget that
    /// other rows' failures had drawn).
    @Test func aSuccessAfterAFreeRetryPaysBackOnlyAFirstTrysToken() {
        var decider = ReplyDecider(options: Self.options())
        let serverError = RestoreReply.retryable(code: "http_500", httpStatus: 500, retryAfter: nil, message: nil)
        var failing = Self.row(attempts: 1)
        _ = decider.decide(serverError, row: &failing, isStopping: false)
        let drawn = decider.budget.capacity - RetryBudget.retryCost
        #expect(decider.budget.tokens == drawn)
        let tooMany = RestoreReply.retryable(code: "http_429", httpStatus: 429, retryAfter: nil, message: nil)
        var refused = Self.row(attempts: 1)
        _ = decider.decide(tooMany, row: &refused, isStopping: false)
        #expect(decider.budget.tokens == drawn)
        refused.attemptsThisRun = 2
        _ = decider.decide(
            RestoreReply.restored(ProfileSnapshot(state: nil, accessLevels: [:])), row: &refused, isStopping: false)
        #expect(decider.budget.tokens == drawn + RetryBudget.successRefund)
    }
}
