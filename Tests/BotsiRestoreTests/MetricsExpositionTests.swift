import BotsiBasics
import BotsiJournal
import Foundation
import Testing

@testable import BotsiRestore

/// The exposition text and the rule for the last success, without a run: the end-to-end tests
/// (MetricsTests) check them with promtool, a Pushgateway and real runs.
@Suite struct MetricsExpositionTests {
    /// What a run's summary holds in the journal, read back as the journal's readers see it.
    private func counts(stopCause: StopCause?, restored: Int) -> RunCounts {
        var counts = RunCounts()
        counts.stopCause = stopCause
        counts.statuses = restored > 0 ? [.restored: restored, .pending: 3] : [.pending: 3]
        return counts
    }

    @Test func onlyExit0OrAWindowThatEndedAfterProgressIsASuccess() {
        #expect(RunMetrics.isSuccess(exitCode: 0, counts: RunCounts()))
        #expect(RunMetrics.isSuccess(exitCode: 75, counts: counts(stopCause: .windowEnd, restored: 2)))
        // The window ended before any row was finished: the backlog is not moving.
        #expect(!RunMetrics.isSuccess(exitCode: 75, counts: counts(stopCause: .windowEnd, restored: 0)))
        // Rows remain pending without a window: transient failures, not a success.
        #expect(!RunMetrics.isSuccess(exitCode: 75, counts: counts(stopCause: nil, restored: 2)))
        for code in [64, 65, 66, 69, 73, 77, 78, 130, 143] {
            #expect(!RunMetrics.isSuccess(exitCode: code, counts: counts(stopCause: .windowEnd, restored: 2)))
        }
    }

    @Test func everyFamilyHasHelpAndTypeAndLabelValuesAreEscaped() {
        var metrics = RunMetrics(journal: "odd \"name\"\\\n.sqlite")
        metrics.rowsByStatus = [.restored: 4]
        metrics.exitCode = 0
        metrics.lastSuccessAt = Date(timeIntervalSince1970: 1_700_000_000)
        let text = metrics.exposition()
        #expect(text.contains(#"botsi_restore_rows{journal="odd \"name\"\\\n.sqlite",status="restored"} 4"#))
        #expect(
            text.contains(
                #"botsi_restore_last_success_timestamp_seconds{journal="odd \"name\"\\\n.sqlite"} 1700000000"#))
        let lines = text.split(separator: "\n")
        let families = Set(lines.filter { !$0.hasPrefix("#") }.map { $0.prefix { $0 != "{" } })
        for family in families {
            #expect(lines.contains { $0.hasPrefix("# HELP \(family) ") }, "\(family)")
            #expect(lines.contains { $0.hasPrefix("# TYPE \(family) ") }, "\(family)")
        }
        // Every status has a series, at 0 before its first row.
        #expect(text.contains(#"status="failed"} 0"#))
        // No exit code while running; a rate limit only when there is one.
        #expect(!RunMetrics(journal: "j").exposition().contains("botsi_restore_exit_code"))
        #expect(!text.contains("send_rate_limit"))
    }

    /// The limit in force is the throttle's when it slowed the run, else the option's; the
    /// concurrency allowed now comes from the run's progress.
    @Test func theRateLimitShownIsTheThrottlesBeforeTheOptions() {
        var progress = RunProgress(
            elapsed: 1, rowsRead: 0, bytesRead: 0, totalBytes: nil, finished: 0, inFlight: 0, waitingToRetry: 0,
            requests: 0, retries: 0, statuses: [:], rejected: 0, skipped: 0, duplicates: 0, recentRate: 0,
            stopping: nil, throttledRate: 12.5, concurrencyLimit: 7)
        let live = RunMetrics(journal: "j", progress: progress, rateOption: 40)
        #expect(live.sendRateLimit == 12.5 && live.concurrencyLimit == 7)
        #expect(live.exposition().contains(#"botsi_restore_concurrency_limit{journal="j"} 7"#))
        progress.throttledRate = nil
        #expect(RunMetrics(journal: "j", progress: progress, rateOption: 40).sendRateLimit == 40)
        var summary = RunSummary()
        summary.finalThrottledRate = 12.5
        #expect(RunMetrics(journal: "j", summary: summary, rateOption: 40).sendRateLimit == 12.5)
        summary.finalThrottledRate = nil
        #expect(RunMetrics(journal: "j", summary: summary, rateOption: 40).sendRateLimit == 40)
    }

    /// Whole numbers print as integers while they are exact in a Double; beyond, and for the
    /// infinities, as Prometheus reads them.
    @Test func numbersAreWrittenAsPrometheusReadsThem() {
        #expect(RunMetrics.number(3) == "3" && RunMetrics.number(2.5) == "2.5")
        #expect(RunMetrics.number(1e16) == "1e+16")
        #expect(RunMetrics.number(.infinity) == "+Inf" && RunMetrics.number(-.infinity) == "-Inf")
        #expect(RunMetrics.number(.nan) == "NaN")
    }
}
