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
/// JSON-lines scanners. A line ends at LF, CRLF or a lone CR.
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

    /// Skips a UTF-8 byte-order mark at the very start of the stream.
    func skipByteOrderMark() throws(InputError) {
        while window.end - position < 3 && !window.reachedEnd {
            position -= try window.refill(keepingFrom: position)
        }
        let base = window.base
        if window.end - position >= 3 && base[position] == 0xEF && base[position + 1] == 0xBB
            && base[position + 2] == 0xBF
        {
            position += 3
        }
    }

    /// Skips empty lines; returns false at the end of the stream.
    func skipLineEnds() throws(InputError) -> Bool {
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
