/// Reads one input file as a stream of validated rows and rejected rows, in input order.
///
/// Memory stays bounded by `maxRecordBytes` plus a few 64 KiB buffers, whatever the number of
/// rows or the length of a line. Opening the reader already reads the CSV header (or the first
/// JSON-lines object), so an input that is unusable as a whole fails before any request is sent.
///
/// Column and key names match the accepted names (`profileId`/`profile_id`,
/// `originalTransactionId`/`original_transaction_id`, or the user's overrides) after trimming
/// and ignoring ASCII case, because database exports often upper-case them (`PROFILE_ID`).
/// In a CSV header the first matching column wins; in a JSON object the last matching key wins.
/// A JSON-lines file whose first object lacks either key is refused like a CSV header that
/// lacks a column (`missingColumns`); later objects without a key are rejected rows.
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

    /// `path` "-" reads standard input. `format` nil takes it from the name: `.csv`, `.jsonl`
    /// or `.ndjson`, each optionally followed by `.gz`. Gzip is recognised by its magic bytes
    /// (1f 8b), whatever the name.
    public convenience init(
        path: String, format: InputFormat?, columns: ColumnNames = .init(), maxRecordBytes: Int = 1 << 20
    ) throws(InputError) {
        try self.init(
            raw: RawFile(path: path), format: format, columns: columns, maxRecordBytes: maxRecordBytes,
            readLimit: .max)
    }

    /// Reads `bytes` as if they were the content of a file named `name` (which may end in
    /// `.csv`, `.jsonl`…, and appears in messages): for tests, fuzzing and inputs built in memory.
    public convenience init(
        bytes: [UInt8], name: String, format: InputFormat?, columns: ColumnNames = .init(),
        maxRecordBytes: Int = 1 << 20
    ) throws(InputError) {
        try self.init(
            raw: RawFile(bytes: bytes, name: name), format: format, columns: columns,
            maxRecordBytes: maxRecordBytes, readLimit: .max)
    }

    /// `readLimit` caps each read from the decoded stream (tests use tiny reads).
    init(
        raw: RawFile, format: InputFormat?, columns: ColumnNames, maxRecordBytes: Int, readLimit: Int
    ) throws(InputError) {
        // Bounded above so that offsets past a record's start cannot overflow.
        let maxRecordBytes = min(max(maxRecordBytes, 1), 1 << 40)
        let path = raw.path
        self.path = path
        displayName = raw.displayName
        self.raw = raw
        guard let resolved = format ?? Self.format(fromName: path) else {
            raw.close()
            let message =
                path == "-"
                ? "Cannot tell the format of stdin; pass --format csv or --format jsonl."
                : "Cannot tell the format of '\(path)' from its name; name it .csv, .jsonl or .ndjson (optionally followed by .gz), or pass --format csv|jsonl."
            throw InputError(kind: .unknownFormat, path: path, message: message)
        }
        self.format = resolved
        do {
            source = try DecodedSource(raw: raw)
            let window = ByteWindow(source: source, maxRecordBytes: maxRecordBytes, readLimit: readLimit)
            cursor = StreamCursor(window: window)
            try cursor.skipByteOrderMark()
            let context = ParserContext(
                path: path, displayName: displayName, columns: columns, maxRecordBytes: maxRecordBytes)
            switch resolved {
            case .csv:
                parser = try CSVRowParser(cursor: cursor, context: context)
            case .jsonl:
                parser = try JSONLinesRowParser(cursor: cursor, context: context)
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
        if name.hasSuffix(".csv") { return .csv }
        if name.hasSuffix(".jsonl") || name.hasSuffix(".ndjson") { return .jsonl }
        return nil
    }

    /// The next record, or nil at the end of the input. Throws only when the file cannot be
    /// read further (I/O error, corrupt or truncated gzip); a bad row is a `.rejected` record.
    public func next() throws(InputError) -> InputRecord? {
        guard !closed else { return nil }
        return try parser.next()
    }

    /// Raw bytes consumed from the file (compressed bytes for gzip input).
    public var bytesRead: Int64 { raw.bytesRead }

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

struct ParserContext {
    let path: String
    let displayName: String
    let columns: ColumnNames
    let maxRecordBytes: Int

    static let defaultProfileNames = ["profileId", "profile_id"]
    static let defaultTransactionNames = ["originalTransactionId", "original_transaction_id"]

    var profileNames: [String] { columns.profile.map { [$0] } ?? Self.defaultProfileNames }
    var transactionNames: [String] { columns.transaction.map { [$0] } ?? Self.defaultTransactionNames }

    func tooLongMessage(line: Int) -> String {
        "Line \(line) is longer than \(maxRecordBytes) bytes; it was skipped."
    }
}

protocol RecordParser: AnyObject {
    func next() throws(InputError) -> InputRecord?
}

// MARK: - CSV

final class CSVRowParser: RecordParser {
    private let scanner: CSVScanner
    private let context: ParserContext
    private let profileColumn: Int
    private let transactionColumn: Int
    private let profileScratch = ScratchBuffer()
    private let transactionScratch = ScratchBuffer()

    init(cursor: StreamCursor, context: ParserContext) throws(InputError) {
        self.context = context
        scanner = CSVScanner(cursor: cursor, maxRecordBytes: context.maxRecordBytes)
        scanner.collectsAllFields = true
        scanner.firstWanted = -1
        scanner.secondWanted = -1
        let name = context.displayName
        func notTabular(_ what: String) -> InputError {
            InputError(
                kind: .notTabular, path: context.path, message: "Input '\(name)' is not a usable CSV file: \(what)")
        }
        if try cursor.skipLineEnds() {
            let first = cursor.window.base[cursor.position]
            if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
                throw notTabular("it looks like JSON; name it .jsonl or pass --format jsonl.")
            }
        }
        guard let header = try scanner.next() else {
            throw notTabular(
                "it is empty; a CSV input needs a header row naming its columns (profileId,originalTransactionId).")
        }
        let headerLine: Int
        switch header {
        case .tooLong(let line):
            throw notTabular(
                "its header (line \(line)) is longer than \(context.maxRecordBytes) bytes; is it a CSV file?")
        case .malformed(let line, let message):
            throw notTabular("its header (line \(line)) is malformed. \(message)")
        case .fields(let line, _, _, _):
            headerLine = line
        }
        let base = cursor.window.base + scanner.recordStart
        var names: [String] = []
        names.reserveCapacity(scanner.allSpans.count)
        for span in scanner.allSpans {
            let bytes = Self.collapse(span, base: base, scratch: profileScratch)
            guard let name = String(validating: bytes, as: UTF8.self), !name.utf8.contains(0) else {
                throw notTabular(
                    "its first line is not text (binary data or another encoding than UTF-8); give a UTF-8 CSV file with a header row."
                )
            }
            names.append(name.trimmingWhitespace())
        }
        let profile = Self.column(matching: context.profileNames, in: names)
        let transaction = Self.column(matching: context.transactionNames, in: names)
        guard let profile, let transaction else {
            throw InputError(
                kind: .missingColumns, path: context.path,
                message: Self.missingColumnsMessage(
                    context: context, names: names, line: headerLine, profileFound: profile != nil,
                    transactionFound: transaction != nil))
        }
        profileColumn = profile
        transactionColumn = transaction
        scanner.collectsAllFields = false
        scanner.firstWanted = profile
        scanner.secondWanted = transaction
    }

    func next() throws(InputError) -> InputRecord? {
        guard let record = try scanner.next() else { return nil }
        switch record {
        case .tooLong(let line):
            return .rejected(RejectedRow(line: line, reason: .lineTooLong, message: context.tooLongMessage(line: line)))
        case .malformed(let line, let message):
            return .rejected(RejectedRow(line: line, reason: .malformedCSV, message: message))
        case .fields(let line, let count, let profileSpan, let transactionSpan):
            let base = scanner.cursor.window.base + scanner.recordStart
            guard let profileSpan, let transactionSpan else {
                let needed = max(profileColumn, transactionColumn) + 1
                let read = { (span: FieldSpan?, scratch: ScratchBuffer) -> String? in
                    span.flatMap {
                        RowValidation.rawValue(.text(Self.collapse($0, base: base, scratch: scratch)))
                    }
                }
                return .rejected(
                    RejectedRow(
                        line: line, reason: .malformedCSV,
                        message:
                            "Line \(line) has \(count) field\(count == 1 ? "" : "s") but needs at least \(needed) to reach the profile and transaction columns.",
                        profileId: read(profileSpan, profileScratch),
                        originalTransactionId: read(transactionSpan, transactionScratch)))
            }
            return RowValidation.record(
                line: line,
                profile: .text(Self.collapse(profileSpan, base: base, scratch: profileScratch)),
                transaction: .text(Self.collapse(transactionSpan, base: base, scratch: transactionScratch)))
        }
    }

    /// The field's bytes, with `""` collapsed to `"` (into `scratch`) when needed.
    static func collapse(
        _ span: FieldSpan, base: UnsafeMutablePointer<UInt8>, scratch: ScratchBuffer
    ) -> UnsafeBufferPointer<UInt8> {
        let content = UnsafeBufferPointer(start: base + span.start, count: span.end - span.start)
        guard span.hasDoubledQuotes else { return content }
        let output = scratch.reserve(content.count)
        var written = 0
        var index = 0
        while index < content.count {
            output[written] = content[index]
            written += 1
            index += content[index] == ASCII.quote ? 2 : 1
        }
        return UnsafeBufferPointer(start: output, count: written)
    }

    static func column(matching accepted: [String], in names: [String]) -> Int? {
        let wanted = Set(accepted.map { $0.trimmingWhitespace().lowercasedASCII() })
        return names.firstIndex { wanted.contains($0.lowercasedASCII()) }
    }

    static func missingColumnsMessage(
        context: ParserContext, names: [String], line: Int, profileFound: Bool, transactionFound: Bool
    ) -> String {
        var missing: [String] = []
        if !profileFound { missing.append("the profile column (\(context.profileNames.joined(separator: " or ")))") }
        if !transactionFound {
            missing.append("the transaction column (\(context.transactionNames.joined(separator: " or ")))")
        }
        let shown = names.prefix(20).map { RowValidation.display($0) }.joined(separator: ", ")
        let more = names.count > 20 ? " and \(names.count - 20) more" : ""
        var message =
            "Input '\(context.displayName)' lacks \(missing.joined(separator: " and ")) in its header on line \(line), which has \(shown)\(more); name the columns with --profile-column and --transaction-column."
        if names.count == 1, let only = names.first, only.contains(";") || only.contains("\t") {
            message +=
                " The header seems to be separated by \(only.contains(";") ? "semicolons" : "tabs"); export the file with commas."
        }
        return message
    }
}

// MARK: - JSON lines

final class JSONLinesRowParser: RecordParser {
    private let cursor: StreamCursor
    private let context: ParserContext
    private let parser: JSONLineParser
    private let keyScratch = ScratchBuffer()
    private let profileScratch = ScratchBuffer()
    private let transactionScratch = ScratchBuffer()
    /// The first record, read while opening.
    private var firstRecord: InputRecord?

    init(cursor: StreamCursor, context: ParserContext) throws(InputError) {
        self.cursor = cursor
        self.context = context
        parser = JSONLineParser(profileKeys: context.profileNames, transactionKeys: context.transactionNames)
        let name = context.displayName
        func notJSONLines(_ what: String) -> InputError {
            InputError(
                kind: .notTabular, path: context.path,
                message: "Input '\(name)' is not a usable JSON-lines file: \(what)")
        }
        guard let first = try nextLine() else {
            throw notJSONLines(
                "it is empty; give one JSON object per line, such as {\"profileId\": \"…\", \"originalTransactionId\": \"…\"}."
            )
        }
        switch first {
        case .tooLong(let line):
            throw notJSONLines("its first line (\(line)) is longer than \(context.maxRecordBytes) bytes.")
        case .text(let line, let bytes):
            let object: JSONObjectLine
            do {
                object = try parser.parse(bytes, collectingKeys: true, scratch: keyScratch)
            } catch {
                var hint = ""
                if bytes.contains(ASCII.comma) && !bytes.contains(UInt8(ascii: "{")) {
                    hint = " It looks like CSV; name it .csv or pass --format csv."
                }
                throw notJSONLines(
                    "line \(line) is not a JSON object (\(error.problem), column \(error.offset + 1)).\(hint)")
            }
            guard object.profile != nil, object.transaction != nil else {
                var missing: [String] = []
                if object.profile == nil { missing.append(context.profileNames.joined(separator: " or ")) }
                if object.transaction == nil { missing.append(context.transactionNames.joined(separator: " or ")) }
                let keys = object.keys.prefix(20).map { RowValidation.display($0) }.joined(separator: ", ")
                throw InputError(
                    kind: .missingColumns, path: context.path,
                    message:
                        "Input '\(name)' lacks the key \(missing.joined(separator: " and ")) in its first object (line \(line)), which has \(keys.isEmpty ? "no keys" : keys); name the keys with --profile-column and --transaction-column."
                )
            }
            firstRecord = record(object, line: line, bytes: bytes)
        }
    }

    func next() throws(InputError) -> InputRecord? {
        if let first = firstRecord {
            firstRecord = nil
            return first
        }
        guard let line = try nextLine() else { return nil }
        switch line {
        case .tooLong(let number):
            return .rejected(
                RejectedRow(line: number, reason: .lineTooLong, message: context.tooLongMessage(line: number)))
        case .text(let number, let bytes):
            do {
                let object = try parser.parse(bytes, collectingKeys: false, scratch: keyScratch)
                return record(object, line: number, bytes: bytes)
            } catch {
                return .rejected(
                    RejectedRow(
                        line: number, reason: .malformedJSON,
                        message: "Line \(number) is not valid JSON: \(error.problem) (column \(error.offset + 1))."))
            }
        }
    }

    private func record(_ object: JSONObjectLine, line: Int, bytes: UnsafeBufferPointer<UInt8>) -> InputRecord {
        RowValidation.record(
            line: line,
            profile: field(object.profile, bytes: bytes, scratch: profileScratch),
            transaction: field(object.transaction, bytes: bytes, scratch: transactionScratch))
    }

    private func field(_ value: JSONValueSpan?, bytes: UnsafeBufferPointer<UInt8>, scratch: ScratchBuffer) -> FieldInput
    {
        switch value {
        case nil: return .absent
        case .null: return .null
        case .string(let start, let end, let hasEscapes):
            let content = UnsafeBufferPointer(rebasing: bytes[start..<end])
            return .text(hasEscapes ? JSONStrings.decode(content, into: scratch) : content)
        case .number(let start, let end):
            return .text(UnsafeBufferPointer(rebasing: bytes[start..<end]))
        case .other(let kind, let start, let end):
            return .wrongType(kind: kind, source: UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }

    private enum Line {
        /// The line's bytes without its line end; valid until the next call.
        case text(line: Int, bytes: UnsafeBufferPointer<UInt8>)
        case tooLong(line: Int)
    }

    /// The next line that is not blank (only spaces or tabs).
    private func nextLine() throws(InputError) -> Line? {
        let window = cursor.window
        let tooLongOffset = context.maxRecordBytes + 1
        while try cursor.skipLineEnds() {
            let lineNumber = cursor.line
            var start = cursor.position
            var index = start
            var blank = true
            while true {
                let limit = min(window.end, start + tooLongOffset)
                let base = window.base
                while index < limit {
                    let byte = base[index]
                    if byte <= ASCII.space {
                        if byte == ASCII.lineFeed || byte == ASCII.carriageReturn { break }
                        if byte != ASCII.space && byte != ASCII.tab { blank = false }
                    } else {
                        blank = false
                    }
                    index += 1
                }
                if index < limit { break }  // at a line end
                if index - start >= tooLongOffset {
                    try cursor.skipPhysicalLine(from: index)
                    return .tooLong(line: lineNumber)
                }
                let shift = try window.refill(keepingFrom: start)
                start -= shift
                index -= shift
                if index == window.end { break }  // end of the stream: the line ends here
            }
            let bytes = UnsafeBufferPointer(start: window.base + start, count: index - start)
            if index < window.end {
                cursor.consumeLineEnd(at: index)
            } else {
                cursor.position = index
            }
            if !blank { return .text(line: lineNumber, bytes: bytes) }
        }
        return nil
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    func lowercasedASCII() -> String {
        String(decoding: utf8.map(BotsiInput.lowercasedASCII), as: UTF8.self)
    }
}
