// Compiled into the BotsiInput module by scripts/fuzz.sh (never by `swift build`), so the harness
// can reach the reader's internal read-size knob. It drives the reader as the runner does: open,
// then next() until nil or an error, and asserts nothing but "no crash, no hang".

/// Feeds one fuzzer input to `InputReader` from memory.
enum InputFuzzHarness {
    /// Small reads move every record across read boundaries even in short inputs; the default
    /// (whole-window reads) is what a regular file gets.
    static let readLimits = [Int.max, 1, 7, 4096]
    /// The default limit, plus tiny ones so that short inputs also reach line_too_long and the
    /// recovery from quotes that are not closed within the limit.
    static let recordLimits = [1 << 20, 48, 300]

    static func run(_ data: UnsafePointer<UInt8>, _ size: Int, format: InputFormat) -> CInt {
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        // The input's size picks the reading shape, so each input is read the same way every
        // time it is replayed (a crash reproduces from the artifact alone).
        var readLimit = readLimits[size % readLimits.count]
        // Byte-sized reads of the 100 KB seeds cost much and find nothing a short input does not.
        if size > 16 * 1024 { readLimit = max(readLimit, 4096) }
        let maxRecordBytes = recordLimits[(size / readLimits.count) % recordLimits.count]
        let reader: InputReader
        do {
            reader = try InputReader(
                raw: RawFile(bytes: bytes, name: "fuzz-input"), format: format, columns: ColumnNames(),
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
        return 0
    }
}
