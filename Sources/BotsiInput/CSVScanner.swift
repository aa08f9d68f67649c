/// Where a field's content lies, relative to the first byte of its record.
struct FieldSpan: Equatable {
    var start: Int
    var end: Int
    /// Quoted content holding `""` pairs that stand for one quote each.
    var hasDoubledQuotes: Bool

    var isEmpty: Bool { start == end }
}

/// One CSV record as the scanner found it.
enum CSVRecord: Equatable {
    /// The spans of the wanted fields are `CSVScanner.span(_:)`, valid until the next call.
    case fields(line: Int, count: Int)
    case malformed(line: Int, message: String)
    case tooLong(line: Int)
}

/// An RFC 4180 record scanner over bytes, with any one-byte delimiter (comma, semicolon, tab,
/// pipe…). It keeps only the spans of the wanted fields (or every field, for the header), so a
/// row costs no allocation until its values become strings.
///
/// Recovery rules, so one bad record never costs more than itself:
/// - A quote inside an unquoted field, or text after a closing quote: the record is malformed
///   and reading resumes at the next line end.
/// - A quoted field that spans lines and is never closed (end of file) or not closed within
///   `maxRecordBytes`: only the record's first physical line is reported malformed and reading
///   resumes on the line after it, so an unbalanced quote cannot swallow the rest of the file.
/// - A record whose first physical line alone exceeds `maxRecordBytes` is reported too long and
///   skipped to the end of that physical line, without buffering it.
final class CSVScanner {
    private enum State {
        case fieldStart, unquoted, quoted, quoteInQuoted, malformedLine
    }

    private enum Step {
        case done(CSVRecord)
        case blank
    }

    let cursor: StreamCursor
    let maxRecordBytes: Int
    let delimiter: UInt8
    /// Bytes that end the fast scan of an unquoted field: the delimiter, the quote, CR and LF.
    private let special: UnsafeMutablePointer<Bool>
    /// Field indices whose spans `span(_:)` reports (at most four; -1 for none).
    var wanted: [Int] = [0, 1] {
        didSet { precondition(wanted.count <= 4) }
    }
    private var spans: KeptFields.Spans = (nil, nil, nil, nil)
    /// Collect every span in `allSpans` (for the header).
    var collectsAllFields = false
    /// A record longer than the limit is skipped to its line end before `.tooLong` is returned, so
    /// reading goes on after it; a header that long ends the input at once instead (false), rather
    /// than reading what may be gigabytes to find the end of a line of a file that is not CSV.
    var skipsTooLongLines = true
    private(set) var allSpans: [FieldSpan] = []
    /// Window index of the first byte of the record last returned.
    private(set) var recordStart = 0

    init(cursor: StreamCursor, maxRecordBytes: Int, delimiter: UInt8 = ASCII.comma) {
        self.cursor = cursor
        self.maxRecordBytes = maxRecordBytes
        self.delimiter = delimiter
        special = .allocate(capacity: 256)
        special.initialize(repeating: false, count: 256)
        for byte in [delimiter, ASCII.quote, ASCII.lineFeed, ASCII.carriageReturn] { special[Int(byte)] = true }
    }

    deinit { special.deallocate() }

    /// The span of wanted field `slot` (an index into `wanted`) in the record last returned, nil
    /// when the record is shorter.
    func span(_ slot: Int) -> FieldSpan? {
        switch slot {
        case 0: spans.0
        case 1: spans.1
        case 2: spans.2
        case 3: spans.3
        default: nil
        }
    }

    /// The next record, or nil at the end of the stream. Blank lines and lines of only spaces
    /// or tabs are skipped.
    func next() throws(InputError) -> CSVRecord? {
        while try cursor.skipLineEnds() {
            if case .done(let record) = try scanRecord() { return record }
        }
        return nil
    }

    /// The spans a record keeps while it is scanned.
    private struct KeptFields {
        typealias Spans = (FieldSpan?, FieldSpan?, FieldSpan?, FieldSpan?)
        let wanted: (Int, Int, Int, Int)
        let collectsAll: Bool
        var spans: Spans = (nil, nil, nil, nil)
        var all: [FieldSpan]

        @inline(__always)
        mutating func finish(_ fieldIndex: Int, _ start: Int, _ end: Int, _ doubled: Bool) {
            let span = FieldSpan(start: start, end: end, hasDoubledQuotes: doubled)
            if fieldIndex == wanted.0 { spans.0 = span }
            if fieldIndex == wanted.1 { spans.1 = span }
            if fieldIndex == wanted.2 { spans.2 = span }
            if fieldIndex == wanted.3 { spans.3 = span }
            if collectsAll { all.append(span) }
        }
    }

    // One state machine over the bytes. Indices are plain local variables (no closures capture
    // them) so the per-byte loop stays in registers.
    private func scanRecord() throws(InputError) -> Step {
        let window = cursor.window
        let recordLine = cursor.line
        let tooLongOffset = maxRecordBytes + 1
        var start = cursor.position
        var index = start
        var base = window.base
        var end = window.end
        var state = State.fieldStart
        var fieldIndex = 0
        var contentStart = 0
        var doubledQuotes = false
        var innerLineEnds = 0
        var firstInnerLineEnd = -1
        var malformedMessage = ""
        let delimiter = delimiter
        let special = special
        let wantedIndices = wanted
        func wantedAt(_ slot: Int) -> Int { slot < wantedIndices.count ? wantedIndices[slot] : -1 }
        var kept = KeptFields(
            wanted: (wantedAt(0), wantedAt(1), wantedAt(2), wantedAt(3)), collectsAll: collectsAllFields, all: [])
        if collectsAllFields {
            swap(&kept.all, &allSpans)
            kept.all.removeAll(keepingCapacity: true)
        }
        defer { if collectsAllFields { swap(&kept.all, &allSpans) } }

        while true {
            let limit = min(end, start + tooLongOffset)
            scanning: while index < limit {
                let byte = base[index]
                switch state {
                case .unquoted:
                    if !special[Int(byte)] {
                        index += 1
                        while index < limit && !special[Int(base[index])] { index += 1 }
                        continue scanning
                    }
                    if byte == delimiter {
                        kept.finish(fieldIndex, contentStart, index - start, false)
                        fieldIndex += 1
                        state = .fieldStart
                    } else if byte == ASCII.lineFeed || byte == ASCII.carriageReturn {
                        kept.finish(fieldIndex, contentStart, index - start, false)
                        break scanning
                    } else if byte == ASCII.quote {
                        state = .malformedLine
                        // `a, "b"`, as people type a list: the quote opens nothing, and saying so is
                        // the fix; "quote the whole field" would send them round in circles.
                        let spacesOnly = (start + contentStart..<index).allSatisfy {
                            base[$0] == ASCII.space || base[$0] == ASCII.tab
                        }
                        malformedMessage =
                            spacesOnly
                            ? "Line \(recordLine) has spaces before the opening quote of field \(fieldIndex + 1); a quoted field must start right after the delimiter: remove them."
                            : "Line \(recordLine) has a quote inside unquoted field \(fieldIndex + 1); quote the whole field and double the quotes inside it (\"\")."
                    }
                case .fieldStart:
                    if byte == ASCII.quote {
                        state = .quoted
                        contentStart = index + 1 - start
                        doubledQuotes = false
                    } else if byte == delimiter {
                        kept.finish(fieldIndex, index - start, index - start, false)
                        fieldIndex += 1
                    } else if byte == ASCII.lineFeed || byte == ASCII.carriageReturn {
                        kept.finish(fieldIndex, index - start, index - start, false)
                        break scanning
                    } else {
                        state = .unquoted
                        contentStart = index - start
                    }
                case .quoted:
                    if byte == ASCII.quote {
                        state = .quoteInQuoted
                    } else if byte == ASCII.carriageReturn
                        || (byte == ASCII.lineFeed && base[index - 1] != ASCII.carriageReturn)
                    {
                        innerLineEnds += 1
                        if firstInnerLineEnd < 0 { firstInnerLineEnd = index - start }
                    }
                case .quoteInQuoted:
                    if byte == ASCII.quote {
                        doubledQuotes = true
                        state = .quoted
                    } else if byte == delimiter {
                        kept.finish(fieldIndex, contentStart, index - 1 - start, doubledQuotes)
                        fieldIndex += 1
                        state = .fieldStart
                    } else if byte == ASCII.lineFeed || byte == ASCII.carriageReturn {
                        kept.finish(fieldIndex, contentStart, index - 1 - start, doubledQuotes)
                        break scanning
                    } else {
                        state = .malformedLine
                        let what = byte == ASCII.space || byte == ASCII.tab ? "a space" : "text"
                        malformedMessage =
                            "Line \(recordLine) has \(what) after the closing quote of field \(fieldIndex + 1); a quoted field must end right before a delimiter or the line end."
                    }
                case .malformedLine:
                    if byte == ASCII.lineFeed || byte == ASCII.carriageReturn { break scanning }
                }
                index += 1
            }

            if index < limit {
                // At the record's line end.
                recordStart = start
                cursor.line = recordLine + innerLineEnds
                cursor.consumeLineEnd(at: index)
                return finishRecord(
                    line: recordLine, bytes: base + start, count: index - start, state: state,
                    fieldCount: fieldIndex + 1, kept: kept, malformedMessage: malformedMessage)
            }

            if index - start >= tooLongOffset {
                if firstInnerLineEnd >= 0 {
                    return abandonUnclosedQuote(
                        line: recordLine, lineEnd: start + firstInnerLineEnd,
                        why: "is not closed within \(maxRecordBytes) bytes")
                }
                cursor.line = recordLine
                if skipsTooLongLines { try cursor.skipPhysicalLine(from: index) }
                return .done(.tooLong(line: recordLine))
            }

            let shift = try window.refill(keepingFrom: start)
            start -= shift
            index -= shift
            base = window.base
            end = window.end
            if index < end { continue }

            // The stream ended inside this record.
            switch state {
            case .fieldStart:
                kept.finish(fieldIndex, index - start, index - start, false)
            case .unquoted:
                kept.finish(fieldIndex, contentStart, index - start, false)
            case .quoteInQuoted:
                kept.finish(fieldIndex, contentStart, index - 1 - start, doubledQuotes)
            case .malformedLine:
                break
            case .quoted:
                if firstInnerLineEnd >= 0 {
                    return abandonUnclosedQuote(
                        line: recordLine, lineEnd: start + firstInnerLineEnd,
                        why: "is never closed before the end of the file")
                }
                cursor.line = recordLine
                cursor.position = index
                return .done(
                    .malformed(
                        line: recordLine,
                        message:
                            "Line \(recordLine) opens a quoted field that is never closed before the end of the file; close the quote or remove it."
                    ))
            }
            recordStart = start
            cursor.line = recordLine + innerLineEnds
            cursor.position = index
            return finishRecord(
                line: recordLine, bytes: base + start, count: index - start, state: state,
                fieldCount: fieldIndex + 1, kept: kept, malformedMessage: malformedMessage)
        }
    }

    private func finishRecord(
        line: Int, bytes: UnsafeMutablePointer<UInt8>, count: Int, state: State, fieldCount: Int,
        kept: KeptFields, malformedMessage: String
    ) -> Step {
        if state == .malformedLine {
            return .done(.malformed(line: line, message: malformedMessage))
        }
        // A line of only spaces or tabs counts as blank, not as a one-field record.
        if fieldCount == 1 && state != .quoteInQuoted {
            var blank = true
            for offset in 0..<count where bytes[offset] != ASCII.space && bytes[offset] != ASCII.tab {
                blank = false
                break
            }
            if blank { return .blank }
        }
        spans = kept.spans
        return .done(.fields(line: line, count: fieldCount))
    }

    /// The quoted field that crossed a line end was probably opened by a stray quote: report
    /// the record's first line and read on from the next one.
    private func abandonUnclosedQuote(line: Int, lineEnd: Int, why: String) -> Step {
        cursor.line = line
        cursor.consumeLineEnd(at: lineEnd)
        let message =
            "Line \(line) opens a quoted field that \(why) (an unbalanced quote?); line \(line) was skipped and reading went on at line \(line + 1)."
        return .done(.malformed(line: line, message: message))
    }
}
