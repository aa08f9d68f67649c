/// How far a run has come, for the progress line and the journal's `runs.progress`, and when
/// each is due. Driven by the seconds since the run started, passed in, so it runs without a clock.
struct ProgressTracker {
    /// `runs.progress` is rewritten this often: enough for `status` to derive an ETA.
    static let journalInterval = 5.0
    /// The recent rate is measured over about this many seconds.
    static let rateWindow = 5.0

    /// What a housekeeping tick should do.
    struct Due: Equatable {
        var journal: Bool
        var report: Bool
    }

    let reportInterval: Double
    /// A dry run writes no progress; a run without a progress callback reports none.
    let journals: Bool
    let reports: Bool
    /// Starts with the run's start, so that the first rate is the rate since then, not 0.
    private var rateSamples: [(time: Double, requests: Int)] = [(0, 0)]
    private var lastJournaledAt = 0.0
    private var lastReportedAt = 0.0

    init(reportInterval: Double, journals: Bool, reports: Bool) {
        self.reportInterval = reportInterval
        self.journals = journals
        self.reports = reports
    }

    /// Whether progress is due for the journal and for the callback at `elapsed`; a due one
    /// counts as done.
    mutating func due(at elapsed: Double) -> Due {
        var due = Due(journal: false, report: false)
        if journals && elapsed - lastJournaledAt >= Self.journalInterval {
            lastJournaledAt = elapsed
            due.journal = true
        }
        if reports && elapsed - lastReportedAt >= reportInterval {
            lastReportedAt = elapsed
            due.report = true
        }
        return due
    }

    /// Requests per second over the last few seconds. Each call is a sample; the oldest kept is
    /// the oldest at most `rateWindow` old, and at least two are kept (so a gap longer than the
    /// window gives the rate over the gap).
    mutating func recentRate(at elapsed: Double, requests: Int) -> Double {
        rateSamples.append((elapsed, requests))
        while let first = rateSamples.first, elapsed - first.time > Self.rateWindow, rateSamples.count > 2 {
            rateSamples.removeFirst()
        }
        guard let first = rateSamples.first, elapsed - first.time > 0 else { return 0 }
        return Double(requests - first.requests) / (elapsed - first.time)
    }

    /// The run's progress at `elapsed`, from what the other roles hold; `waits` says how many
    /// requests on the wire wait on slow replies.
    mutating func snapshot(
        at elapsed: Double, summary: RunSummary, input: InputPosition, sending: SendCounts,
        waits: SlowReplies = SlowReplies()
    ) -> RunProgress {
        var progress = RunProgress(
            elapsed: elapsed, rowsRead: summary.rowsRead, bytesRead: input.bytesRead, totalBytes: input.totalBytes,
            finished: summary.finished, inFlight: sending.inFlight, waitingToRetry: sending.waitingToRetry,
            requests: summary.requests, retries: summary.retries, statuses: summary.statuses,
            rejected: summary.rejectedRows, skipped: summary.alreadyFinished.values.reduce(0, +),
            duplicates: summary.duplicates, recentRate: recentRate(at: elapsed, requests: summary.requests),
            stopping: summary.stopMessage, throttledRate: sending.throttledRate,
            concurrencyLimit: sending.concurrencyLimit, throttleEvents: sending.throttleEvents)
        progress.inputComplete = input.complete
        progress.outstanding = sending.outstanding
        progress.slowReplies = waits.count
        progress.longestWait = waits.longest
        progress.slowAfter = waits.slowAfter
        progress.requestTimeout = waits.timeout
        return progress
    }
}
