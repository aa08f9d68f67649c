/// The input formats; gzip is a transport detail and not a format of its own.
public enum InputFormat: String, Sendable, CaseIterable {
    /// Delimited text: the delimiter is detected from the first line unless it is given.
    case csv
    /// Delimited text whose delimiter is a tab unless one is given (`.tsv`, `.tab`).
    case tsv
    /// One JSON object per line, or one JSON array of objects: the first byte tells which.
    case jsonl
    /// The same reader as `jsonl`; the name `.json` usually holds an array.
    case json

    var isDelimited: Bool { self == .csv || self == .tsv }
}

/// How the bytes of an input are text. A byte-order mark always wins over the setting.
public enum InputEncoding: String, Sendable, CaseIterable {
    case utf8 = "utf-8"
    /// UTF-16 with a byte-order mark, or little-endian without one (Windows' "Unicode text").
    case utf16 = "utf-16"
    /// Excel's plain "CSV" on Windows in Western Europe: 0x80–0x9F are €, quotes, dashes…
    case windows1252 = "windows-1252"
    /// ISO 8859-1: every byte is the Unicode scalar of the same value.
    case latin1
}

/// Which App Store environment a signed transaction must come from.
public enum PurchaseEnvironment: String, Sendable, CaseIterable {
    case production, sandbox
}

/// 1-based column positions, for CSV input without a header row.
public struct ColumnPositions: Sendable, Equatable {
    public var profile: Int
    public var transaction: Int

    public init(profile: Int, transaction: Int) {
        self.profile = profile
        self.transaction = transaction
    }
}

/// How to read an input beyond its format; every field's default is what the file shows.
public struct InputOptions: Sendable, Equatable {
    public var columns: ColumnNames
    /// The CSV delimiter; nil detects it from the first line (comma, semicolon, tab or pipe).
    public var delimiter: UInt8?
    /// nil: UTF-8, or what a byte-order mark (or UTF-16's zero bytes) says.
    public var encoding: InputEncoding?
    /// false: the CSV's first line is already a row, and `positions` name the columns.
    public var hasHeader: Bool
    /// Used only without a header; nil means columns 1 and 2.
    public var positions: ColumnPositions?
    /// Rows whose signed transaction or receipt names another bundle id are rejected.
    public var bundleId: String?
    /// Rows whose signed transaction comes from the other environment are rejected.
    public var environment: PurchaseEnvironment?

    public init(
        columns: ColumnNames = .init(), delimiter: UInt8? = nil, encoding: InputEncoding? = nil,
        hasHeader: Bool = true, positions: ColumnPositions? = nil, bundleId: String? = nil,
        environment: PurchaseEnvironment? = nil
    ) {
        self.columns = columns
        self.delimiter = delimiter
        self.encoding = encoding
        self.hasHeader = hasHeader
        self.positions = positions
        self.bundleId = bundleId
        self.environment = environment
    }

    /// The delimiters that detection chooses from, in the order that breaks a tie.
    public static let detectedDelimiters: [UInt8] = [0x2C, 0x3B, 0x09, 0x7C]
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
public struct InputRow: Sendable, Hashable {
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
public enum RejectionReason: String, Sendable, CaseIterable, Codable, CodingKeyRepresentable {
    case missingProfileId = "missing_profile_id"
    case missingTransactionId = "missing_transaction_id"
    case invalidProfileId = "invalid_profile_id"
    case invalidTransactionId = "invalid_transaction_id"
    case scientificNotation = "scientific_notation"
    case malformedCSV = "malformed_csv"
    case malformedJSON = "malformed_json"
    case lineTooLong = "line_too_long"
    /// A JSON object holds a key the reader uses twice (or two spellings of it).
    case duplicateKey = "duplicate_key"
    case invalidSignedTransaction = "invalid_signed_transaction"
    case invalidReceipt = "invalid_receipt"
    /// A readable receipt that lists no in-app purchase: nothing to restore from it.
    case receiptWithoutPurchases = "receipt_without_purchases"
    case wrongBundleId = "wrong_bundle_id"
    case wrongEnvironment = "wrong_environment"
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
        /// The file exists but cannot be opened or read (permissions, a directory, an I/O error).
        case unreadable
        /// Its content is damaged: gzip data that is corrupt or cut short, wherever the damage lies
        /// (sysexits 65, like a file damaged part-way).
        case damaged
        /// The format was not given and the file name does not tell it.
        case unknownFormat
        /// The content is not CSV or JSON at all (a spreadsheet, a PDF, another binary, the
        /// other format), or its header is unusable (two columns for one field).
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
