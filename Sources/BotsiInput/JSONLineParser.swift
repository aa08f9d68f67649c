/// A value of a wanted key, located in the line's bytes (offsets into the line).
enum JSONValueSpan: Equatable {
    /// Content between the quotes, escapes not yet decoded.
    case string(start: Int, end: Int, hasEscapes: Bool)
    /// The number token exactly as written, so ids above 2^53 keep every digit.
    case number(start: Int, end: Int)
    case null
    /// true, false, an object or an array; `kind` names it for messages.
    case other(kind: String, start: Int, end: Int)
}

struct JSONObjectLine: Equatable {
    var profile: JSONValueSpan?
    var transaction: JSONValueSpan?
    /// Every key of the object, only when asked for (the first line, for error messages).
    var keys: [String] = []
}

struct JSONSyntaxError: Error {
    let problem: String
    /// 0-based byte offset in the line.
    let offset: Int
}

/// A validating scanner for one JSON-lines line: the line must be exactly one JSON object.
/// It does not build a document: it locates the values of the wanted keys and checks the
/// syntax of everything else, which keeps big ids exact and the scan fast.
///
/// Keys match the accepted names ignoring ASCII case. When an object holds a wanted key twice
/// (or two accepted spellings, e.g. `profileId` and `profile_id`), the last one wins, as in
/// most JSON parsers. Containers nest at most `maxDepth` levels, counting the line's object.
struct JSONLineParser {
    static let maxDepth = 64

    /// Accepted key names, lowercased ASCII bytes.
    let profileKeys: [[UInt8]]
    let transactionKeys: [[UInt8]]

    init(profileKeys: [String], transactionKeys: [String]) {
        self.profileKeys = profileKeys.map { Array($0.utf8).map(lowercasedASCII) }
        self.transactionKeys = transactionKeys.map { Array($0.utf8).map(lowercasedASCII) }
    }

    func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, collectingKeys: Bool, scratch: ScratchBuffer
    ) throws(JSONSyntaxError) -> JSONObjectLine {
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        guard scanner.index < bytes.count else { throw JSONSyntaxError(problem: "the line is empty", offset: 0) }
        switch bytes[scanner.index] {
        case UInt8(ascii: "{"):
            break
        case UInt8(ascii: "["):
            throw JSONSyntaxError(
                problem: "the line is a JSON array, but each line must be one object", offset: scanner.index)
        default:
            throw JSONSyntaxError(problem: "the line is not a JSON object", offset: scanner.index)
        }
        scanner.index += 1
        var result = JSONObjectLine()
        scanner.skipWhitespace()
        if scanner.peek == UInt8(ascii: "}") {
            scanner.index += 1
        } else {
            while true {
                scanner.skipWhitespace()
                guard scanner.peek == ASCII.quote else {
                    throw JSONSyntaxError(problem: "expected a key in double quotes", offset: scanner.index)
                }
                let (keyStart, keyEnd, keyHasEscapes) = try scanner.scanString()
                var key = UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd])
                if keyHasEscapes {
                    key = JSONStrings.decode(key, into: scratch)
                }
                let isProfile = matches(key, profileKeys)
                let isTransaction = matches(key, transactionKeys)
                if collectingKeys {
                    result.keys.append(String(decoding: key, as: UTF8.self))
                }
                scanner.skipWhitespace()
                guard scanner.peek == UInt8(ascii: ":") else {
                    throw JSONSyntaxError(problem: "expected ':' after a key", offset: scanner.index)
                }
                scanner.index += 1
                scanner.skipWhitespace()
                let value = try scanner.scanValue(depth: 1)
                if isProfile { result.profile = value }
                if isTransaction { result.transaction = value }
                scanner.skipWhitespace()
                if scanner.peek == ASCII.comma {
                    scanner.index += 1
                    continue
                }
                if scanner.peek == UInt8(ascii: "}") {
                    scanner.index += 1
                    break
                }
                throw JSONSyntaxError(problem: "expected ',' or '}' after a value", offset: scanner.index)
            }
        }
        scanner.skipWhitespace()
        guard scanner.index == bytes.count else {
            throw JSONSyntaxError(problem: "there is more text after the object", offset: scanner.index)
        }
        return result
    }

    private func matches(_ key: UnsafeBufferPointer<UInt8>, _ candidates: [[UInt8]]) -> Bool {
        candidateLoop: for candidate in candidates where candidate.count == key.count {
            for index in 0..<key.count where lowercasedASCII(key[index]) != candidate[index] {
                continue candidateLoop
            }
            return true
        }
        return false
    }
}

@inline(__always)
func lowercasedASCII(_ byte: UInt8) -> UInt8 {
    byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
}

private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The current byte, or 0 at the end (0 never starts valid JSON syntax).
    var peek: UInt8 { index < bytes.count ? bytes[index] : 0 }

    mutating func skipWhitespace() {
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == ASCII.space || byte == ASCII.tab || byte == ASCII.lineFeed || byte == ASCII.carriageReturn
            else { return }
            index += 1
        }
    }

    /// At an opening quote; returns the content's bounds and moves past the closing quote.
    mutating func scanString() throws(JSONSyntaxError) -> (Int, Int, Bool) {
        let opening = index
        index += 1
        let contentStart = index
        var hasEscapes = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == ASCII.quote {
                index += 1
                return (contentStart, index - 1, hasEscapes)
            }
            if byte == ASCII.backslash {
                hasEscapes = true
                guard index + 1 < bytes.count else { break }
                switch bytes[index + 1] {
                case ASCII.quote, ASCII.backslash, UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= bytes.count,
                        (index + 2..<index + 6).allSatisfy({ JSONStrings.hexValue(bytes[$0]) != nil })
                    else {
                        throw JSONSyntaxError(problem: "a \\u escape needs four hex digits", offset: index)
                    }
                    index += 6
                default:
                    throw JSONSyntaxError(problem: "invalid escape sequence in a string", offset: index)
                }
                continue
            }
            if byte < 0x20 {
                throw JSONSyntaxError(
                    problem: "a control character inside a string must be escaped", offset: index)
            }
            index += 1
        }
        throw JSONSyntaxError(problem: "a string is not closed", offset: opening)
    }

    mutating func scanValue(depth: Int) throws(JSONSyntaxError) -> JSONValueSpan {
        let start = index
        switch peek {
        case ASCII.quote:
            let (contentStart, contentEnd, hasEscapes) = try scanString()
            return .string(start: contentStart, end: contentEnd, hasEscapes: hasEscapes)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = peek == UInt8(ascii: "{")
            guard depth < JSONLineParser.maxDepth else {
                throw JSONSyntaxError(
                    problem: "values are nested deeper than \(JSONLineParser.maxDepth) levels", offset: index)
            }
            try skipContainer(isObject: isObject, depth: depth + 1)
            return .other(kind: isObject ? "an object" : "an array", start: start, end: index)
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .other(kind: "a boolean", start: start, end: index)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .other(kind: "a boolean", start: start, end: index)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            return .number(start: start, end: index)
        case 0:
            throw JSONSyntaxError(problem: "a value is missing at the end of the line", offset: index)
        default:
            throw JSONSyntaxError(problem: "unexpected character where a value should be", offset: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else {
            throw JSONSyntaxError(problem: "unexpected word where a value should be", offset: index)
        }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where bytes[index + offset] != expected[offset] {
            throw JSONSyntaxError(problem: "unexpected word where a value should be", offset: index)
        }
        index += count
    }

    private func isDigit(_ position: Int) -> Bool {
        position < bytes.count && bytes[position] >= UInt8(ascii: "0") && bytes[position] <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() throws(JSONSyntaxError) {
        guard isDigit(index) else { throw JSONSyntaxError(problem: "a number is incomplete", offset: index) }
        while isDigit(index) { index += 1 }
    }

    private mutating func scanNumber() throws(JSONSyntaxError) {
        if peek == UInt8(ascii: "-") { index += 1 }
        if peek == UInt8(ascii: "0") {
            index += 1
            if isDigit(index) {
                throw JSONSyntaxError(
                    problem: "a number starts with 0, which JSON does not allow (write the id as a string)",
                    offset: index - 1)
            }
        } else {
            try skipDigits()
        }
        if peek == UInt8(ascii: ".") {
            index += 1
            try skipDigits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            try skipDigits()
        }
    }

    /// At `{` or `[`; checks the container's syntax and moves past its end.
    private mutating func skipContainer(isObject: Bool, depth: Int) throws(JSONSyntaxError) {
        let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        index += 1
        skipWhitespace()
        if peek == closing {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            if isObject {
                guard peek == ASCII.quote else {
                    throw JSONSyntaxError(problem: "expected a key in double quotes", offset: index)
                }
                _ = try scanString()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else {
                    throw JSONSyntaxError(problem: "expected ':' after a key", offset: index)
                }
                index += 1
                skipWhitespace()
            }
            _ = try scanValue(depth: depth)
            skipWhitespace()
            if peek == ASCII.comma {
                index += 1
                continue
            }
            if peek == closing {
                index += 1
                return
            }
            throw JSONSyntaxError(
                problem: isObject ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array",
                offset: index)
        }
    }
}

/// Decoding of JSON string content.
enum JSONStrings {
    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// Decodes syntactically checked string content into `scratch`. An unpaired surrogate
    /// escape becomes the byte 0xFF, which no UTF-8 validation accepts, so the field is
    /// rejected as invalid instead of silently changed.
    static func decode(_ content: UnsafeBufferPointer<UInt8>, into scratch: ScratchBuffer) -> UnsafeBufferPointer<
        UInt8
    > {
        // Decoded text is never longer than its escaped form.
        let output = scratch.reserve(content.count)
        var written = 0
        var index = 0
        func append(_ byte: UInt8) {
            output[written] = byte
            written += 1
        }
        func codeUnit(at position: Int) -> UInt32? {
            guard position + 6 <= content.count, content[position] == ASCII.backslash,
                content[position + 1] == UInt8(ascii: "u")
            else { return nil }
            var value: UInt32 = 0
            for offset in 2..<6 {
                guard let digit = hexValue(content[position + offset]) else { return nil }
                value = value << 4 | digit
            }
            return value
        }
        while index < content.count {
            let byte = content[index]
            guard byte == ASCII.backslash, index + 1 < content.count else {
                append(byte)
                index += 1
                continue
            }
            let escaped = content[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): append(0x08)
            case UInt8(ascii: "f"): append(0x0C)
            case UInt8(ascii: "n"): append(ASCII.lineFeed)
            case UInt8(ascii: "r"): append(ASCII.carriageReturn)
            case UInt8(ascii: "t"): append(ASCII.tab)
            case UInt8(ascii: "u"):
                guard let unit = codeUnit(at: index - 2) else {
                    append(0xFF)
                    continue
                }
                index += 4
                var scalarValue = unit
                if (0xD800...0xDBFF).contains(unit) {
                    if let low = codeUnit(at: index), (0xDC00...0xDFFF).contains(low) {
                        scalarValue = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    } else {
                        append(0xFF)
                        continue
                    }
                } else if (0xDC00...0xDFFF).contains(unit) {
                    append(0xFF)
                    continue
                }
                for unit in UTF8.encode(Unicode.Scalar(scalarValue)!)! { append(unit) }
            default: append(escaped)  // \" \\ \/
            }
        }
        return UnsafeBufferPointer(start: output, count: written)
    }
}

/// A growable byte buffer reused across rows for decoded field text.
final class ScratchBuffer {
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int

    init(capacity: Int = 256) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    /// Room for at least `count` bytes; the previous content is not kept.
    func reserve(_ count: Int) -> UnsafeMutablePointer<UInt8> {
        if count > capacity {
            storage.deallocate()
            capacity = max(count, capacity * 2)
            storage = .allocate(capacity: capacity)
        }
        return storage
    }
}
