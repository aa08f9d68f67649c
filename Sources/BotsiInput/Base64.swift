/// Base64 (RFC 4648) decoding for receipts (the standard alphabet) and JWS parts (base64url).
enum Base64 {
    enum Alphabet {
        /// `+` and `/`; ASCII whitespace is skipped (receipts are often wrapped), `=` padding is
        /// optional but must be right if present.
        case standard
        /// `-` and `_`; no whitespace; padding optional (JWS leaves it out).
        case url
    }

    /// The decoded bytes, or nil when `text` is not valid in the alphabet.
    static func decode(_ text: UnsafeBufferPointer<UInt8>, alphabet: Alphabet) -> [UInt8]? {
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: text.count / 4 * 3 + 3) { buffer, count in
            guard let written = decode(text, alphabet: alphabet, into: buffer) else {
                failed = true
                count = 0
                return
            }
            count = written
        }
        return failed ? nil : output
    }

    /// Whether `text` decodes, without keeping the bytes.
    static func isValid(_ text: UnsafeBufferPointer<UInt8>, alphabet: Alphabet) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 3) { buffer in
            decode(text, alphabet: alphabet, into: buffer, keeping: false) != nil
        }
    }

    /// Decodes into `output` (room for `text.count / 4 * 3 + 3` bytes unless `keeping` is false,
    /// when nothing is written); returns the byte count, or nil when `text` is not valid.
    private static func decode(
        _ text: UnsafeBufferPointer<UInt8>, alphabet: Alphabet, into output: UnsafeMutableBufferPointer<UInt8>,
        keeping: Bool = true
    ) -> Int? {
        let table = alphabet == .standard ? standardTable : urlTable
        var written = 0
        func append(_ byte: UInt32) {
            if keeping { output[written] = UInt8(truncatingIfNeeded: byte) }
            written += 1
        }
        var accumulator: UInt32 = 0
        var pending = 0  // sextets in the accumulator
        var significant = 0
        var padding = 0
        for byte in text {
            let value = table[Int(byte)]
            if value >= 0 {
                guard padding == 0 else { return nil }  // data after padding
                accumulator = accumulator << 6 | UInt32(value)
                pending += 1
                significant += 1
                if pending == 4 {
                    append(accumulator >> 16)
                    append(accumulator >> 8)
                    append(accumulator)
                    accumulator = 0
                    pending = 0
                }
            } else if byte == UInt8(ascii: "=") {
                padding += 1
                guard padding <= 2 else { return nil }
            } else if alphabet == .standard && (byte == ASCII.space || (byte >= 0x09 && byte <= 0x0D)) {
                continue
            } else {
                return nil
            }
        }
        switch pending {
        case 0: break
        case 1: return nil  // six bits cannot make a byte
        case 2: append(accumulator >> 4)
        default:
            append(accumulator >> 10)
            append(accumulator >> 2)
        }
        if padding > 0 && (significant + padding) % 4 != 0 { return nil }
        return written
    }

    private static let standardTable = table(extra: (UInt8(ascii: "+"), UInt8(ascii: "/")))
    private static let urlTable = table(extra: (UInt8(ascii: "-"), UInt8(ascii: "_")))

    private static func table(extra: (UInt8, UInt8)) -> [Int8] {
        var table = [Int8](repeating: -1, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(byte)] = Int8(index)
        }
        table[Int(extra.0)] = 62
        table[Int(extra.1)] = 63
        return table
    }
}
