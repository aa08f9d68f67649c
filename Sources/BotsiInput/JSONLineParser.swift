import BotsiBasics

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

/// The values of the wanted keys of one object, by group (up to four groups).
struct JSONObjectLine: Equatable {
    /// A group's value, and where its key is in the line (for naming a duplicate).
    fileprivate struct Slot {
        var value: JSONValueSpan
        var key: Range<Int>
    }

    private var slots: (Slot?, Slot?, Slot?, Slot?) = (nil, nil, nil, nil)
    /// The first group whose key the object holds twice, with both keys as written.
    var duplicate: (group: Int, first: String, second: String)?
    /// Every key of the object, only when asked for (the first line, for error messages).
    var keys: [String] = []

    subscript(group: Int) -> JSONValueSpan? { self[slot: group]?.value }

    fileprivate subscript(slot group: Int) -> Slot? {
        get {
            switch group {
            case 0: slots.0
            case 1: slots.1
            case 2: slots.2
            case 3: slots.3
            default: nil
            }
        }
        set {
            switch group {
            case 0: slots.0 = newValue
            case 1: slots.1 = newValue
            case 2: slots.2 = newValue
            case 3: slots.3 = newValue
            default: preconditionFailure("at most four key groups")
            }
        }
    }

    static func == (lhs: JSONObjectLine, rhs: JSONObjectLine) -> Bool {
        (0..<4).allSatisfy { lhs[$0] == rhs[$0] } && lhs.keys == rhs.keys
            && lhs.duplicate?.group == rhs.duplicate?.group
    }
}

struct JSONSyntaxError: Error {
    let problem: String
    /// 0-based byte offset in the line.
    let offset: Int
}

/// A validating scanner for one JSON object (a JSON-lines line, an array element, a JWS
/// payload): the bytes must be exactly one object. It does not build a document: it locates
/// the values of the wanted keys and checks the syntax of everything else, which keeps big ids
/// exact and the scan fast.
///
/// Keys are wanted in groups (the accepted spellings of one field); a key belongs to the first
/// group that accepts it. When an object holds a group's key twice (or two of its spellings,
/// e.g. `profileId` and `profile_id`), the last value is kept and `duplicate` names both keys,
/// so that the caller can refuse the object instead of guessing. Containers nest at most
/// `maxDepth` levels, counting the object itself.
struct JSONLineParser {
    static let maxDepth = 64

    /// Accepted key names by group, as bytes (lowercased ASCII when `ignoringCase`).
    let groups: [[[UInt8]]]
    let ignoringCase: Bool

    init(groups: [[String]], ignoringCase: Bool = true) {
        precondition(groups.count <= 4)
        self.ignoringCase = ignoringCase
        self.groups = groups.map { names in
            names.map { ignoringCase ? Array($0.utf8).map(ASCIICase.lowercased) : Array($0.utf8) }
        }
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
                let group = group(of: key)
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
                if let group {
                    if let earlier = result[slot: group], result.duplicate == nil {
                        result.duplicate = (
                            group, Self.keyText(earlier.key, bytes), Self.keyText(keyStart..<keyEnd, bytes)
                        )
                    }
                    result[slot: group] = JSONObjectLine.Slot(value: value, key: keyStart..<keyEnd)
                }
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

    private func group(of key: UnsafeBufferPointer<UInt8>) -> Int? {
        for (group, candidates) in groups.enumerated() {
            candidateLoop: for candidate in candidates where candidate.count == key.count {
                if ignoringCase {
                    for index in 0..<key.count where ASCIICase.lowercased(key[index]) != candidate[index] {
                        continue candidateLoop
                    }
                } else {
                    for index in 0..<key.count where key[index] != candidate[index] { continue candidateLoop }
                }
                return group
            }
        }
        return nil
    }

    /// A key as written in the line (escapes left as they are), for a message.
    private static func keyText(_ range: Range<Int>, _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// The JSON grammar the readers check, for bytes that come from elsewhere.
public enum JSONSyntax {
    /// Whether `bytes` are one JSON value and nothing more (whitespace around it aside), nested at
    /// most `JSONLineParser.maxDepth` levels: what `report` checks before it writes a snapshot from
    /// the journal into a line of JSON as it is.
    public static func isOneValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        do {
            // A value the line's object holds is scanned at depth 1; this one is the top level.
            _ = try scanner.scanValue(depth: 0)
        } catch {
            return false
        }
        scanner.skipWhitespace()
        return scanner.index == bytes.count
    }
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
