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
