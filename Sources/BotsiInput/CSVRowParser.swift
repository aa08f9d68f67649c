/// Delimited text: the header (or the column positions), then one record per row.
final class CSVRowParser: RecordParser {
    private let scanner: CSVScanner
    private let context: ParserContext
    let delimiter: UInt8
    /// Column index of each `Field`, -1 when the input has no such column.
    private let columns: [Int]
    /// Fields a record must reach (the largest column index plus one).
    private let needed: Int
    private let hasPurchaseProof: Bool
    private let assembler: RowAssembler
    private var pending: [InputRecord] = []
    private let scratch = (0..<Field.allCases.count).map { _ in ScratchBuffer() }
    private(set) var emptiness: EmptyInput?
    private var sawRecord = false

    init(cursor: StreamCursor, context: ParserContext) throws(InputError) {
        self.context = context
        let options = context.options
        let name = context.displayName
        func notTabular(_ what: String) -> InputError {
            InputError(
                kind: .notTabular, path: context.path, message: "Input '\(name)' is not a usable CSV file: \(what)")
        }
        assembler = RowAssembler(bundleId: options.bundleId, environment: options.environment)
        guard try cursor.skipLineEnds() else {
            // Nothing but line ends: zero rows, which a quiet night's export may well be.
            emptiness = context.isZeroBytes ? .zeroBytes : .blank
            delimiter = options.delimiter ?? (context.format == .tsv ? ASCII.tab : ASCII.comma)
            scanner = CSVScanner(cursor: cursor, maxRecordBytes: context.maxRecordBytes, delimiter: delimiter)
            columns = Field.allCases.map { _ in -1 }
            needed = 0
            hasPurchaseProof = false
            return
        }
        let first = cursor.window.base[cursor.position]
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            throw notTabular("it looks like JSON; name it .jsonl or .json, or pass --format jsonl.")
        }
        if let given = options.delimiter {
            delimiter = given
        } else if context.format == .tsv {
            delimiter = ASCII.tab
        } else {
            delimiter = try DelimiterSniffer.detect(cursor: cursor, maxRecordBytes: context.maxRecordBytes)
        }
        scanner = CSVScanner(cursor: cursor, maxRecordBytes: context.maxRecordBytes, delimiter: delimiter)

        var columns = Field.allCases.map { _ in -1 }
        if options.hasHeader {
            let header = try Self.readHeader(
                scanner: scanner, context: context, scratch: scratch[0], notTabular: notTabular)
            columns = try HeaderMapping.columns(header: header, context: context, delimiter: delimiter)
        } else {
            let positions = options.positions ?? ColumnPositions(profile: 1, transaction: 2)
            guard positions.profile >= 1, positions.transaction >= 1, positions.profile != positions.transaction else {
                throw InputError(
                    kind: .missingColumns, path: context.path,
                    message:
                        "Column positions count from 1 and must differ (got --profile-column \(positions.profile) --transaction-column \(positions.transaction)); give the 1-based positions of the two columns."
                )
            }
            columns[Field.profile.rawValue] = positions.profile - 1
            columns[Field.transaction.rawValue] = positions.transaction - 1
        }
        self.columns = columns
        needed = (columns.max() ?? 0) + 1
        hasPurchaseProof = columns[Field.signedTransaction.rawValue] >= 0 || columns[Field.receipt.rawValue] >= 0
        scanner.collectsAllFields = false
        scanner.wanted = columns
    }

    /// The header's names, lossy UTF-8 (a name that is not UTF-8 never matches, and never stops
    /// the run unless it is one the reader needs), with the line it is on.
    private static func readHeader(
        scanner: CSVScanner, context: ParserContext, scratch: ScratchBuffer, notTabular: (String) -> InputError
    ) throws(InputError) -> HeaderMapping.Header {
        scanner.collectsAllFields = true
        scanner.skipsTooLongLines = false
        defer { scanner.skipsTooLongLines = true }
        guard let header = try scanner.next() else {
            throw notTabular("its first line is blank.")  // unreachable: a non-blank byte was seen
        }
        switch header {
        case .tooLong(let line):
            throw notTabular(
                "its header (line \(line)) is longer than \(context.maxRecordBytes) bytes; is it a CSV file?")
        case .malformed(let line, let message):
            throw notTabular("its header (line \(line)) is malformed. \(message)")
        case .fields(let line, _):
            let base = scanner.cursor.window.base + scanner.recordStart
            var names: [String] = []
            var notUTF8 = false
            for span in scanner.allSpans {
                let bytes = collapse(span, base: base, scratch: scratch)
                if bytes.contains(where: { $0 < 0x20 && $0 != ASCII.tab || $0 == 0x7F }) {
                    throw notTabular(
                        "its first line is not text (binary data, or an encoding it does not recognise); export it as CSV (UTF-8) with a header row."
                    )
                }
                if String(validating: bytes, as: UTF8.self) == nil { notUTF8 = true }
                names.append(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
            }
            return HeaderMapping.Header(names: names, line: line, hasNonUTF8Names: notUTF8)
        }
    }

    func next() throws(InputError) -> InputRecord? {
        if !pending.isEmpty { return pending.removeFirst() }
        guard emptiness == nil, let record = try scanner.next() else {
            if emptiness == nil && !sawRecord { emptiness = .headerOnly }
            return nil
        }
        sawRecord = true
        switch record {
        case .tooLong(let line):
            return .rejected(RejectedRow(line: line, reason: .lineTooLong, message: context.tooLongMessage(line: line)))
        case .malformed(let line, let message):
            return .rejected(RejectedRow(line: line, reason: .malformedCSV, message: message))
        case .fields(let line, let count):
            let base = scanner.cursor.window.base + scanner.recordStart
            func field(_ field: Field) -> FieldInput {
                guard let span = scanner.span(field.rawValue) else { return .absent }
                return .text(Self.collapse(span, base: base, scratch: scratch[field.rawValue]))
            }
            guard count >= needed else {
                return .rejected(
                    RejectedRow(
                        line: line, reason: .malformedCSV,
                        message:
                            "Line \(line) has \(count) field\(count == 1 ? "" : "s") but needs at least \(needed) to reach the columns it is read from.",
                        profileId: RowValidation.rawValue(field(.profile)),
                        originalTransactionId: RowValidation.rawValue(field(.transaction))))
            }
            guard hasPurchaseProof else {
                return RowValidation.record(line: line, profile: field(.profile), transaction: field(.transaction))
            }
            return assembler.records(
                line: line, profile: field(.profile), transaction: field(.transaction),
                signedTransaction: field(.signedTransaction), receipt: field(.receipt), more: &pending)
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
}

/// Picks the delimiter from the first line: the candidate seen most often outside quotes.
enum DelimiterSniffer {
    static func detect(cursor: StreamCursor, maxRecordBytes: Int) throws(InputError) -> UInt8 {
        let window = cursor.window
        var index = cursor.position
        var counts = [Int](repeating: 0, count: InputOptions.detectedDelimiters.count)
        var quoted = false
        scan: while true {
            while index < window.end {
                let byte = window.base[index]
                if byte == ASCII.quote {
                    quoted.toggle()
                } else if !quoted {
                    if byte == ASCII.lineFeed || byte == ASCII.carriageReturn { break scan }
                    if let candidate = InputOptions.detectedDelimiters.firstIndex(of: byte) { counts[candidate] += 1 }
                }
                index += 1
            }
            // A first line longer than a record may be is reported by the scanner; stop counting.
            if index - cursor.position > maxRecordBytes || window.reachedEnd { break }
            let shift = try window.refill(keepingFrom: cursor.position)
            cursor.position -= shift
            index -= shift
            if index == window.end && window.reachedEnd { break }
        }
        let best = counts.indices.max { counts[$0] < counts[$1] || (counts[$0] == counts[$1] && $0 > $1) } ?? 0
        return counts[best] > 0 ? InputOptions.detectedDelimiters[best] : ASCII.comma
    }
}
