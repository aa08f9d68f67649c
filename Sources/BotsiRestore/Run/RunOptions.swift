import Foundation

/// Everything a run needs, already validated by the CLI. Holds no secret: the key is passed
/// to the runner separately and never stored.
public struct RunOptions: Sendable, Codable, Equatable {
    public var inputs: [String] = []
    public var format: String?
    /// Column names; with `noHeader`, 1-based positions ("1", "2").
    public var profileColumn: String?
    public var transactionColumn: String?
    /// How CSV input is read (see `RunOptions.inputOptions`): nil detects the delimiter, and reads
    /// UTF-8 unless a byte-order mark says otherwise.
    public var delimiter: String?
    public var encoding: String?
    public var noHeader = false
    /// Rows whose signed transaction or receipt is for another app, or whose signed transaction
    /// comes from the other environment, are rejected.
    public var bundleId: String?
    public var environment: String?
    public var journalPath = "botsi-restore.sqlite"
    public var baseURL = "https://api.botsi.com"
    public var keyEnvironmentVariable = "BOTSI_SECRET_KEY"
    /// `--key-file`: read the key from this file instead of the environment.
    public var keyFile: String?
    /// `--proxy`: the proxy for an https:// base URL (never for http://), instead of HTTPS_PROXY.
    /// Never holds credentials: argv is public, so those go in HTTPS_PROXY.
    public var proxy: String?
    /// `--no-proxy`: never a proxy, whatever HTTPS_PROXY says.
    public var noProxy = false
    public var concurrency = 8
    /// The `--concurrency` asked for, when the descriptor limit lowered `concurrency` for this
    /// run: the run's record keeps what was asked.
    public var concurrencyAsked: Int?
    public var maxAttempts = 6
    public var timeout: Double = 30
    public var connectTimeout: Double = 10
    public var backoffBase: Double = 0.5
    public var backoffCap: Double = 30
    public var retryAfterCap: Double = 120
    public var retryFailed = false
    /// Seconds: also resend restored rows whose last success is older than this.
    public var refreshOlderThan: Double?
    /// `--answered-before` (ISO-8601, UTC): with `--retry-failed` or `--refresh-older-than`, only
    /// the final rows last answered before it: the continuation of a selection run that stopped,
    /// which leaves out the rows that run did get to.
    public var answeredBefore: String?
    public var dryRun = false
    /// `--forget-input PATH` (repeatable): inputs earlier runs left unread that the journal is to
    /// stop naming (their file is gone for good); the rows read from them stay.
    public var forgetInputs: [String] = []
    /// What to do with a new pair whose transaction another profile already claims.
    public var onConflict = ConflictHandling.send
    /// Also send the journal's `held` rows (after review of `report --conflicts`).
    public var releaseHeld = false
    public var caCertificatePath: String?
    public var insecureSkipTLSVerify = false
    /// Random seed for backoff jitter; nil draws one from the system.
    public var seed: UInt64?
    /// Requests per second at most, across all workers, evenly spaced.
    public var rate: Double?
    /// Lower rate and concurrency on throttling replies, raise them slowly after.
    public var adaptive = true
    /// `--job-rate`: requests per second for the whole job, all its shards together; each shard
    /// paces at most at its share (jobRate / shardCount).
    public var jobRate: Double?
    /// `--headroom`: the percentage of a limit (stated, given or found) left unused, 0 ≤ P < 100.
    public var headroom: Double = 0

    /// The send-rate cap the options set on this process, as given: `--rate`, or this shard's share
    /// of `--job-rate` (jobRate / shardCount), whichever is lower; nil: none. What the samples, the
    /// metrics, the progress line and the page show as the limit when throttling sets none lower
    /// (the pacer holds to it less `--headroom`: `PacingConfiguration.rateCap`).
    public var rateCap: Double? { Self.rateCap(rate: rate, jobRate: jobRate, shardCount: shardCount) }

    /// The one rule for the cap, for a run's options and for those a journal recorded.
    static func rateCap(rate: Double?, jobRate: Double?, shardCount: Int) -> Double? {
        let share = jobRate.map { $0 / Double(max(1, shardCount)) }
        return [rate, share].compactMap { $0 }.min()
    }
    /// Stop dispatching at this instant (from --max-duration / --stop-at), drain, exit 75.
    public var deadline: Date?
    /// The window as it was given (`--max-duration` in seconds, `--stop-at` as HH:MM): recorded
    /// with the run so that `status` shows what was typed; the run goes by `deadline`.
    public var maxDuration: Double?
    public var stopAt: String?
    /// Stop (exit 69) when more than this percentage of the rows sent failed or ran out of
    /// attempts, once at least `minSample` rows were sent.
    public var maxFailureRate: Double = 50
    public var minSample = 1000
    /// Keep only the rows whose profileId hashes to shard `shardIndex` of `shardCount`.
    public var shardIndex = 0
    public var shardCount = 1
    /// A run from a job file names its paths absolute in the commands it advises: a job's log is
    /// read from another directory than the one it ran in (cron, systemd). Not recorded.
    public var advisesAbsolutePaths = false

    public init() {}

    /// Where the key comes from: the file when `--key-file` names one, else the environment.
    public var keySource: APIKeySource {
        keyFile.map { .file(path: $0) } ?? .environment(variable: keyEnvironmentVariable)
    }
}

/// `--on-conflict`: an original transaction belongs to one Apple account, so a pair whose
/// transaction the journal or the input already pairs with another profile is usually a data
/// error; restoring it links the two profiles.
public enum ConflictHandling: String, Sendable, Codable, CaseIterable {
    /// Restore every pair in input order (each restore links the profiles).
    case send
    /// Record every pair after a transaction's first claim as `held`, not sent.
    case hold
}
