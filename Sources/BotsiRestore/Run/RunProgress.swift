import BotsiJournal

/// A moment of a run, for the progress line and the periodic log line.
public struct RunProgress: Sendable {
    public var elapsed: Double
    public var rowsRead: Int
    public var bytesRead: Int64
    public var totalBytes: Int64?
    public var finished: Int
    public var inFlight: Int
    public var waitingToRetry: Int
    public var requests: Int
    public var retries: Int
    public var statuses: [ItemStatus: Int]
    public var rejected: Int
    public var skipped: Int
    public var duplicates: Int
    /// Requests per second over the last few seconds.
    public var recentRate: Double
    public var stopping: String?
    /// The adaptive send-rate limit while throttled.
    public var throttledRate: Double?
    /// The cap the options set (`--rate`, or this shard's share of `--job-rate`): `RunOptions.rateCap`.
    public var rateCap: Double?
    /// The send-rate limit to show: throttling's while it throttles, else the options' cap; nil: none.
    public var sendRateLimit: Double? { throttledRate ?? rateCap }
    public var concurrencyLimit: Int
    /// Times the run slowed down on throttling replies so far.
    public var throttleEvents = 0
    /// Whether every input has been read to its end: until then an ETA covers only the rows read.
    public var inputComplete = false
    /// Rows read (or taken up from the journal) that this run has not settled yet.
    public var outstanding = 0
    /// Requests on the wire for longer than `slowAfter` seconds, and the longest wait so far: a
    /// server that holds replies keeps a slot busy until `--timeout` (`requestTimeout`).
    public var slowReplies = 0
    public var longestWait: Double = 0
    public var slowAfter: Double = 10
    public var requestTimeout: Double = 30

    /// Seconds to settle the outstanding rows at the recent rate; nil while nothing is sent.
    /// Until the input is read to its end it covers only the rows read so far.
    public var etaSeconds: Double? {
        guard recentRate > 0, outstanding > 0 else { return nil }
        return Double(outstanding) / recentRate
    }
}
