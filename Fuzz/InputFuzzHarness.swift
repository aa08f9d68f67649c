// Compiled into the BotsiInput module by scripts/fuzz.sh (never by `swift build`), so the harness
// can reach the reader's internal read-size knob and the signed-transaction and receipt parsers.
// It drives them as the runner does (open, then next() until nil or an error; or one decode) and
// asserts nothing but "no crash, no hang, no leak".

/// Feeds one fuzzer input to `InputReader` (or a parser) from memory.
enum InputFuzzHarness {
    /// Small reads move every record across read boundaries even in short inputs; the default
    /// (whole-window reads) is what a regular file gets.
    static let readLimits = [Int.max, 1, 7, 4096]
    /// The default limit, plus tiny ones so that short inputs also reach line_too_long and the
    /// recovery from quotes that are not closed within the limit.
    static let recordLimits = [1 << 20, 48, 300]
    /// The reading options the dialect target cycles through: delimiters, encodings, no header,
    /// columns by position, and the bundle and environment checks.
    static let dialects: [InputOptions] = [
        InputOptions(),
        InputOptions(delimiter: UInt8(ascii: ";")),
        InputOptions(delimiter: 0x09, hasHeader: false),
        InputOptions(encoding: .windows1252),
        InputOptions(encoding: .utf16),
        InputOptions(hasHeader: false, positions: ColumnPositions(profile: 3, transaction: 1)),
        InputOptions(bundleId: "com.example.botsi", environment: .production),
        InputOptions(delimiter: UInt8(ascii: "|"), encoding: .latin1),
    ]

    static func run(
        _ data: UnsafePointer<UInt8>, _ size: Int, format: InputFormat, options: InputOptions = .init(),
        prefix: [UInt8] = []
    ) -> CInt {
        let bytes = prefix + Array(UnsafeBufferPointer(start: data, count: size))
        // The input's size picks the reading shape, so each input is read the same way every
        // time it is replayed (a crash reproduces from the artifact alone).
        var readLimit = readLimits[size % readLimits.count]
        // Byte-sized reads of the 100 KB seeds cost much and find nothing a short input does not.
        if size > 16 * 1024 { readLimit = max(readLimit, 4096) }
        let maxRecordBytes = recordLimits[(size / readLimits.count) % recordLimits.count]
        let reader: InputReader
        do {
            reader = try InputReader(
                raw: RawFile(bytes: bytes, name: "fuzz-input"), format: format, options: options,
                maxRecordBytes: maxRecordBytes, readLimit: readLimit)
        } catch {
            return 0  // unusable as a whole: a clean refusal is a fine outcome
        }
        defer { reader.close() }
        do {
            while try reader.next() != nil {}
        } catch {
            return 0  // unreadable further (corrupt gzip): also a clean outcome
        }
        _ = reader.noRows
        return 0
    }

    /// CSV read with the options the input's size picks.
    static func runDialect(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        run(data, size, format: .csv, options: dialects[(size / 12) % dialects.count])
    }

    /// The input as UTF-16 text: a byte-order mark (little- or big-endian by size) goes first,
    /// so every input takes the transcoding path.
    static func runUTF16(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        run(data, size, format: .csv, prefix: size % 2 == 0 ? [0xFF, 0xFE] : [0xFE, 0xFF])
    }

    static func runSignedTransaction(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        _ = SignedTransaction.decode(UnsafeBufferPointer(start: data, count: size))
        return 0
    }

    /// Receipt bytes (DER/BER) straight to libcrypto, or, for every third size, as base64 text.
    static func runReceipt(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        let bytes = UnsafeBufferPointer(start: data, count: size)
        if size % 3 == 2 {
            _ = AppReceipt.decode(base64: bytes)
        } else {
            _ = AppReceipt.decode(der: Array(bytes))
        }
        return 0
    }
}
