import Foundation

// The values HTMLReportQueries.swift reads for `report --format html`: plain records, kept apart
// from the queries so that a new schema changes how they are read, not what they are.

/// One attempt as the page's charts use it: when, how long, what came back.
public struct AttemptSample: Sendable, Equatable {
    /// Milliseconds since 1970 (UTC) at which the request was sent.
    public var startedAtMilliseconds: Int64
    public var durationMilliseconds: Double?
    public var httpStatus: Int?
    public var outcome: AttemptOutcome

    public init(startedAtMilliseconds: Int64, durationMilliseconds: Double?, httpStatus: Int?, outcome: AttemptOutcome)
    {
        self.startedAtMilliseconds = startedAtMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.httpStatus = httpStatus
        self.outcome = outcome
    }
}

/// What the pacer had in force during one interval of a run: its send-rate limit (nil while
/// unthrottled) and the concurrency. Today's schema keeps none (only the latest progress); the
/// page draws them when a journal does.
public struct PacerSample: Sendable, Equatable {
    public var atMilliseconds: Int64
    public var sendRateLimit: Double?
    public var concurrency: Int

    public init(atMilliseconds: Int64, sendRateLimit: Double?, concurrency: Int) {
        self.atMilliseconds = atMilliseconds
        self.sendRateLimit = sendRateLimit
        self.concurrency = concurrency
    }
}

/// A count of one run's attempts by what they ended in.
public struct AttemptOutcomeCount: Sendable, Equatable {
    public var outcome: AttemptOutcome
    public var httpStatus: Int?
    public var code: String?
    public var count: Int

    public init(outcome: AttemptOutcome, httpStatus: Int?, code: String?, count: Int) {
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.code = code
        self.count = count
    }
}

/// A row shown as an example of a group (a failure code, a rejection reason, a conflict claim).
public struct ExampleRow: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    public var status: ItemStatus
    public var code: String?
    /// `file:line` where it was last read.
    public var source: String
    public var message: String?

    public init(
        profileId: String, originalTransactionId: String, status: ItemStatus, code: String?, source: String,
        message: String?
    ) {
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.status = status
        self.code = code
        self.source = source
        self.message = message
    }
}

/// Rows of one status and code, with the first few of them.
public struct RowGroup: Sendable, Equatable {
    public var status: ItemStatus
    /// The row's code, or for input rejections the reason.
    public var code: String?
    public var count: Int
    public var examples: [ExampleRow]

    public init(status: ItemStatus, code: String?, count: Int, examples: [ExampleRow]) {
        self.status = status
        self.code = code
        self.count = count
        self.examples = examples
    }
}

/// The claims of one original transaction several profiles claim, in journal order.
public struct ClaimGroup: Sendable, Equatable {
    public var originalTransactionId: String
    public var profiles: Int
    public var claims: [ExampleRow]

    public init(originalTransactionId: String, profiles: Int, claims: [ExampleRow]) {
        self.originalTransactionId = originalTransactionId
        self.profiles = profiles
        self.claims = claims
    }
}
