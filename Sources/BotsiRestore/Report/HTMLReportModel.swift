import BotsiBasics
import BotsiJournal
import Foundation

/// Everything `report --format html` shows, as plain values: filled from the journals by
/// `HTMLReportReader` (the one place that reads them) and drawn by `HTMLPage`, which never
/// touches SQLite. Every list in it is bounded, so the page is too, whatever the journals hold.
public struct HTMLReportModel: Sendable, Equatable {
    public var generatedAt: Date
    public var toolVersion: String
    /// One per journal: the shards of one job, in the order given.
    public var journals: [JournalVerdict]
    /// The run the over-time charts and distributions show, in words ("run 3", "the latest run of
    /// each shard").
    public var runScope: String
    /// Per time bucket over that run (or those runs); nil when it made no request.
    public var series: RunSeries?
    /// The run's attempt latencies.
    public var latency = LatencyHistogram()
    /// Rows of the run by how many requests the run made for them.
    public var attemptsPerRow: [Int: Int] = [:]
    /// The run's attempts by outcome, HTTP status and code, largest first, and what the cap left out.
    public var outcomes: [AttemptOutcomeCount] = []
    public var outcomesLeftOut = 0
    /// What needs a person, per journal (only the first `HTMLReportLimits.attentionJournals`).
    public var attention: [JournalAttention] = []
    /// The newest runs of every journal (at most `HTMLReportLimits.historyRuns` in all), oldest first.
    public var history: [HistoryRun] = []

    public init(generatedAt: Date, toolVersion: String, journals: [JournalVerdict], runScope: String) {
        self.generatedAt = generatedAt
        self.toolVersion = toolVersion
        self.journals = journals
        self.runScope = runScope
    }

    /// Rows by status over every journal: the job's totals.
    public var totalStatuses: [ItemStatus: Int] {
        journals.reduce(into: [:]) { total, journal in total.merge(journal.statuses, uniquingKeysWith: +) }
    }

    public var totalInputRejections: Int { journals.reduce(0) { $0 + $1.inputRejections.values.reduce(0, +) } }
}

/// How far each list of the page goes: the caps that keep it under 1.5 MB whatever the journals hold.
public enum HTMLReportLimits {
    public static let buckets = 200
    public static let historyRuns = 100
    public static let journals = 64
    public static let attentionJournals = 4
    public static let outcomeGroups = 30
    public static let failureGroups = 12
    public static let rejectionGroups = 12
    public static let conflictGroups = 8
    public static let claimsPerGroup = 4
    public static let examples = 3
    public static let changeExamples = 2
    /// With several journals each list is shorter: groups and examples per journal.
    public static let shardGroups = 4
    public static let shardExamples = 1
    /// Scalars of a command shown (a journal's recorded base URL is in it).
    public static let commandScalars = 400
    /// Scalars of journal text shown in one cell (ids, codes, sources, paths); the rest is `…`.
    public static let textScalars = 64
    /// Scalars of a sentence of the page's own, which may hold a few bounded values.
    public static let sentenceScalars = 600
    /// Scalars of a message (the server's, a stop's sentence) or a sentence of advice.
    public static let messageScalars = 200
    /// A fact of our own words that grows with the journal's shards (a merged journal's).
    public static let factScalars = 2_000
    /// Journals whose next step the verdict spells out (status gives every one's).
    public static let nextJournals = 16
}

/// The verdict of one journal: what `status` says of it, and the facts around it.
public struct JournalVerdict: Sendable, Equatable {
    public var path: String
    public var runCount: Int
    /// When its first run started and its last one ended (or was last heard of).
    public var firstStartedAt: String?
    public var lastActivityAt: String?
    /// Rows by status: the numbers `status` prints (`StatusReport`'s snapshot).
    public var statuses: [ItemStatus: Int]
    /// Pending and in-flight rows by their last code: why the journal owes them.
    public var owed: [StatusCodeCount]
    /// Input rows the checks refused, by reason.
    public var inputRejections: [String: Int]
    public var latestRun: LatestRun?
    /// What to do next, as `status` advises it, with the command when there is one.
    public var nextStep: String
    public var nextCommand: String?
    /// The latest run was a selection that stopped (or was killed) before it was through: its
    /// final rows are owed to it without being pending.
    public var selectionLeft = false
    /// A merged journal's shard journals, each with its latest run and how it ended, in words:
    /// the latest run is one shard's.
    public var mergedShards: [String] = []

    public init(path: String, statuses: [ItemStatus: Int]) {
        self.path = path
        runCount = 0
        self.statuses = statuses
        owed = []
        inputRejections = [:]
        nextStep = "nothing to do"
    }
}

/// The latest run of a journal, in words.
public struct LatestRun: Sendable, Equatable {
    public var id: Int64
    public var startedAt: String
    public var endedAt: String?
    /// `running`, `finished`, `stopped` or `killed`.
    public var state: String
    public var exitCode: Int?
    /// What the exit status means.
    public var exitWords: String
    /// The sentence the run's summary gave for its stop, if it stopped.
    public var stopMessage: String?
    public var requests: Int
    public var retries: Int
    public var durationSeconds: Double?

    public init(id: Int64, startedAt: String, state: String, exitWords: String) {
        self.id = id
        self.startedAt = startedAt
        self.state = state
        self.exitWords = exitWords
        requests = 0
        retries = 0
    }
}

/// What a request ended in, as the over-time chart stacks it.
public enum RequestClass: Int, Sendable, CaseIterable {
    case restored, nothingToRestore, notFound, failed, transient, throttled

    public var label: String {
        switch self {
        case .restored: "restored"
        case .nothingToRestore: "nothing to restore"
        case .notFound: "profile not found"
        case .failed: "failed or refused (4xx)"
        case .transient: "5xx or transport error"
        case .throttled: "429 too many requests"
        }
    }

    /// The class of an attempt: a 429 whatever followed; a definitive answer by its status;
    /// anything else by its HTTP status (a 4xx refused, no reply or a 5xx transient).
    public static func of(outcome: AttemptOutcome, httpStatus: Int?) -> RequestClass {
        if httpStatus == 429 { return .throttled }
        switch outcome.status {
        case .restored: return .restored
        case .nothingToRestore: return .nothingToRestore
        case .profileNotFound: return .notFound
        case .failed, .rejected: return .failed
        default:
            if let httpStatus, (400..<500).contains(httpStatus), httpStatus != 408 { return .failed }
            return .transient
        }
    }
}

/// A run's requests, latency and pace per time bucket: at most `HTMLReportLimits.buckets` of
/// them, each a whole number of seconds wide, over the run's span.
public struct RunSeries: Sendable, Equatable {
    public var startMilliseconds: Int64
    public var bucketMilliseconds: Int64
    public var buckets: [SeriesBucket]
    /// `--rate` and `--concurrency` as the run was given them, when the journal keeps no pacer samples.
    public var rateOption: Double?
    public var concurrencyOption: Int?
    /// Whether the journal kept the pacer's rate limit and concurrency over time.
    public var hasPacerSamples: Bool

    public init(startMilliseconds: Int64, bucketMilliseconds: Int64, buckets: [SeriesBucket]) {
        self.startMilliseconds = startMilliseconds
        self.bucketMilliseconds = bucketMilliseconds
        self.buckets = buckets
        hasPacerSamples = false
    }
}

public struct SeriesBucket: Sendable, Equatable {
    /// Requests sent in the bucket, by `RequestClass.rawValue`.
    public var requests: [Int]
    /// Seconds the bucket covers (the last one may be cut short by the run's end).
    public var seconds: Double
    public var p50: Double?
    public var p90: Double?
    public var p99: Double?
    /// The pacer's send-rate limit (nil: unlimited) and the concurrency in force at the bucket's end.
    public var sendRateLimit: Double?
    public var concurrency: Int?

    public init(seconds: Double) {
        requests = Array(repeating: 0, count: RequestClass.allCases.count)
        self.seconds = seconds
    }

    public var total: Int { requests.reduce(0, +) }
}

/// What needs a person in one journal, each list capped, with the command that lists it all.
public struct JournalAttention: Sendable, Equatable {
    public var path: String
    /// Failed, server-rejected and owed rows by status and code, with examples.
    public var failures: [RowGroup] = []
    public var failureGroupCount = 0
    /// Input rows refused by the checks, by reason, with examples (file and line).
    public var rejections: [RowGroup] = []
    public var rejectionGroupCount = 0
    /// Transactions several profiles claim.
    public var conflicts: [ClaimGroup] = []
    public var conflictGroupCount = 0
    public var conflictRowCount = 0
    /// What changed in the chosen run against the run before it (`report --changes`).
    public var changes: ChangeSummary?

    public init(path: String) { self.path = path }
}

public struct ChangeSummary: Sendable, Equatable {
    public var earlierRun: Int64
    public var laterRun: Int64
    public var counts: [ChangeKind: Int] = [:]
    /// The first few rows of each kind.
    public var examples: [ChangeKind: [ChangeExample]] = [:]

    public init(earlierRun: Int64, laterRun: Int64) {
        self.earlierRun = earlierRun
        self.laterRun = laterRun
    }

    public var total: Int { counts.values.reduce(0, +) }
}

public struct ChangeExample: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    public var before: String
    public var after: String

    public init(profileId: String, originalTransactionId: String, before: String, after: String) {
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.before = before
        self.after = after
    }
}

/// One run of the history table.
public struct HistoryRun: Sendable, Equatable {
    /// Index into `HTMLReportModel.journals`.
    public var journal: Int
    public var line: RunLine
    /// The options that matter when comparing runs (mode, rate, concurrency, shard), in words.
    public var options: String

    public init(journal: Int, line: RunLine, options: String) {
        self.journal = journal
        self.line = line
        self.options = options
    }
}
