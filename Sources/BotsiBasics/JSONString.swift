/// JSON string literals, written one way by everything that writes JSON by hand: request bodies,
/// the simulator's replies, reports and the journal's progress records.
///
/// Escaped: the quote and the backslash; C0 controls (as `\n`, `\r`, `\t`, `\b`, `\f` where JSON has a
/// short form, else `\u001b`); and, beyond what RFC 8259 requires, every scalar `VisibleText` calls
/// active (DEL, C1 controls, and the invisible ones: bidirectional marks, overrides and isolates,
/// zero-width and other format characters, U+2028 and U+2029, variation selectors…; beyond U+FFFF
/// as a UTF-16 pair) so that a report or log shown on a terminal carries none of them raw, and the
/// text is also safe inside JavaScript. Everything else stays as it is, in UTF-8.
public enum JSONString {
    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String {
        // Most ids and dates need no escaping at all: check the bytes once and copy.
        guard mayNeedEscaping(text) else { return plainQuoted(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        append(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `text` as a JSON string literal, quotes included, for writers that build bytes.
    public static func append(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // One look at the contiguous bytes; plain text (most ids and dates) is copied as a block.
        var text = text
        let copied = text.withUTF8 { bytes in
            let plain = byteKinds.withUnsafeBufferPointer { table in
                !bytes.contains { table[Int($0)] & escapeStart != 0 }
            }
            if plain { out.append(contentsOf: bytes) }
            return plain
        }
        if !copied {
            for scalar in text.unicodeScalars { appendEscaped(scalar, to: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends bytes read from outside (a database, a file) as a JSON string literal: the bytes
    /// `append(String(decoding: bytes, as: UTF8.self), to:)` appends, invalid UTF-8 repaired the
    /// same way, but without making a String when the bytes are plain, valid UTF-8 (nearly always).
    public static func append(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        // Or-ed over every byte, no branch per byte: escape starts and non-ASCII bytes at once.
        let kinds = byteKinds.withUnsafeBufferPointer { table in
            var kinds: UInt8 = 0
            for byte in bytes { kinds |= table[Int(byte)] }
            return kinds
        }
        guard kinds & escapeStart == 0, kinds & nonASCII == 0 || bytes.isValidUTF8 else {
            return append(String(decoding: bytes, as: UTF8.self), to: &out)
        }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: bytes)
        out.append(UInt8(ascii: "\""))
    }

    /// `"text"` built in one allocation.
    private static func plainQuoted(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            String(unsafeUninitializedCapacity: bytes.count + 2) { buffer in
                buffer[0] = UInt8(ascii: "\"")
                _ = UnsafeMutableBufferPointer(rebasing: buffer[1...]).initialize(from: bytes)
                buffer[bytes.count + 1] = UInt8(ascii: "\"")
                return bytes.count + 2
            }
        }
    }

    /// True when some UTF-8 byte could start a scalar that is escaped (the quote, the backslash,
    /// and `VisibleText.mayStartActive`); may say true for harmless text such as `€`.
    private static func mayNeedEscaping(_ text: String) -> Bool {
        var text = text
        // One pass over the contiguous bytes with a table: no closure call per byte.
        return text.withUTF8 { bytes in
            byteKinds.withUnsafeBufferPointer { table in bytes.contains { table[Int($0)] & escapeStart != 0 } }
        }
    }

    /// Per byte: `escapeStart` for the bytes `mayNeedEscaping` looks for, `nonASCII` for 80–FF.
    private static let byteKinds: [UInt8] = (0...255).map { byte in
        let escapes = byte == 0x22 || byte == 0x5C || VisibleText.mayStartActive[byte]
        return (escapes ? escapeStart : 0) | (byte >= 0x80 ? nonASCII : 0)
    }
    private static let escapeStart: UInt8 = 1
    private static let nonASCII: UInt8 = 2

    private static func appendEscaped(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        switch scalar {
        case "\"": out.append(contentsOf: #"\""#.utf8)
        case "\\": out.append(contentsOf: #"\\"#.utf8)
        case "\n": out.append(contentsOf: #"\n"#.utf8)
        case "\r": out.append(contentsOf: #"\r"#.utf8)
        case "\t": out.append(contentsOf: #"\t"#.utf8)
        case "\u{8}": out.append(contentsOf: #"\b"#.utf8)
        case "\u{C}": out.append(contentsOf: #"\f"#.utf8)
        case _ where VisibleText.isActive(scalar):
            for unit in String(scalar).utf16 {
                out.append(contentsOf: #"\u"#.utf8)
                for shift in [12, 8, 4, 0] { out.append(hexDigits[(Int(unit) >> shift) & 0xF]) }
            }
        default:
            UTF8.encode(scalar) { out.append($0) }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
