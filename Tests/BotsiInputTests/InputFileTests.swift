import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

/// Opening files: names, formats, gzip, sizes and digests.
@Suite struct InputFileTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    static let csv = "profileId,originalTransactionId\np1,1\np2,2\n"
    static let csvRows = [row("p1", "1", line: 2), row("p2", "2", line: 3)]

    func systemSHA256(_ path: String) throws -> String {
        try String(runProgram("/usr/bin/env", ["sha256sum", path]).requireSuccess().output.prefix(64))
    }

    @Test(arguments: [
        ("a.csv", InputFormat.csv), ("a.CSV", .csv), ("a.csv.gz", .csv), ("dir.x/a.jsonl", .jsonl),
        ("a.ndjson", .jsonl), ("a.NDJSON.GZ", .jsonl), ("a.jsonl.gz", .jsonl), ("a.txt", .csv), ("a.tsv", .tsv),
        ("a.TAB.gz", .tsv), ("a.json", .json), ("a.json.gz", .json),
    ])
    func formatComesFromTheName(name: String, format: InputFormat) {
        #expect(InputReader.format(fromName: name) == format)
    }

    @Test(arguments: ["a.dat", "a.gz", "-", "csv", "a.csv.zip", "a.xlsx"])
    func namesWithoutAFormat(name: String) {
        #expect(InputReader.format(fromName: name) == nil)
    }

    @Test func anUnknownExtensionNeedsTheFormatFlag() throws {
        let path = directory.write("rows.dat", Self.csv)
        let error = expectInputError(.unknownFormat) { _ = try readAll(path) }
        #expect(error?.message.contains("--format") == true)
        #expect(try readAll(path, format: .csv) == Self.csvRows)
    }

    @Test func theFormatFlagOverridesTheName() throws {
        let path = directory.write("rows.csv", "{\"profileId\":\"p\",\"originalTransactionId\":\"5\"}\n")
        #expect(try readAll(path, format: .jsonl) == [row("p", "5", line: 1)])
    }

    @Test func aMissingFileSaysSo() throws {
        let path = directory.file("nope.csv")
        let error = expectInputError(.fileMissing) { _ = try readAll(path) }
        #expect(error?.path == path)
        #expect(error?.message.contains(path) == true)
        #expect(error?.description == error?.message)
    }

    @Test func aDirectoryIsUnreadable() throws {
        let path = directory.file("folder.csv")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        expectInputError(.unreadable) { _ = try readAll(path) }
    }

    @Test func anUnreadableFileSaysSo() throws {
        guard getuid() != 0 else { return }  // root reads anything
        let path = directory.write("secret.csv", Self.csv)
        chmod(path, 0)
        expectInputError(.unreadable) { _ = try readAll(path) }
    }

    /// What progress shows as read: the bytes behind the records returned, not the window read
    /// ahead of them (a first-day review saw "45% read" at 1,120 rows of 20,000).
    @Test(arguments: [false, true])
    func bytesConsumedFollowTheRecordsNotTheReadAhead(gzipped: Bool) throws {
        let header = "profileId,originalTransactionId\n"
        let rows = (0..<20_000).map { "profile-\($0 + 100_000),\(2_000_000_000_000_000 + $0)\n" }
        let text = header + rows.joined()
        let path =
            gzipped ? try directory.writeGzip("many.csv.gz", Array(text.utf8)) : directory.write("many.csv", text)
        let reader = try InputReader(path: path, format: .csv)
        let total = try #require(reader.totalBytes)
        var returned = 0
        while returned < 1_000, try reader.next() != nil { returned += 1 }
        let behind = Double(reader.bytesConsumed) / Double(total)
        let wanted = Double(returned) / Double(rows.count)
        #expect(reader.bytesRead > reader.bytesConsumed, "a window was read ahead")
        if gzipped {
            #expect(abs(behind - wanted) < 0.03, "\(behind) of the file behind 5% of the rows")
        } else {
            let exact = (header + rows.prefix(returned).joined()).utf8.count
            #expect(reader.bytesConsumed == Int64(exact), "\(reader.bytesConsumed) of \(exact)")
        }
        var last = reader.bytesConsumed
        while try reader.next() != nil {
            #expect(reader.bytesConsumed >= last)
            last = reader.bytesConsumed
        }
        #expect(reader.bytesConsumed == total && reader.bytesRead == total)
    }

    @Test func sizeBytesReadAndDigestOfAPlainFile() throws {
        let path = directory.write("rows.csv", Self.csv)
        let reader = try InputReader(path: path, format: nil)
        #expect(reader.displayName == path)
        #expect(reader.totalBytes == Int64(Self.csv.utf8.count))
        #expect(reader.bytesRead > 0)
        #expect(reader.isCompressed == false)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == Self.csvRows)
        #expect(reader.bytesRead == Int64(Self.csv.utf8.count))
        #expect(reader.sha256Hex == (try systemSHA256(path)))
        #expect(try reader.next() == nil)
        reader.close()
        #expect(try reader.next() == nil)
    }

    @Test func bytesReadGrowsWhileReadingALargeFile() throws {
        var text = "profileId,originalTransactionId\n"
        for index in 0..<50_000 { text += "profile-\(index),\(1_000_000 + index)\n" }
        let path = directory.write("big.csv", text)
        let reader = try InputReader(path: path, format: nil)
        let total = try #require(reader.totalBytes)
        #expect(total == Int64(text.utf8.count))
        #expect(reader.bytesRead < total)
        var count = 0
        var sawPartial = false
        while let record = try reader.next() {
            #expect(record.asRow != nil)
            count += 1
            if reader.bytesRead < total { sawPartial = true }
        }
        #expect(count == 50_000)
        #expect(sawPartial)
        #expect(reader.bytesRead == total)
        #expect(reader.sha256Hex == (try systemSHA256(path)))
    }

    @Test func readsGzipAsAStream() throws {
        let path = try directory.writeGzip("rows.csv.gz", Array(Self.csv.utf8))
        let reader = try InputReader(path: path, format: nil)
        #expect(reader.isCompressed)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == Self.csvRows)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(reader.bytesRead == Int64(try #require(size)))
        #expect(reader.totalBytes == reader.bytesRead)
        #expect(reader.sha256Hex == (try systemSHA256(path)))
    }

    @Test func recognisesGzipByItsMagicBytes() throws {
        let jsonl = "{\"profileId\":\"p\",\"originalTransactionId\":\"7\"}\n"
        let path = try directory.writeGzip("export.jsonl", Array(jsonl.utf8))
        #expect(try readAll(path) == [row("p", "7", line: 1)])
    }

    @Test func readsConcatenatedGzipMembers() throws {
        let first = try directory.writeGzip("a.gz", Array("profileId,originalTransactionId\np1,1\n".utf8))
        let second = try directory.writeGzip("b.gz", Array("p2,2\n".utf8))
        let joined =
            Array(try Data(contentsOf: URL(fileURLWithPath: first)))
            + Array(try Data(contentsOf: URL(fileURLWithPath: second)))
        let path = directory.write("joined.csv.gz", joined)
        #expect(try readAll(path) == Self.csvRows)
    }

    @Test func readsLargeGzipContent() throws {
        var text = "profileId,originalTransactionId\n"
        for index in 0..<100_000 { text += "p\(index),\(index + 1)\n" }
        let path = try directory.writeGzip("big.csv.gz", Array(text.utf8))
        let records = try readAll(path)
        #expect(records.count == 100_000)
        #expect(records.last == row("p99999", "100000", line: 100_001))
    }

    @Test func aTruncatedGzipFileFailsWhileReading() throws {
        var text = "profileId,originalTransactionId\n"
        for index in 0..<20_000 { text += "p\(index),\(index + 1)\n" }
        let path = try directory.writeGzip("whole.csv.gz", Array(text.utf8))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let truncated = directory.write("cut.csv.gz", Array(bytes.prefix(bytes.count / 2)))
        let error = expectInputError(.damaged) { _ = try readAll(truncated) }
        #expect(error?.message.contains("gzip -t") == true)
    }

    @Test func corruptGzipDataFailsWhileReading() throws {
        var bytes = Array(
            try Data(contentsOf: URL(fileURLWithPath: directory.writeGzip("ok.gz", Array(Self.csv.utf8)))))
        for index in 12..<bytes.count - 8 { bytes[index] ^= 0x5A }
        let path = directory.write("bad.csv.gz", bytes)
        expectInputError(.damaged) { _ = try readAll(path) }
    }

    @Test func aGzipNameWithPlainContentIsReadAsIs() throws {
        let path = directory.write("plain.csv.gz", Self.csv)
        #expect(try readAll(path) == Self.csvRows)
    }

    @Test func readsBytesFromMemoryLikeAFile() throws {
        let bytes = Array(Self.csv.utf8)
        let reader = try InputReader(bytes: bytes, name: "memory.csv", format: nil)
        #expect(reader.displayName == "memory.csv")
        #expect(reader.totalBytes == Int64(bytes.count))
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == Self.csvRows)
        #expect(reader.bytesRead == Int64(bytes.count))
        #expect(reader.sha256Hex == SHA256.hex(of: bytes))

        let gzipped = Array(try Data(contentsOf: URL(fileURLWithPath: directory.writeGzip("m.gz", bytes))))
        let fromGzip = try InputReader(bytes: gzipped, name: "memory", format: .csv)
        #expect(fromGzip.isCompressed)
        var gzipRecords: [InputRecord] = []
        while let record = try fromGzip.next() { gzipRecords.append(record) }
        #expect(gzipRecords == Self.csvRows)

        let error = expectInputError(.unknownFormat) { _ = try InputReader(bytes: bytes, name: "memory", format: nil) }
        #expect(error?.message.contains("'memory'") == true)
    }

    @Test func extremeRecordLimitsDoNotTrap() throws {
        let path = directory.write("rows.csv", Self.csv)
        #expect(try readAll(path, maxRecordBytes: Int.max) == Self.csvRows)
        // A limit of 0 is taken as 1: the header itself is then too long.
        expectInputError(.notTabular) { _ = try readAll(path, maxRecordBytes: 0) }
    }

    @Test func aFIFOHasNoKnownSize() throws {
        let path = directory.file("pipe.csv")
        try #require(mkfifo(path, 0o600) == 0)
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.write(Data(Self.csv.utf8))
                try? handle.close()
            }
        }
        writer.start()
        let reader = try InputReader(path: path, format: nil)
        #expect(reader.totalBytes == nil)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == Self.csvRows)
        #expect(reader.bytesRead == Int64(Self.csv.utf8.count))
    }
}
