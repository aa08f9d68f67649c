/// The two input formats; gzip is a transport detail and not a format of its own.
public enum InputFormat: String, Sendable {
    case csv, jsonl
}

/// Column (CSV) or key (JSON lines) names the user asked for; `nil` accepts the defaults
/// (`profileId`/`profile_id` and `originalTransactionId`/`original_transaction_id`).
public struct ColumnNames: Sendable, Equatable {
    public var profile: String?
    public var transaction: String?

    public init(profile: String? = nil, transaction: String? = nil) {
        self.profile = profile
        self.transaction = transaction
    }
}

/// A row that passed validation and may be sent.
public struct InputRow: Sendable, Equatable {
    /// Trimmed; 1–128 Unicode scalars, valid UTF-8, no control characters.
    public let profileId: String
    /// Trimmed; 1–20 ASCII digits, no leading zero, fits `UInt64`.
    public let originalTransactionId: String
    /// 1-based physical line where the record starts.
    public let line: Int

    public init(profileId: String, originalTransactionId: String, line: Int) {
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.line = line
    }
}

/// Why a row is never sent. The raw values are the journal's `code` column.
public enum RejectionReason: String, Sendable, CaseIterable {
    case missingProfileId = "missing_profile_id"
    case missingTransactionId = "missing_transaction_id"
    case invalidProfileId = "invalid_profile_id"
    case invalidTransactionId = "invalid_transaction_id"
    case scientificNotation = "scientific_notation"
    case malformedCSV = "malformed_csv"
    case malformedJSON = "malformed_json"
    case lineTooLong = "line_too_long"
}

/// A row that failed to read or to validate. Reading goes on after it.
public struct RejectedRow: Sendable, Equatable {
    /// 1-based physical line where the record starts.
    public let line: Int
    public let reason: RejectionReason
    /// One sentence for a person: what is wrong and, where it helps, what probably happened.
    public let message: String
    /// The field as read (untrimmed, invalid UTF-8 replaced by U+FFFD, cut to 256 Unicode
    /// scalars), or `nil` when the record could not be split into fields or lacks the field.
    public let profileId: String?
    /// Same as `profileId`, for the transaction field.
    public let originalTransactionId: String?

    public init(
        line: Int, reason: RejectionReason, message: String, profileId: String? = nil,
        originalTransactionId: String? = nil
    ) {
        self.line = line
        self.reason = reason
        self.message = message
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
    }
}

/// What `InputReader.next()` yields for every record of the input, in input order.
public enum InputRecord: Sendable, Equatable {
    case row(InputRow)
    case rejected(RejectedRow)

    /// The 1-based physical line where the record starts.
    public var line: Int {
        switch self {
        case .row(let row): row.line
        case .rejected(let rejected): rejected.line
        }
    }
}

/// An input that cannot be used at all. The message is a full sentence that names the file
/// and says what to do.
public struct InputError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The file does not exist (sysexits 66).
        case fileMissing
        /// The file exists but cannot be read, or its gzip data is corrupt or truncated.
        case unreadable
        /// The format was not given and the file name does not tell it.
        case unknownFormat
        /// The content is not CSV or JSON lines at all (binary, empty, the other format).
        case notTabular
        /// The CSV header (or first JSON object) lacks the profile or transaction column.
        case missingColumns
    }

    public let kind: Kind
    public let path: String
    public let message: String

    public init(kind: Kind, path: String, message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    public var description: String { message }
}
