// Compiled into the BotsiInput module by scripts/fuzz.sh (never by `swift build`), so the harness
// drives the reader exactly as the runner does: open, then next() until nil or an error.
import Glibc

/// Feeds one fuzzer input to `InputReader` through a scratch file that is reused for every input.
/// libFuzzer calls it from one thread, so the file descriptor needs no lock.
enum InputFuzzHarness {
    /// One scratch file per process; reopened by path so the reader sees a fresh offset each time.
    nonisolated(unsafe) private static var scratchPath: String?
    nonisolated(unsafe) private static var scratchDescriptor: Int32 = -1

    /// Most inputs use the default record limit; every third one a tiny limit, so that short
    /// inputs also reach the line_too_long and unclosed-quote paths.
    static func maxRecordBytes(forInputOfSize size: Int) -> Int {
        size % 3 == 0 ? 48 : 1 << 20
    }

    static func run(_ data: UnsafePointer<UInt8>, _ size: Int, format: InputFormat) -> CInt {
        let path = preparedScratchFile()
        precondition(ftruncate(scratchDescriptor, 0) == 0, "cannot truncate the fuzz scratch file")
        var written = 0
        while written < size {
            let result = pwrite(scratchDescriptor, data + written, size - written, off_t(written))
            precondition(result > 0, "cannot write the fuzz scratch file")
            written += result
        }
        let reader: InputReader
        do {
            reader = try InputReader(
                path: path, format: format, maxRecordBytes: maxRecordBytes(forInputOfSize: size))
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

    private static func preparedScratchFile() -> String {
        if let scratchPath { return scratchPath }
        let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(directory)/botsi-fuzz-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        precondition(descriptor >= 0, "cannot create the fuzz scratch file")
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Unlinked at exit; a crash leaves it in TMPDIR, which fuzz.sh points at its work folder.
        atexit { InputFuzzHarness.removeScratchFile() }
        scratchDescriptor = descriptor
        scratchPath = path
        return path
    }

    private static func removeScratchFile() {
        if let scratchPath { unlink(scratchPath) }
    }
}
