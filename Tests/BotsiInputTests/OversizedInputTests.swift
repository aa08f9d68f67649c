import BotsiTestSupport
import Foundation
import Synchronization
import Testing

@testable import BotsiInput

/// Input built to break the readers: lines far over the limit, and every seed of the fuzz corpus
/// (Tests/FuzzCorpus), replayed here so that plain `swift test` keeps them passing.
@Suite struct OversizedInputTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    /// Resident set size of this process, from /proc/self/statm (second field, in pages).
    static func residentBytes() throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let fields = text.split(separator: " ")
        let pages = try #require(fields.count > 1 ? Int(fields[1]) : nil)
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// Writes `prefix`, then `count` bytes of `filler` in 1 MiB pieces, then `suffix`, without
    /// ever holding the whole line in memory.
    func writeLongLine(_ name: String, prefix: String, filler: UInt8, count: Int, suffix: String) throws -> String {
        let path = directory.file(name)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(prefix.utf8)))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        let piece = Data(repeating: filler, count: 1 << 20)
        var left = count
        while left > 0 {
            let size = min(left, piece.count)
            try handle.write(contentsOf: size == piece.count ? piece : piece.prefix(size))
            left -= size
        }
        try handle.write(contentsOf: Data(suffix.utf8))
        return path
    }

    @Test(arguments: [InputFormat.csv, .jsonl])
    func aHundredMegabyteLineIsSkippedAsTooLongWithBoundedMemory(format: InputFormat) throws {
        let lineBytes = 100 << 20
        let path: String
        switch format {
        case .csv, .tsv:
            path = try writeLongLine(
                "long.csv", prefix: "profileId,originalTransactionId\np1,1\n", filler: UInt8(ascii: "x"),
                count: lineBytes, suffix: ",2\np3,3\n")
        case .jsonl, .json:
            path = try writeLongLine(
                "long.jsonl", prefix: "{\"profileId\": \"p1\", \"originalTransactionId\": \"1\"}\n{\"profileId\": \"",
                filler: UInt8(ascii: "x"), count: lineBytes,
                suffix:
                    "\", \"originalTransactionId\": \"2\"}\n{\"profileId\": \"p3\", \"originalTransactionId\": \"3\"}\n"
            )
        }
        let before = try Self.residentBytes()
        // The default record limit (1 MiB), as a run uses it.
        let reader = try InputReader(path: path, format: format)
        defer { reader.close() }
        var records: [InputRecord] = []
        var peak = before
        while let record = try reader.next() {
            records.append(record)
            peak = max(peak, try Self.residentBytes())
        }
        #expect(records.count == 3)
        #expect(records.first == row("p1", "1", line: format == .csv ? 2 : 1))
        #expect(records.dropFirst().first?.asRejected?.reason == .lineTooLong)
        #expect(records.last == row("p3", "3", line: format == .csv ? 4 : 3))
        #expect(reader.bufferCapacityForTesting <= (1 << 20) + 2 * ByteWindow.chunkSize)
        // Other tests run in this process at the same time, so this allows for their memory too;
        // a reader that buffered the line would grow by 100 MB or more.
        let growth = peak - before
        print("100 MB \(format.rawValue) line: resident memory grew by \(growth >> 10) KiB")
        #expect(growth < 50 << 20, "resident memory grew by \(growth >> 20) MB while reading a 100 MB line")
    }

    /// A header past the limit ends the input there: the reader does not read on to find the end
    /// of a line that may never come (a pipe that keeps writing, a 2 GB sparse file).
    @Test func aHeaderPastTheLimitIsRefusedWithoutReadingTheRestOfItsLine() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let writer = FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
        // 4 MiB of one endless line, and the pipe stays open: only giving up at the limit returns.
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1 << 16)
        let feeding = DispatchQueue(label: "feed")
        feeding.async { for _ in 0..<64 { try? writer.write(contentsOf: chunk) } }
        let result = Mutex<InputError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let path = "/dev/fd/\(descriptors[0])"
        Thread.detachNewThread {
            do throws(InputError) {
                _ = try InputReader(path: path, format: .csv, columns: .init(), maxRecordBytes: 1 << 20)
            } catch {
                result.withLock { $0 = error }
            }
            done.signal()
        }
        let answered = done.wait(timeout: .now() + 20) == .success
        #expect(answered, "the reader kept reading the header's line past the limit")
        let error = try #require(result.withLock { $0 })
        #expect(error.message.contains("header (line 1) is longer than 1048576 bytes"), "\(error.message)")
        // The feeder, blocked on a full pipe nobody reads, fails its writes once the read end closes.
        signal(SIGPIPE, SIG_IGN)
        close(descriptors[0])
        feeding.sync {}
        try? writer.close()
    }

    @Test func sqlTextInIdsIsReadAsPlainText() throws {
        let hostile = "x'); DROP TABLE items;--"
        let path = directory.write(
            "sql.csv", "profileId,originalTransactionId\n\(hostile),123\n\"'; DELETE FROM items; --\",456\n")
        let records = try readAll(path)
        #expect(records == [row(hostile, "123", line: 2), row("'; DELETE FROM items; --", "456", line: 3)])
        let jsonPath = directory.write(
            "sql.jsonl", "{\"profileId\": \"\(hostile)\", \"originalTransactionId\": \"123\"}\n")
        #expect(try readAll(jsonPath) == [row(hostile, "123", line: 1)])
    }

    /// Every seed the fuzzer starts from reads to the end (or is refused as a whole) without a
    /// crash, with line numbers inside the file. In CSV and JSON lines a record never shares a
    /// line with the one before; a receipt's rows, or a JSON array's element and the missing
    /// comma after it, may.
    @Test(arguments: [
        ("csv", InputFormat.csv, [] as [UInt8], true), ("jsonl", .jsonl, [], true), ("dialect", .csv, [], false),
        ("utf16", .csv, [0xFF, 0xFE], false), ("jsonarray", .json, [], false),
    ])
    func everyFuzzSeedReadsToTheEnd(folder: String, format: InputFormat, prefix: [UInt8], strictly: Bool) throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FuzzCorpus/\(folder)")
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        #expect(seeds.count >= (strictly ? 20 : 3), "the seed corpus is missing")
        for seed in seeds {
            let path = corpus.appendingPathComponent(seed).path
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            // Line ends a reader may count: LF, CR, CRLF as one (gzip seeds are counted after
            // decompression, so only a generous bound is checked for them).
            let physicalLines = bytes.count + 1
            for limit in [1 << 20, 48] {
                let reader: InputReader
                do {
                    reader = try InputReader(
                        bytes: prefix + Array(bytes), name: seed, format: format, maxRecordBytes: limit)
                } catch {
                    continue  // unusable as a whole: a clean refusal
                }
                defer { reader.close() }
                var count = 0
                var lastLine = 0
                do {
                    while let record = try reader.next() {
                        count += 1
                        #expect(
                            record.line > lastLine || (!strictly && record.line == lastLine),
                            "\(seed): lines must increase")
                        lastLine = record.line
                    }
                } catch {
                    #expect(seed.hasSuffix(".gz"), "\(seed): only corrupt gzip may fail mid-way: \(error)")
                }
                #expect(count <= physicalLines, "\(seed): more records than lines")
            }
        }
    }
}
