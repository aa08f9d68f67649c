/// Reads one input file as a stream of validated rows and rejected rows, in input order.
///
/// Memory stays bounded by `maxRecordBytes` plus a few 64 KiB buffers, whatever the number of
/// rows or the length of a line. Opening the reader already reads the CSV header (or the first
/// JSON object), so an input that is unusable as a whole fails before any request is sent.
///
/// Text: UTF-8 (with or without a byte-order mark), UTF-16 with a byte-order mark (or BOM-less
/// UTF-16 recognised by its zero bytes), or a single-byte encoding named in the options; see
/// `TextSource`. Spreadsheets, PDFs and other binaries are refused by their first bytes.
///
/// Column and key names match the accepted names (`profileId`/`profile_id`,
/// `originalTransactionId`/`original_transaction_id`, `signedTransaction`, `receipt`, or the
/// user's overrides) after trimming and ignoring ASCII case, because database exports often
/// upper-case them (`PROFILE_ID`). Two CSV columns for one field stop the reader at opening; a
/// JSON object that holds a used key twice is a `duplicate_key` row. A JSON input whose first
/// object lacks the keys is refused like a CSV header that lacks a column (`missingColumns`);
/// later objects without a key are rejected rows.
///
/// An empty input (0 bytes, only blank lines, only a header, or `[]`) is zero rows, not an
/// error: `noRows` says which once `next()` returned nil.
///
/// Records longer than `maxRecordBytes` (the bytes of a record, without its line end) are
/// rejected as `line_too_long` and skipped without being buffered; see `CSVScanner` for how an
/// unbalanced CSV quote is contained. Values of `maxRecordBytes` below 1 are taken as 1.
///
/// Not `Sendable`: one owner reads it. Create it on the thread or queue that reads it.
public final class InputReader {
    public let displayName: String
    public let format: InputFormat
    private let path: String
    private let raw: RawFile
    private let source: DecodedSource
    private let cursor: StreamCursor
    private let parser: any RecordParser
    private var closed = false
    private var records = 0

    /// `path` "-" reads standard input. `format` nil takes it from the name: `.csv`, `.txt`,
    /// `.tsv`/`.tab`, `.jsonl`/`.ndjson` or `.json`, each optionally followed by `.gz`. Gzip is
    /// recognised by its magic bytes (1f 8b), whatever the name.
    public convenience init(
        path: String, format: InputFormat?, options: InputOptions, maxRecordBytes: Int = 1 << 20
    ) throws(InputError) {
        try self.init(
            raw: RawFile(path: path), format: format, options: options, maxRecordBytes: maxRecordBytes,
            readLimit: .max)
    }

    public convenience init(
        path: String, format: InputFormat?, columns: ColumnNames = .init(), maxRecordBytes: Int = 1 << 20
    ) throws(InputError) {
        try self.init(
            path: path, format: format, options: InputOptions(columns: columns), maxRecordBytes: maxRecordBytes)
    }

    /// Reads `bytes` as if they were the content of a file named `name` (which may end in
    /// `.csv`, `.jsonl`…, and appears in messages): for tests, fuzzing and inputs built in memory.
    public convenience init(
        bytes: [UInt8], name: String, format: InputFormat?, options: InputOptions = .init(),
        maxRecordBytes: Int = 1 << 20
    ) throws(InputError) {
        try self.init(
            raw: RawFile(bytes: bytes, name: name), format: format, options: options,
            maxRecordBytes: maxRecordBytes, readLimit: .max)
    }

    /// `readLimit` caps each read from the decoded stream (tests use tiny reads).
    init(
        raw: RawFile, format: InputFormat?, options: InputOptions, maxRecordBytes: Int, readLimit: Int
    ) throws(InputError) {
        // Bounded above so that offsets past a record's start cannot overflow.
        let maxRecordBytes = min(max(maxRecordBytes, 1), 1 << 40)
        let path = raw.path
        self.path = path
        displayName = raw.displayName
        self.raw = raw
        let named = format ?? Self.format(fromName: path)
        if named == nil && path == "-" {
            raw.close()
            throw InputError(
                kind: .unknownFormat, path: path,
                message: "Cannot tell the format of stdin; pass --format csv, tsv, jsonl or json.")
        }
        do throws(InputError) {
            source = try DecodedSource(raw: raw)
            // Sniffed before the name is judged, so a spreadsheet named .xlsx hears "export it as
            // CSV" rather than "pass --format csv".
            let text = try TextSource(
                source: source, requested: options.encoding, path: path, displayName: raw.displayName)
            guard let resolved = named else {
                throw InputError(
                    kind: .unknownFormat, path: path,
                    message:
                        "Cannot tell the format of '\(path)' from its name; name it .csv, .tsv, .jsonl or .json (optionally followed by .gz), or pass --format csv|tsv|jsonl|json."
                )
            }
            self.format = resolved
            let window = ByteWindow(source: text, maxRecordBytes: maxRecordBytes, readLimit: readLimit)
            cursor = StreamCursor(window: window)
            let context = ParserContext(
                path: path, displayName: raw.displayName, format: resolved, options: options,
                maxRecordBytes: maxRecordBytes, isZeroBytes: text.isZeroBytes,
                isTranscoded: text.decoding != .utf8)
            if resolved.isDelimited {
                parser = try CSVRowParser(cursor: cursor, context: context)
            } else {
                parser = try JSONRowParser(cursor: cursor, context: context)
            }
        } catch {
            raw.close()
            throw error
        }
    }

    deinit { close() }

    /// The format a file name implies, or nil when it implies none.
    public static func format(fromName path: String) -> InputFormat? {
        var name = path.lowercased()
        if name.hasSuffix(".gz") { name.removeLast(3) }
        if name.hasSuffix(".csv") || name.hasSuffix(".txt") { return .csv }
        if name.hasSuffix(".tsv") || name.hasSuffix(".tab") { return .tsv }
        if name.hasSuffix(".jsonl") || name.hasSuffix(".ndjson") { return .jsonl }
        if name.hasSuffix(".json") { return .json }
        return nil
    }

    /// The next record, or nil at the end of the input. Throws only when the file cannot be
    /// read further (I/O error, corrupt or truncated gzip); a bad row is a `.rejected` record.
    /// One receipt that lists several purchases yields one row for each, with the same line.
    public func next() throws(InputError) -> InputRecord? {
        guard !closed else { return nil }
        let record = try parser.next()
        if record != nil { records += 1 }
        return record
    }

    /// Why the input held no row at all; nil while reading, or when it held one. Meaningful once
    /// `next()` returned nil.
    public var noRows: EmptyInput? {
        records == 0 ? parser.emptiness : nil
    }

    /// The delimiter a CSV input is read with (given, implied by `.tsv`, or detected); nil for JSON.
    public var delimiter: UInt8? { (parser as? CSVRowParser)?.delimiter }

    /// Raw bytes consumed from the file (compressed bytes for gzip input).
    public var bytesRead: Int64 { raw.bytesRead }

    /// Raw bytes behind the records returned so far: `bytesRead` less what was read ahead of them
    /// (a read fills the window, up to 256 KiB past the last record). Exact for plain UTF-8; for
    /// gzip or a transcoded file, interpolated over the decoded bytes read so far. Never falls.
    public var bytesConsumed: Int64 {
        let window = cursor.window
        let produced = window.dropped + Int64(window.end)
        guard produced > 0 else { return 0 }
        let consumed = min(window.dropped + Int64(cursor.position), produced)
        let behind = source.rawBytesBehindOutput
        let estimate = consumed == produced ? behind : Int64(Double(behind) * Double(consumed) / Double(produced))
        consumedHighWater = max(consumedHighWater, min(estimate, raw.bytesRead))
        return consumedHighWater
    }
    private var consumedHighWater: Int64 = 0

    /// The file's size when it is a regular file; nil for stdin and pipes.
    public var totalBytes: Int64? { raw.totalBytes }

    /// Whether the content was gzip-compressed.
    public var isCompressed: Bool { source.isGzip }

    /// SHA-256 of the raw bytes consumed so far: of the whole file once `next()` returned nil.
    public var sha256Hex: String { raw.hasher.hex }

    /// How much memory the read window holds, for tests of the memory bound.
    var bufferCapacityForTesting: Int { cursor.window.capacity }

    public func close() {
        guard !closed else { return }
        closed = true
        source.close()
    }
}

/// Why an input yielded no rows, said in the run's summary.
public enum EmptyInput: Sendable, Equatable {
    /// Not one byte: a failed or interrupted export looks the same, so it is a warning.
    case zeroBytes
    /// Only line ends, spaces or a byte-order mark.
    case blank
    /// A CSV header and no row.
    case headerOnly
    /// A JSON array with no element.
    case emptyArray

    /// Worth a warning rather than a plain note.
    public var isWarning: Bool { self == .zeroBytes }

    /// One sentence naming the input.
    public func message(input name: String) -> String {
        switch self {
        case .zeroBytes:
            "input '\(name)' is empty (0 bytes): no rows to send. A failed or interrupted export looks the same; check the export if rows were expected."
        case .blank: "input '\(name)' holds only blank lines: no rows to send."
        case .headerOnly: "input '\(name)' has a header and no rows: nothing to send."
        case .emptyArray: "input '\(name)' is an empty JSON array: no rows to send."
        }
    }
}

struct ParserContext {
    let path: String
    let displayName: String
    let format: InputFormat
    let options: InputOptions
    let maxRecordBytes: Int
    let isZeroBytes: Bool
    /// The text was UTF-16 or a single-byte encoding before it became UTF-8.
    let isTranscoded: Bool

    static let defaultProfileNames = ["profileId", "profile_id"]
    static let defaultTransactionNames = ["originalTransactionId", "original_transaction_id"]
    static let signedTransactionNames = ["signedTransaction", "signed_transaction"]
    static let receiptNames = ["receipt", "receipt_data"]

    var columns: ColumnNames { options.columns }
    var profileNames: [String] { columns.profile.map { [$0] } ?? Self.defaultProfileNames }
    var transactionNames: [String] { columns.transaction.map { [$0] } ?? Self.defaultTransactionNames }

    /// The names of each field, in `Field` order.
    var fieldNames: [[String]] {
        [profileNames, transactionNames, Self.signedTransactionNames, Self.receiptNames]
    }

    func tooLongMessage(line: Int) -> String {
        "Line \(line) is longer than \(maxRecordBytes) bytes; it was skipped."
    }
}

/// The fields a reader looks for, as indices into `ParserContext.fieldNames`.
enum Field: Int, CaseIterable {
    case profile, transaction, signedTransaction, receipt

    /// How a message names the field.
    var title: String {
        switch self {
        case .profile: "profile id"
        case .transaction: "original transaction id"
        case .signedTransaction: "signed transaction"
        case .receipt: "receipt"
        }
    }

    /// The flag that names the field's column, when there is one.
    var flag: String? {
        switch self {
        case .profile: "--profile-column"
        case .transaction: "--transaction-column"
        case .signedTransaction, .receipt: nil
        }
    }
}

protocol RecordParser: AnyObject {
    func next() throws(InputError) -> InputRecord?
    /// Set when opening found nothing to read (or a header only); see `InputReader.noRows`.
    var emptiness: EmptyInput? { get }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
