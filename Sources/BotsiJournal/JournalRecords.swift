import BotsiBasics
import Foundation

// The values the journal's columns hold, as types: what the runner writes and what the reports
// read. The text stored on disk is the `rawValue` (docs/journal.md): unchanged since schema v1.

extension ItemStatus: CustomStringConvertible, CodingKeyRepresentable {
    /// The name reports print (and the `statuses` table gives the journal's number).
    public var description: String { rawValue }

    /// The number the journal stores (schema 5): its row in the `statuses` table.
    public var journalCode: Int64 {
        switch self {
        case .pending: 0
        case .inFlight: 1
        case .restored: 2
        case .nothingToRestore: 3
        case .profileNotFound: 4
        case .rejected: 5
        case .failed: 6
        case .held: 7
        }
    }

    /// The status whose number is `code`; nil for one this version does not know.
    public init?(journalCode code: Int64) {
        guard code >= 0, code < Int64(Self.byCode.count) else { return nil }
        self = Self.byCode[Int(code)]
    }

    private static let byCode: [ItemStatus] = [
        .pending, .inFlight, .restored, .nothingToRestore, .profileNotFound, .rejected, .failed, .held,
    ]

    /// `status IN (...)` of SQL, by number.
    static func sqlList(_ statuses: some Sequence<ItemStatus>) -> String {
        statuses.map { String($0.journalCode) }.sorted().joined(separator: ", ")
    }
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

    /// The number the journal stores: a status's, then 8 for `retry` and 9 for `kept`.
    public var journalCode: Int64 {
        switch self {
        case .status(let status): status.journalCode
        case .retry: 8
        case .kept: 9
        }
    }

    public init?(journalCode code: Int64) {
        switch code {
        case 8: self = .retry
        case 9: self = .kept
        default:
            guard let status = ItemStatus(journalCode: code) else { return nil }
            self = .status(status)
        }
    }

    /// The status the row took, when the attempt gave it one.
    public var status: ItemStatus? {
        if case .status(let status) = self { return status }
        return nil
    }
}

/// An input a run named and no run has read to its end since (`Journal.unreadInputs`): its path as
/// that run was given it, the run, and that run's recorded options (`runs.options`), which say how
/// to read it (its format and columns) and in which shard.
public struct UnreadInput: Sendable, Equatable {
    /// As the run named it.
    public var path: String
    /// Its absolute path where the run recorded one: what a command typed in another directory
    /// (`status` from anywhere) must name.
    public var commandPath: String
    public var run: Int64
    public var options: String
    /// The most bytes of it any run since the last that read it to its end had read before it
    /// stopped (`runs.inputs`); nil when none recorded how far it got (killed). A run that then
    /// reads a file of fewer bytes there to its end was given a shorter file: it says so.
    public var bytesRead: Int64?
    /// `#I/N` with `--shard I/N`, empty for one process: an input is unread within its shard.
    public var shard: String

    public init(
        path: String, commandPath: String? = nil, run: Int64, options: String, bytesRead: Int64? = nil,
        shard: String = ""
    ) {
        self.path = path
        self.commandPath = commandPath ?? path
        self.run = run
        self.options = options
        self.bytesRead = bytesRead
        self.shard = shard
    }

    /// False once the file is gone (a dated export rotated away): a command that names it exits
    /// 66, so advice names it as gone instead of reading it again.
    public var exists: Bool { access(commandPath, F_OK) == 0 }
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
    /// The limit enforced over a long window that the run's pacing knew; absent while none.
    public var longWindow: LongWindowRecord?

    public init(
        rowsRead: Int? = nil, bytesRead: Int64? = nil, totalBytes: Int64? = nil, requests: Int? = nil,
        updatedAt: String? = nil, longWindow: LongWindowRecord? = nil
    ) {
        self.rowsRead = rowsRead
        self.bytesRead = bytesRead
        self.totalBytes = totalBytes
        self.requests = requests
        self.updatedAt = updatedAt
        self.longWindow = longWindow
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rowsRead = try container.decodeIfPresent(Int.self, forKey: .rowsRead)
        bytesRead = try container.decodeIfPresent(Int64.self, forKey: .bytesRead)
        totalBytes = try container.decodeIfPresent(Int64.self, forKey: .totalBytes)
        requests = try container.decodeIfPresent(Int.self, forKey: .requests)
        updatedAt = try container.decodeIfPresent(String.self, forKey: .updatedAt)
        // Only the pacing of a next run reads it: one this version cannot read (a hand edit, a
        // later version's shape) is left out, and must not make `status` or a report fail.
        longWindow = try? container.decodeIfPresent(LongWindowRecord.self, forKey: .longWindow)
    }
}

/// A limit enforced over a long window (Apple's, over an hour), as a run's pacing knew it: the next
/// run on the journal starts at this pace instead of spending the window's budget early.
public struct LongWindowRecord: Sendable, Equatable, Codable {
    /// Seconds from one opening of the window to the next.
    public var cycleSeconds: Double
    /// Requests per second the window gave the run over a cycle.
    public var rate: Double
    /// When a run last saw the window stay closed for long and open again (UTC ISO-8601).
    public var seenAt: String
    /// The shard count of the run that recorded it (`--shard I/N`): the rate is one shard's share.
    public var shardCount: Int

    public init(cycleSeconds: Double, rate: Double, seenAt: String, shardCount: Int = 1) {
        self.cycleSeconds = cycleSeconds
        self.rate = rate
        self.seenAt = seenAt
        self.shardCount = shardCount
    }
}

/// A long window as the journal holds it, and the run that recorded it.
public struct RecordedLongWindow: Sendable, Equatable {
    public var run: Int64
    public var record: LongWindowRecord

    public init(run: Int64, record: LongWindowRecord) {
        self.run = run
        self.record = record
    }
}

/// A moment of a run for the charts of the HTML report (`run_samples`): how far it had got, and
/// the pacing in force. Written with the progress, every few seconds.
public struct RunSample: Sendable, Equatable {
    public var runID: Int64
    /// Milliseconds since 1970.
    public var at: Int64
    public var rowsRead: Int
    public var requests: Int
    public var inFlight: Int
    /// The send-rate limit the pacer set, nil while nothing paced the sends.
    public var sendRateLimit: Double?
    public var concurrency: Int

    public init(
        runID: Int64, at: Int64, rowsRead: Int, requests: Int, inFlight: Int, sendRateLimit: Double?, concurrency: Int
    ) {
        self.runID = runID
        self.at = at
        self.rowsRead = rowsRead
        self.requests = requests
        self.inFlight = inFlight
        self.sendRateLimit = sendRateLimit
        self.concurrency = concurrency
    }
}

/// A row's status with its code: what a run's summary and its record count rows by. Written
/// `status/code` where a key must be text (`restored/`, `pending/http_503`), as since schema v1.
public struct StatusCode: Hashable, Sendable, Comparable, Codable, CodingKeyRepresentable,
    CustomStringConvertible
{
    public var status: ItemStatus
    public var code: String?

    public init(_ status: ItemStatus, _ code: String?) {
        self.status = status
        self.code = code
    }

    public var description: String { "\(status.rawValue)/\(code ?? "")" }

    /// `status/code` back; nil when the status is not one of the journal's.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let status = ItemStatus(rawValue: String(parts[0])) else { return nil }
        self.init(status, parts.count > 1 && !parts[1].isEmpty ? String(parts[1]) : nil)
    }

    public static func < (left: StatusCode, right: StatusCode) -> Bool {
        (left.status.rawValue, left.code ?? "") < (right.status.rawValue, right.code ?? "")
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public var codingKey: any CodingKey { Key(stringValue: description) }

    public init?<T: CodingKey>(codingKey: T) { self.init(codingKey.stringValue) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = StatusCode(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "no status in '\(text)'")
        }
        self = value
    }
}

/// A run's record of what it did (`runs.counts`): the run writes this very type when it ends, and
/// `status`, `runs` and the metrics read it back, so a field cannot be renamed on one side only.
/// Every field is optional: a run that never ended holds `{}`, and an older version's record may
/// lack the newer fields (the JSON a version wrote before this type existed — its whole summary —
/// reads as one of these; the rest of it is ignored).
public struct RunCounts: Sendable, Equatable, Codable {
    /// The rows the run worked on (its new input rows and the owed rows it took up), by their
    /// status at its end, and by status and code.
    public var statuses: [ItemStatus: Int]?
    public var codes: [StatusCode: Int]?
    /// Input rows the checks refused, by reason (the `rejections.reason` text).
    public var rejectedByReason: [String: Int]?
    public var rowsRead: Int?
    public var newRows: Int?
    public var duplicates: Int?
    /// Rows whose final outcome was already on record, by status.
    public var alreadyFinished: [ItemStatus: Int]?
    /// Rows of other shards, skipped.
    public var otherShards: Int?
    /// Rows the journal owed to other shards than the run's (another split): not sent.
    public var otherShardsOwed: Int?
    /// Owed rows the run took up, and those it did not take up because it stopped first.
    public var owedRows: Int?
    public var owedNotTakenUp: Int?
    /// Of the final rows a stopped selection resent, those it stopped before an answer came (they
    /// waited out a backoff, or the stop's drain or the refusal that stopped it answered them):
    /// they kept their status (counted in `kept`) and are owed to the selection's next run as much
    /// as the rows it did not take up.
    public var owedUnanswered: Int?
    /// Of the pending rows it worked on, those it did not send because it stopped first.
    public var notSent: Int?
    /// Final rows it resent without a definitive answer: they kept their status.
    public var kept: Int?
    public var requests: Int?
    /// Of `requests`, those whose outcome the journal could not record (it failed, the disk
    /// filled): sent, with no attempt on record. Absent when there were none.
    public var unrecordedRequests: Int?
    public var retries: Int?
    public var durationSeconds: Double?
    /// Whether it read all of its input.
    public var inputComplete: Bool?
    /// What stopped it, and the sentence its summary gave.
    public var stopCause: StopCause?
    public var stopMessage: String?
    /// When the stop was decided (ISO 8601, UTC).
    public var stoppedAt: String?
    /// Times adaptive throttling slowed it down.
    public var throttleEvents: Int?
    /// Inputs whose every row failed the checks beside inputs that did not (the run exits 65 unless
    /// rows left pending or a stop set its status); absent when every row read was rejected, or
    /// none of an input's.
    public var rejectedInputs: [String]?

    public init() {}

    /// What a stopped selection run owes its next run: the rows it took up and did not send, and
    /// those it resent and stopped before an answer for.
    public var selectionOwed: Int { (owedNotTakenUp ?? 0) + (owedUnanswered ?? 0) }
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
