import Foundation

// The values the journal's columns hold, as types: what the runner writes and what the reports
// read. The text stored on disk is the `rawValue` (docs/journal.md): unchanged since schema v1.

extension ItemStatus: CustomStringConvertible, CodingKeyRepresentable {
    /// The text the journal stores, which is also what reports print.
    public var description: String { rawValue }
}

/// A run's `state` column.
public enum RunState: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    /// Still running, or killed before it could record its end.
    case running
    /// Read all of its input and settled what it sent.
    case finished
    /// A signal, a fatal reply, an input or journal failure, or the end of its window stopped it.
    case stopped

    public var description: String { rawValue }
}

/// An attempt's `outcome` column: the status the row took, `retry` (the request is sent again
/// after a backoff), or `kept` (a final row's resend ended without a definitive answer and the
/// row kept its status).
public enum AttemptOutcome: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    case status(ItemStatus)
    case retry
    case kept

    public init?(rawValue: String) {
        switch rawValue {
        case "retry": self = .retry
        case "kept": self = .kept
        default:
            guard let status = ItemStatus(rawValue: rawValue) else { return nil }
            self = .status(status)
        }
    }

    public var rawValue: String {
        switch self {
        case .status(let status): status.rawValue
        case .retry: "retry"
        case .kept: "kept"
        }
    }

    public var description: String { rawValue }

    /// The status the row took, when the attempt gave it one.
    public var status: ItemStatus? {
        if case .status(let status) = self { return status }
        return nil
    }
}

/// One input file of a run (`runs.inputs`): its path, the SHA-256 of the bytes read, how many, and
/// whether the run read it to the end.
public struct RunInput: Sendable, Equatable, Codable {
    public var path: String
    public var sha256: String
    public var bytes: Int64
    public var complete: Bool

    public init(path: String, sha256: String, bytes: Int64, complete: Bool) {
        self.path = path
        self.sha256 = sha256
        self.bytes = bytes
        self.complete = complete
    }

    private enum CodingKeys: String, CodingKey { case path, sha256, bytes, complete }

    // Stored as strings since schema v1 (`"bytes": "1024"`, `"complete": "false"`); kept so the
    // journals of every version read the same. Numbers and booleans are read too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(String(bytes), forKey: .bytes)
        try container.encode(String(complete), forKey: .complete)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        path = try container.decode(String.self, forKey: .path)
        sha256 = try container.decodeIfPresent(String.self, forKey: .sha256) ?? ""
        if let text = try? container.decode(String.self, forKey: .bytes) {
            guard let bytes = Int64(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .bytes, in: container, debugDescription: "bytes '\(text)' is not a number")
            }
            self.bytes = bytes
        } else {
            bytes = try container.decodeIfPresent(Int64.self, forKey: .bytes) ?? 0
        }
        if let text = try? container.decode(String.self, forKey: .complete) {
            guard let complete = Bool(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .complete, in: container, debugDescription: "complete '\(text)' is not true or false")
            }
            self.complete = complete
        } else {
            complete = try container.decodeIfPresent(Bool.self, forKey: .complete) ?? true
        }
    }
}

/// How far a running run has got (`runs.progress`, rewritten every few seconds): what `status`
/// derives its ETA from. Every field may be missing: a run that never wrote one holds `{}`.
public struct RunProgressRecord: Sendable, Equatable, Codable {
    public var rowsRead: Int?
    public var bytesRead: Int64?
    /// The size of all inputs, when every input's size is known.
    public var totalBytes: Int64?
    public var requests: Int?
    /// UTC ISO-8601 with milliseconds.
    public var updatedAt: String?

    public init(
        rowsRead: Int? = nil, bytesRead: Int64? = nil, totalBytes: Int64? = nil, requests: Int? = nil,
        updatedAt: String? = nil
    ) {
        self.rowsRead = rowsRead
        self.bytesRead = bytesRead
        self.totalBytes = totalBytes
        self.requests = requests
        self.updatedAt = updatedAt
    }
}

/// What the readers use of a run's summary (`runs.counts`, written from the run's `RunSummary`
/// when it ends): the rest of the object is there for people and for `jq`. A run that never
/// ended holds `{}`, so every field is optional.
public struct RunCounts: Sendable, Equatable, Codable {
    /// The rows the run worked on, by their status at its end.
    public var statuses: [ItemStatus: Int]?
    /// Input rows the checks refused, by reason.
    public var rejectedByReason: [String: Int]?
    public var requests: Int?
    public var retries: Int?
    /// What stopped the run, as the lifecycle table names it.
    public var stopCause: String?

    public init(
        statuses: [ItemStatus: Int]? = nil, rejectedByReason: [String: Int]? = nil, requests: Int? = nil,
        retries: Int? = nil, stopCause: String? = nil
    ) {
        self.statuses = statuses
        self.rejectedByReason = rejectedByReason
        self.requests = requests
        self.retries = retries
        self.stopCause = stopCause
    }
}

/// Encodes and decodes the JSON the `runs` table keeps in its columns, one way for every caller.
enum ColumnJSON {
    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // The values are plain records: encoding cannot fail.
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Decodes column `column` of `runs` row `row`; a value this version cannot read is a clear error.
    static func decode<T: Decodable>(
        _ type: T.Type, _ text: String, path: String, column: String, row: Int64
    ) throws(JournalError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(text.utf8))
        } catch {
            throw .unknownValue(path: path, table: "runs", column: column, row: row, value: text)
        }
    }
}

extension Journal {
    /// Reads a column that holds one of `T`'s raw values; anything else (a hand edit, another
    /// program's write) is refused with an error naming the row, never guessed.
    func decodeEnum<T: RawRepresentable>(
        _ type: T.Type, _ text: String?, table: String, column: String, row: Int64
    ) throws(JournalError) -> T where T.RawValue == String {
        guard let text, let value = T(rawValue: text) else {
            throw .unknownValue(path: path, table: table, column: column, row: row, value: text ?? "NULL")
        }
        return value
    }
}
