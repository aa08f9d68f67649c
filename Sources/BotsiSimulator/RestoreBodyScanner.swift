/// What a restore request body said, or why it was refused.
enum RestoreBody: Equatable {
    case valid(profileId: String, originalTransactionId: String)
    case invalid(message: String)
}

/// A validating JSON scanner that keeps only the two top-level fields a restore needs. It checks the
/// whole body is well-formed JSON (so "not JSON" is answered the way Botsi does) without building a
/// Foundation object graph, which is the slowest part of `JSONSerialization` on Linux.
struct RestoreBodyScanner {
    private enum Field {
        case absent
        case string(String)
        case notString
    }

    private struct Malformed: Error {}

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private static let maximumDepth = 64

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func scan(_ body: [UInt8]) -> RestoreBody {
        body.withUnsafeBufferPointer { buffer in
            var scanner = RestoreBodyScanner(bytes: buffer)
            return scanner.scanBody()
        }
    }

    private mutating func scanBody() -> RestoreBody {
        var profileId = Field.absent
        var transactionId = Field.absent
        do {
            skipWhitespace()
            guard peek() == UInt8(ascii: "{") else {
                try skipValue(depth: 0)
                try expectEnd()
                return .invalid(message: "Request body must be a JSON object")
            }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    let key = try parseString()
                    skipWhitespace()
                    try expect(UInt8(ascii: ":"))
                    skipWhitespace()
                    if key == "profileId" || key == "originalTransactionId" {
                        let field: Field
                        if peek() == UInt8(ascii: "\"") {
                            field = .string(try parseString())
                        } else {
                            try skipValue(depth: 1)
                            field = .notString
                        }
                        if key == "profileId" { profileId = field } else { transactionId = field }
                    } else {
                        try skipValue(depth: 1)
                    }
                    skipWhitespace()
                    let separator = try next()
                    if separator == UInt8(ascii: "}") { break }
                    guard separator == UInt8(ascii: ",") else { throw Malformed() }
                }
            }
            try expectEnd()
        } catch {
            return .invalid(message: "Request body is not valid JSON")
        }
        let profile: String
        switch Self.check(profileId, name: "profileId") {
        case .success(let value): profile = value
        case .failure(let refusal): return .invalid(message: refusal.message)
        }
        switch Self.check(transactionId, name: "originalTransactionId") {
        case .success(let value): return .valid(profileId: profile, originalTransactionId: value)
        case .failure(let refusal): return .invalid(message: refusal.message)
        }
    }

    private struct Refusal: Error {
        let message: String
    }

    private static func check(_ field: Field, name: String) -> Result<String, Refusal> {
        switch field {
        case .absent: return .failure(Refusal(message: "\(name) is required"))
        case .notString: return .failure(Refusal(message: "\(name) must be a string"))
        case .string(let value) where value.isEmpty: return .failure(Refusal(message: "\(name) must not be empty"))
        case .string(let value): return .success(value)
        }
    }

    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func next() throws -> UInt8 {
        guard index < bytes.count else { throw Malformed() }
        defer { index += 1 }
        return bytes[index]
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try next() == byte else { throw Malformed() }
    }

    private mutating func expectEnd() throws {
        skipWhitespace()
        guard index == bytes.count else { throw Malformed() }
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func skipValue(depth: Int) throws {
        guard depth < Self.maximumDepth, let first = peek() else { throw Malformed() }
        switch first {
        case UInt8(ascii: "\""):
            _ = try parseString()
        case UInt8(ascii: "{"):
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                _ = try parseString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                try skipValue(depth: depth + 1)
                skipWhitespace()
                let separator = try next()
                if separator == UInt8(ascii: "}") { return }
                guard separator == UInt8(ascii: ",") else { throw Malformed() }
            }
        case UInt8(ascii: "["):
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                try skipValue(depth: depth + 1)
                skipWhitespace()
                let separator = try next()
                if separator == UInt8(ascii: "]") { return }
                guard separator == UInt8(ascii: ",") else { throw Malformed() }
            }
        case UInt8(ascii: "t"): try skipLiteral("true")
        case UInt8(ascii: "f"): try skipLiteral("false")
        case UInt8(ascii: "n"): try skipLiteral("null")
        default: try skipNumber()
        }
    }

    private mutating func skipLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw Malformed() }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw Malformed() }
        index += count
    }

    private mutating func skipDigits() -> Int {
        let start = index
        while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    private mutating func skipNumber() throws {
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            guard let byte = peek(), byte >= UInt8(ascii: "1"), byte <= UInt8(ascii: "9") else { throw Malformed() }
            _ = skipDigits()
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() > 0 else { throw Malformed() }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw Malformed() }
        }
    }

    /// Parses a string at the cursor, decoding escapes; the common escape-free case copies one slice.
    private mutating func parseString() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw Malformed() }
            index += 1
        }
        var decoded = Array(bytes[start..<index])
        while true {
            let byte = try next()
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try decodeEscape(into: &decoded)
            case 0..<0x20:
                throw Malformed()
            default:
                decoded.append(byte)
            }
        }
    }

    private mutating func decodeEscape(into decoded: inout [UInt8]) throws {
        let escape = try next()
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                try expect(UInt8(ascii: "\\"))
                try expect(UInt8(ascii: "u"))
                let low = try parseHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw Malformed() }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw Malformed() }
            decoded.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw Malformed()
        }
    }

    private mutating func parseHex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = try next()
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Malformed()
            }
            value = value << 4 | digit
        }
        return value
    }
}
