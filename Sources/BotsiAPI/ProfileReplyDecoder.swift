import Glibc

/// Reads a 200 reply, `{"ok": true, "data": <Profile>}`, keeping only what the journal needs:
/// the profile's id and state and, per access level, isActive, expiresAt, willRenew and
/// sourceProductId. Everything else is skipped without being built, which matters at thousands
/// of replies per second (Foundation's JSONSerialization was the largest cost of a send).
///
/// Lenient where the API may vary (unknown fields, nulls, missing optional fields, any key
/// order), strict about JSON itself: a body that is not valid JSON, `ok` other than true, or a
/// `data` that is not an object gives nil.
///
/// It reads the body in place, through a buffer pointer valid for the decoder's life (`decode`),
/// and its keys are views into that buffer: an array and its slices cost a reference count and a
/// bounds check at every byte and key, half of what a reply's decoding cost.
struct ProfileReplyDecoder {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private static let maxDepth = 128
    /// The bytes of keys that had escapes, decoded: owned by the decoder, freed when it is done.
    private var decodedKeys: [UnsafeMutableBufferPointer<UInt8>] = []

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func decode(_ body: [UInt8]) -> ProfileSnapshot? {
        body.withUnsafeBufferPointer { buffer in
            var decoder = ProfileReplyDecoder(buffer)
            defer { for key in decoder.decodedKeys { key.deallocate() } }
            return decoder.decodeReply()
        }
    }

    private mutating func decodeReply() -> ProfileSnapshot? {
        var ok: Bool? = true
        var snapshot: ProfileSnapshot?
        let valid = readObject(depth: 0) { decoder, key in
            switch key {
            case "ok":
                if decoder.peekNull() { return decoder.skipValue(depth: 1) }
                ok = decoder.readBool()
                return ok != nil
            case "data":
                guard decoder.peek() == UInt8(ascii: "{") else {
                    snapshot = nil
                    return decoder.skipValue(depth: 1)
                }
                var profile = ProfileSnapshot()
                guard decoder.readProfile(into: &profile) else { return false }
                snapshot = profile
                return true
            default:
                return decoder.skipValue(depth: 1)
            }
        }
        skipWhitespace()
        guard valid, index == bytes.count, ok == true else { return nil }
        return snapshot
    }

    private mutating func readProfile(into profile: inout ProfileSnapshot) -> Bool {
        readObject(depth: 1) { decoder, key in
            switch key {
            case "profileId":
                profile.profileId = decoder.readOptionalString()
                return decoder.lastValueWasValid
            case "state":
                profile.state = decoder.readOptionalString()
                return decoder.lastValueWasValid
            case "accessLevels" where decoder.peek() == UInt8(ascii: "{"):
                return decoder.readObject(depth: 2) { decoder, name in
                    guard decoder.peek() == UInt8(ascii: "{") else { return decoder.skipValue(depth: 3) }
                    var level = AccessLevelSnapshot()
                    let valid = decoder.readObject(depth: 3) { decoder, field in
                        switch field {
                        case "isActive": level.isActive = decoder.readOptionalBool()
                        case "willRenew": level.willRenew = decoder.readOptionalBool()
                        case "expiresAt": level.expiresAt = decoder.readOptionalString()
                        case "sourceProductId": level.sourceProductId = decoder.readOptionalString()
                        default: return decoder.skipValue(depth: 4)
                        }
                        return decoder.lastValueWasValid
                    }
                    profile.accessLevels[name.string] = level
                    return valid
                }
            default:
                return decoder.skipValue(depth: 2)
            }
        }
    }

    // MARK: Scanning

    /// Set by the `readOptional…` helpers: false when the value was not valid JSON at all.
    private var lastValueWasValid = true

    private func peek() -> UInt8? {
        var position = index
        while position < bytes.count, Self.isWhitespace(bytes[position]) { position += 1 }
        return position < bytes.count ? bytes[position] : nil
    }

    private func peekNull() -> Bool { peek() == UInt8(ascii: "n") }

    /// One comparison for the usual byte, which is no whitespace (compact JSON has none).
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte <= 0x20 && (byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func consumeLiteral(_ literal: StaticString) -> Bool {
        skipWhitespace()
        let count = literal.utf8CodeUnitCount
        // One memcmp: the byte loop through StaticString's checked accessors cost ~100
        // instructions a literal, and a reply has dozens of nulls and bools.
        guard count > 0, index + count <= bytes.count, let base = bytes.baseAddress,
            memcmp(base + index, literal.utf8Start, count) == 0
        else { return count == 0 }
        index += count
        return true
    }

    /// Reads an object, calling `field` for each key with the decoder positioned at the value;
    /// `field` must consume the value and return whether it was valid.
    private mutating func readObject(
        depth: Int, _ field: (inout ProfileReplyDecoder, Key) -> Bool
    ) -> Bool {
        guard depth < Self.maxDepth, consume(UInt8(ascii: "{")) else { return false }
        if consume(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let key = readKey(), consume(UInt8(ascii: ":")) else { return false }
            skipWhitespace()
            guard field(&self, key) else { return false }
            if consume(UInt8(ascii: ",")) { continue }
            return consume(UInt8(ascii: "}"))
        }
    }

    private mutating func readBool() -> Bool? {
        if consumeLiteral("true") { return true }
        if consumeLiteral("false") { return false }
        return nil
    }

    /// A bool, or nil for null or any other valid value (lenient); invalid JSON clears
    /// `lastValueWasValid`.
    private mutating func readOptionalBool() -> Bool? {
        skipWhitespace()
        if let value = readBool() {
            lastValueWasValid = true
            return value
        }
        lastValueWasValid = skipValue(depth: 4)
        return nil
    }

    private mutating func readOptionalString() -> String? {
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            let value = readString()
            lastValueWasValid = value != nil
            return value
        }
        lastValueWasValid = skipValue(depth: 4)
        return nil
    }

    /// Skips any JSON value, checking that it is well formed.
    private mutating func skipValue(depth: Int) -> Bool {
        guard depth < Self.maxDepth else { return false }
        skipWhitespace()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""): return skipString()
        case UInt8(ascii: "{"): return readObject(depth: depth) { decoder, _ in decoder.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            index += 1
            if consume(UInt8(ascii: "]")) { return true }
            while true {
                guard skipValue(depth: depth + 1) else { return false }
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "]"))
            }
        case UInt8(ascii: "t"): return consumeLiteral("true")
        case UInt8(ascii: "f"): return consumeLiteral("false")
        case UInt8(ascii: "n"): return consumeLiteral("null")
        default: return skipNumber()
        }
    }

    private mutating func skipNumber() -> Bool {
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        // JSON writes no leading zeros: `0` alone, or a digit from 1 on first.
        guard index > digitsStart, bytes[digitsStart] != UInt8(ascii: "0") || index == digitsStart + 1 else {
            return false
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let fraction = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > fraction else { return false }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            let exponent = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > exponent else { return false }
        }
        return index > start
    }

    /// An object key, compared byte for byte without building a String. Valid only while the
    /// decoder is: its bytes are the body's or, for a key with escapes, the decoder's own copy of
    /// it decoded. Only a pointer, so passing one costs no reference counting (a key that held a
    /// String cost an outlined copy and a release per key).
    struct Key {
        private let bytes: UnsafeBufferPointer<UInt8>

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var string: String { String(decoding: bytes, as: UTF8.self) }

        static func ~= (literal: StaticString, key: Key) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard key.bytes.count == count else { return false }
            return count == 0 || memcmp(key.bytes.baseAddress!, literal.utf8Start, count) == 0
        }
    }

    /// A key of plain ASCII is a view of the body; one with escapes or other text is decoded (and
    /// its UTF-8 checked) first: a key's bytes can become an access level's name in the journal.
    private mutating func readKey() -> Key? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let end = plainTextEnd(from: index + 1)
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let key = Key(UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end]))
            index = end + 1
            return key
        }
        guard var decoded = readString() else { return nil }
        let copy = decoded.withUTF8 { text in
            let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.count)
            _ = copy.initialize(from: text)
            return copy
        }
        decodedKeys.append(copy)
        return Key(UnsafeBufferPointer(copy))
    }

    /// Passes over a string literal at `index` (its opening quote) without building it: most of a
    /// reply's strings are skipped, and making each a String was most of the decoder's cost. Text
    /// that is not plain ASCII, or has escapes, is checked the long way.
    private mutating func skipString() -> Bool {
        let end = plainTextEnd(from: index + 1)
        guard end < bytes.count else { return false }
        guard bytes[end] == UInt8(ascii: "\"") else { return readString() != nil }
        index = end + 1
        return true
    }

    /// Where the plain text of a string starting at `start` ends: the first quote, backslash,
    /// control character or byte of non-ASCII text at or after it, or the body's end. Eight bytes
    /// at a time: the byte-by-byte loop was the decoder's largest cost (keys and skipped strings
    /// are most of a reply's bytes).
    private func plainTextEnd(from start: Int) -> Int {
        var position = start
        if let base = bytes.baseAddress {
            while position + 8 <= bytes.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
                let stops = Self.stopBytes(in: word) | (word & Self.highBits)
                // Little-endian: the lowest set bit is in the first stop byte.
                if stops != 0 { return position + stops.trailingZeroBitCount / 8 }
                position += 8
            }
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            position += 1
        }
        return position
    }

    private static let lowBits: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `word` that is a quote, a backslash or below 0x20, exact for
    /// the lowest such byte (a borrow can only mark bytes above a true one, which are not read).
    private static func stopBytes(in word: UInt64) -> UInt64 {
        let quotes = word ^ (lowBits &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (lowBits &* UInt64(UInt8(ascii: "\\")))
        let zeroQuote = (quotes &- lowBits) & ~quotes
        let zeroBackslash = (backslashes &- lowBits) & ~backslashes
        let control = (word &- lowBits &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & highBits
    }

    /// Reads a string literal at `index` (which must be at its opening quote), decoding escapes.
    private mutating func readString() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        let start = index
        var ascii: UInt8 = 0
        // Fast path: no escapes, the usual case.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                // ASCII is valid UTF-8 as it stands: only other text needs the (generic, slower) check.
                return ascii < 0x80 ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { return nil }
            ascii |= byte
            index += 1
        }
        var scalars = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    guard var code = readHex4() else { return nil }
                    if (0xD800...0xDBFF).contains(code) {
                        // The low half follows at once: no whitespace inside a string.
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { return nil }
                        index += 2
                        guard let low = readHex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    // A low half alone is no scalar either.
                    guard let scalar = Unicode.Scalar(code) else { return nil }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: return nil
                }
            default:
                if byte < 0x20 { return nil }
                scalars.append(byte)
            }
        }
        return nil
    }

    private mutating func readHex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
