/// ASCII bytes the scanners look for.
enum ASCII {
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let tab: UInt8 = 0x09
    static let space: UInt8 = 0x20
    static let quote: UInt8 = 0x22
    static let comma: UInt8 = 0x2C
    static let backslash: UInt8 = 0x5C
}

/// The read position in a `ByteWindow` plus the physical line count, shared by the CSV and
/// JSON scanners. A line ends at LF, CRLF or a lone CR.
final class StreamCursor {
    let window: ByteWindow
    /// Window index of the next unread byte.
    var position = 0
    /// 1-based physical line of `position`.
    var line = 1
    /// The last line ended with CR: an LF right after it belongs to the same line end.
    var pendingLineFeed = false

    init(window: ByteWindow) {
        self.window = window
    }

    /// Makes `position` readable; returns false when the stream is exhausted.
    func ensureByte() throws(InputError) -> Bool {
        if position < window.end { return true }
        position -= try window.refill(keepingFrom: position)
        return position < window.end
    }

    /// Skips empty lines, and a byte-order mark at the start of a line (what `cat a.csv b.csv` leaves
    /// where the second file begins: it marks a file's start and is never part of a value); returns
    /// false at the end of the stream. Called only at the start of a line.
    func skipLineEnds() throws(InputError) -> Bool {
        while true {
            guard try skip(spacesToo: false) else { return false }
            guard try isAtByteOrderMark() else { return true }
            position += 3
        }
    }

    /// The UTF-8 byte-order mark (EF BB BF) at `position`, reading on when the window ends inside it.
    private func isAtByteOrderMark() throws(InputError) -> Bool {
        guard window.base[position] == 0xEF else { return false }
        while window.end - position < 3 {
            let before = window.end - position
            position -= try window.refill(keepingFrom: position)
            if window.end - position == before { return false }
        }
        return window.base[position + 1] == 0xBB && window.base[position + 2] == 0xBF
    }

    /// Skips line ends, spaces and tabs (JSON's whitespace); returns false at the end of the stream.
    func skipWhitespace() throws(InputError) -> Bool {
        try skip(spacesToo: true)
    }

    private func skip(spacesToo: Bool) throws(InputError) -> Bool {
        // Locals, not properties, in the loop: class property access is checked at run time.
        var index = position
        var currentLine = line
        var afterCarriageReturn = pendingLineFeed
        defer {
            position = index
            line = currentLine
            pendingLineFeed = afterCarriageReturn
        }
        while true {
            if index == window.end {
                index -= try window.refill(keepingFrom: index)
                if index == window.end { return false }
            }
            let byte = window.base[index]
            if byte == ASCII.lineFeed {
                if afterCarriageReturn {
                    afterCarriageReturn = false
                } else {
                    currentLine += 1
                }
            } else if byte == ASCII.carriageReturn {
                currentLine += 1
                afterCarriageReturn = true
            } else if spacesToo && (byte == ASCII.space || byte == ASCII.tab) {
                afterCarriageReturn = false
            } else {
                afterCarriageReturn = false
                return true
            }
            index += 1
        }
    }

    /// Consumes the line end at window index `index` (a CR or LF byte).
    @inline(__always)
    func consumeLineEnd(at index: Int) {
        pendingLineFeed = window.base[index] == ASCII.carriageReturn
        line += 1
        position = index + 1
    }

    /// Skips from window index `index` to the end of the current physical line without keeping
    /// the bytes, however long the line is.
    func skipPhysicalLine(from index: Int) throws(InputError) {
        var index = index
        while true {
            let base = window.base
            let end = window.end
            while index < end {
                let byte = base[index]
                if byte == ASCII.lineFeed || byte == ASCII.carriageReturn {
                    consumeLineEnd(at: index)
                    return
                }
                index += 1
            }
            index -= try window.refill(keepingFrom: end)
            if index == window.end {
                position = index
                return
            }
        }
    }
}
