/// Splits a JSON array (`[{…},{…}]`, pretty-printed or not) into its elements as a stream: the
/// window holds one element at a time, so memory does not grow with the array.
///
/// An element is delimited by its own brackets and strings; its syntax is checked afterwards by
/// `JSONLineParser`. Recovery, so that one bad element costs no more than itself where JSON
/// allows: a missing comma between elements is reported and reading goes on; an element longer
/// than `maxRecordBytes` is skipped without being kept; an element that is never closed (an
/// unbalanced brace or quote) runs to the end of the input, which is reported once.
final class JSONArrayScanner {
    private enum State {
        case elementExpected(afterComma: Bool)
        case separatorExpected
        case closed
        case finished
    }

    private let cursor: StreamCursor
    private let maxRecordBytes: Int
    private var state = State.elementExpected(afterComma: false)
    /// The line the last element ended on, for "after the element that ends on line N".
    private var lastElementLine = 0

    /// `cursor` is at the array's `[`.
    init(cursor: StreamCursor, maxRecordBytes: Int) {
        self.cursor = cursor
        self.maxRecordBytes = maxRecordBytes
        cursor.position += 1
    }

    /// The next element, a problem with the array's syntax, or nil after the closing bracket.
    func next() throws(InputError) -> JSONText? {
        while true {
            let more = try cursor.skipWhitespace()
            let line = cursor.line
            switch state {
            case .finished:
                return nil
            case .closed:
                state = .finished
                guard more else { return nil }
                return .malformed(
                    line: line,
                    message:
                        "Line \(line) has text after the array's closing ']'; the input must be one JSON array, and the rest was not read."
                )
            case .separatorExpected where !more, .elementExpected where !more:
                state = .finished
                return .malformed(
                    line: line,
                    message:
                        "The JSON array is never closed with ']' (a truncated export?); the rows before the end were read."
                )
            case .separatorExpected:
                let byte = cursor.window.base[cursor.position]
                if byte == ASCII.comma {
                    cursor.position += 1
                    state = .elementExpected(afterComma: true)
                } else if byte == UInt8(ascii: "]") {
                    cursor.position += 1
                    state = .closed
                } else {
                    state = .elementExpected(afterComma: true)
                    return .malformed(
                        line: line,
                        message:
                            "Line \(line) lacks a ',' between the element that ends on line \(lastElementLine) and the next one; reading went on with the next element."
                    )
                }
            case .elementExpected(let afterComma):
                if cursor.window.base[cursor.position] == UInt8(ascii: "]") {
                    cursor.position += 1
                    state = .closed
                    if afterComma {
                        return .malformed(
                            line: line, message: "Line \(line) closes the array right after a ',' (a trailing comma).")
                    }
                    continue
                }
                state = .separatorExpected
                let element = try scanElement()
                lastElementLine = cursor.line
                if case .malformed = element { state = .finished }
                return element
            }
        }
    }

    /// Scans one element from the cursor: a container to its closing bracket, a scalar to the
    /// next comma, bracket or whitespace. It always consumes at least one byte, so a stray byte
    /// where an element should be becomes an element of its own (and a rejected row).
    private func scanElement() throws(InputError) -> JSONText {
        let window = cursor.window
        let startLine = cursor.line
        var line = cursor.line
        var afterCarriageReturn = cursor.pendingLineFeed
        var start = cursor.position
        var index = start
        var depth = 0
        var inString = false
        var escaped = false
        var skipping = false  // longer than allowed: scan on without keeping the bytes
        scanning: while true {
            let end = window.end
            let base = window.base
            while index < end {
                let byte = base[index]
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == ASCII.backslash {
                        escaped = true
                    } else if byte == ASCII.quote {
                        inString = false
                    }
                } else {
                    switch byte {
                    case ASCII.quote:
                        inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        if depth == 0 {
                            if index == start { index += 1 }
                            break scanning  // a scalar followed by the array's end
                        }
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            afterCarriageReturn = false
                            break scanning
                        }
                    case ASCII.comma, ASCII.space, ASCII.tab, ASCII.lineFeed, ASCII.carriageReturn:
                        // The cursor skipped the whitespace before the element, so a byte of
                        // these at `start` is a comma: a stray one, taken as an element of its own.
                        if depth == 0 {
                            if index == start { index += 1 }
                            break scanning
                        }
                    default:
                        break
                    }
                }
                // Line ends of the bytes the element takes (a string may hold a raw one,
                // which the parser then rejects).
                if byte == ASCII.lineFeed {
                    if !afterCarriageReturn { line += 1 }
                    afterCarriageReturn = false
                } else {
                    afterCarriageReturn = byte == ASCII.carriageReturn
                    if afterCarriageReturn { line += 1 }
                }
                index += 1
            }
            if !skipping && index - start > maxRecordBytes { skipping = true }
            let shift = try window.refill(keepingFrom: skipping ? index : start)
            start -= shift
            index -= shift
            if index == window.end {
                // The input ended inside the element.
                if depth > 0 || inString {
                    cursor.position = index
                    cursor.line = line
                    cursor.pendingLineFeed = afterCarriageReturn
                    return .malformed(
                        line: startLine,
                        message:
                            "The element starting on line \(startLine) is never closed before the end of the input (an unbalanced brace or quote?)."
                    )
                }
                break
            }
        }
        cursor.position = index
        cursor.line = line
        cursor.pendingLineFeed = afterCarriageReturn
        if skipping || index - start > maxRecordBytes { return .tooLong(line: startLine) }
        return .text(line: startLine, bytes: UnsafeBufferPointer(start: window.base + start, count: index - start))
    }
}
