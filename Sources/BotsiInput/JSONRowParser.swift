/// JSON input: one object per line, or one array of objects (the first byte tells which). An
/// array is read element by element, never whole; each element keeps the line it starts on.
final class JSONRowParser: RecordParser {
    private let cursor: StreamCursor
    private let context: ParserContext
    private let parser: JSONLineParser
    private let elements: JSONArrayScanner?
    private let keyScratch = ScratchBuffer()
    private let scratch = (0..<Field.allCases.count).map { _ in ScratchBuffer() }
    private let assembler: RowAssembler
    private var pending: [InputRecord] = []
    /// The first record, read while opening.
    private var firstRecord: InputRecord?
    private(set) var emptiness: EmptyInput?

    init(cursor: StreamCursor, context: ParserContext) throws(InputError) {
        self.cursor = cursor
        self.context = context
        parser = JSONLineParser(groups: context.fieldNames)
        assembler = RowAssembler(bundleId: context.options.bundleId, environment: context.options.environment)
        let name = context.displayName
        guard try cursor.skipWhitespace() else {
            emptiness = context.isZeroBytes ? .zeroBytes : .blank
            elements = nil
            return
        }
        elements =
            cursor.window.base[cursor.position] == UInt8(ascii: "[")
            ? JSONArrayScanner(cursor: cursor, maxRecordBytes: context.maxRecordBytes) : nil
        let what = elements == nil ? "JSON-lines file" : "JSON array"
        func unusable(_ problem: String) -> InputError {
            InputError(
                kind: .notTabular, path: context.path, message: "Input '\(name)' is not a usable \(what): \(problem)")
        }
        guard let first = try nextText() else {
            emptiness = .emptyArray
            return
        }
        switch first {
        case .tooLong(let line):
            throw unusable(
                "its first \(elements == nil ? "line" : "element") (line \(line)) is longer than \(context.maxRecordBytes) bytes."
            )
        case .malformed(_, let message):
            throw unusable(message)
        case .text(let line, let bytes):
            let object: JSONObjectLine
            do {
                object = try parser.parse(bytes, collectingKeys: true, scratch: keyScratch)
            } catch {
                var hint = ""
                if elements == nil && bytes.contains(ASCII.comma) && !bytes.contains(UInt8(ascii: "{")) {
                    hint = " It looks like CSV; name it .csv or pass --format csv."
                }
                let trimmed = bytes.filter { ![ASCII.space, UInt8(ascii: "\t"), UInt8(ascii: "\r")].contains($0) }
                // An object opened and never closed on its line (not one with more after it).
                if elements == nil && trimmed.first == UInt8(ascii: "{") && !trimmed.contains(UInt8(ascii: "}")) {
                    // What `jq .` writes: one object over several lines.
                    hint =
                        " Each line must hold one whole JSON object (JSON Lines); a pretty-printed object spans several:"
                        + " write it with jq -c, or give a JSON array."
                }
                let unit = elements == nil ? "line \(line)" : "the first element (line \(line))"
                throw unusable("\(unit) is not a JSON object (\(error.problem), byte \(error.offset + 1)).\(hint)")
            }
            let hasTransaction = [Field.transaction, .signedTransaction, .receipt].contains {
                object[$0.rawValue] != nil
            }
            guard object[Field.profile.rawValue] != nil, hasTransaction else {
                var missing: [String] = []
                if object[Field.profile.rawValue] == nil {
                    missing.append(context.profileNames.joined(separator: " or "))
                }
                if !hasTransaction {
                    missing.append(
                        context.transactionNames.joined(separator: " or ") + " (or signedTransaction or receipt)")
                }
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
        if !pending.isEmpty { return pending.removeFirst() }
        guard emptiness == nil, let text = try nextText() else { return nil }
        switch text {
        case .tooLong(let number):
            let message =
                elements == nil
                ? context.tooLongMessage(line: number)
                : "The element starting on line \(number) is longer than \(context.maxRecordBytes) bytes; it was skipped."
            return .rejected(RejectedRow(line: number, reason: .lineTooLong, message: message))
        case .malformed(let number, let message):
            return .rejected(RejectedRow(line: number, reason: .malformedJSON, message: message))
        case .text(let number, let bytes):
            do {
                let object = try parser.parse(bytes, collectingKeys: false, scratch: keyScratch)
                return record(object, line: number, bytes: bytes)
            } catch {
                let message =
                    elements == nil
                    ? "Line \(number) is not valid JSON: \(error.problem) (column \(error.offset + 1))."
                    : "The element starting on line \(number) is not a valid JSON object: \(error.problem) (byte \(error.offset + 1) of the element)."
                return .rejected(RejectedRow(line: number, reason: .malformedJSON, message: message))
            }
        }
    }

    private func record(_ object: JSONObjectLine, line: Int, bytes: UnsafeBufferPointer<UInt8>) -> InputRecord {
        func value(_ field: Field) -> FieldInput {
            self.field(object[field.rawValue], bytes: bytes, scratch: scratch[field.rawValue])
        }
        if let duplicate = object.duplicate {
            let keys =
                duplicate.first == duplicate.second
                ? "the key \(RowValidation.display(duplicate.first)) twice"
                : "both \(RowValidation.display(duplicate.first)) and \(RowValidation.display(duplicate.second))"
            return .rejected(
                RejectedRow(
                    line: line, reason: .duplicateKey,
                    message:
                        "Line \(line) holds \(keys) for the \(Field(rawValue: duplicate.group)!.title); keep one, since which one is meant cannot be told.",
                    profileId: RowValidation.rawValue(value(.profile)),
                    originalTransactionId: RowValidation.rawValue(value(.transaction))))
        }
        guard object[Field.signedTransaction.rawValue] != nil || object[Field.receipt.rawValue] != nil else {
            return RowValidation.record(line: line, profile: value(.profile), transaction: value(.transaction))
        }
        return assembler.records(
            line: line, profile: value(.profile), transaction: value(.transaction),
            signedTransaction: value(.signedTransaction), receipt: value(.receipt), more: &pending)
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

    /// The next line or array element to parse.
    private func nextText() throws(InputError) -> JSONText? {
        if let elements { return try elements.next() }
        return try nextLine()
    }

    /// The next line that is not blank (only spaces or tabs).
    private func nextLine() throws(InputError) -> JSONText? {
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

/// A piece of JSON input to parse as one object.
enum JSONText {
    /// The bytes (a line without its line end, or an element); valid until the next call.
    case text(line: Int, bytes: UnsafeBufferPointer<UInt8>)
    case tooLong(line: Int)
    /// The array's own syntax is broken around an element (a missing comma, no closing bracket).
    case malformed(line: Int, message: String)
}
