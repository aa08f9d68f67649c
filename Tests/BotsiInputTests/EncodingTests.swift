import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

/// Text encodings, files that are not text, and empty inputs.
@Suite struct EncodingTests {
    static func utf16(_ text: String, bigEndian: Bool = false, mark: Bool = true) -> [UInt8] {
        let units = Array(text.utf16)
        let bytes = units.flatMap { unit -> [UInt8] in
            let high = UInt8(unit >> 8)
            let low = UInt8(unit & 0xFF)
            return bigEndian ? [high, low] : [low, high]
        }
        return (mark ? (bigEndian ? [0xFE, 0xFF] : [0xFF, 0xFE]) : []) + bytes
    }

    /// Windows-1252 for the few non-ASCII characters these tests use.
    static func windows1252(_ text: String) -> [UInt8] {
        text.unicodeScalars.map { scalar in
            switch scalar {
            case "€": return 0x80
            case "–": return 0x96
            default:
                precondition(scalar.value < 0x100, "not in the test's table")
                return UInt8(scalar.value)
            }
        }
    }

    // MARK: UTF-16

    @Test(arguments: [false, true])
    func utf16WithAByteOrderMarkIsTranscodedWithItsLineNumbers(bigEndian: Bool) throws {
        let text = "profileId\toriginalTransactionId\tnote\r\nmüller-🎉\t11\t\"two\r\nlines\"\r\np2\t22\tZoë\r\n"
        for readLimit in [Int.max, 1, 7] {
            let (records, reader) = try readBytes(
                Self.utf16(text, bigEndian: bigEndian), name: "export.txt", readLimit: readLimit)
            #expect(records == [row("müller-🎉", "11", line: 2), row("p2", "22", line: 4)], "read limit \(readLimit)")
            #expect(reader.delimiter == ASCII.tab)
        }
    }

    @Test func utf16WithoutAMarkIsRecognisedByItsZeroBytes() throws {
        let text = "profileId,originalTransactionId\np1,1\n"
        #expect(try readBytes(Self.utf16(text, mark: false), name: "a.csv").records == [row("p1", "1", line: 2)])
        let bigEndian = Self.utf16(text, bigEndian: true, mark: false)
        #expect(try readBytes(bigEndian, name: "a.csv").records == [row("p1", "1", line: 2)])
    }

    @Test func anUnpairedSurrogateInAnIdIsRejectedNotChanged() throws {
        var bytes = Self.utf16("profileId,originalTransactionId\np")
        bytes += [0x00, 0xD8]  // a high surrogate with no low one after it
        bytes += Self.utf16("x,1\nq", mark: false)
        bytes += [0x00, 0xDC]  // a low surrogate with no high one before it
        bytes += Self.utf16(",1\np2,2", mark: false)
        bytes += [0x41]  // an odd last byte
        let records = try readBytes(bytes, name: "a.csv").records
        #expect(records.count == 3)
        #expect(records[0].asRejected?.reason == .invalidProfileId)
        #expect(records[1].asRejected?.reason == .invalidProfileId)
        #expect(records[2].asRejected?.reason == .invalidTransactionId)
        #expect(records[2].asRejected?.profileId == "p2")
    }

    // MARK: single-byte encodings

    @Test func windows1252BytesInColumnsNotReadNeverStopTheRun() throws {
        let text = "profileId;originalTransactionId;Preis;Währung\r\np1;11;\"4,99 €\";EUR\r\np2;22;5 – 7 €;EUR\r\n"
        let records = try readBytes(Self.windows1252(text), name: "excel.csv").records
        #expect(records == [row("p1", "11", line: 2), row("p2", "22", line: 3)])
    }

    @Test func aWindows1252IdIsRejectedWithTheEncodingFlagAndReadWithIt() throws {
        let bytes = Self.windows1252("profileId;originalTransactionId\r\nmüller;11\r\n")
        let rejected = try readBytes(bytes, name: "excel.csv").records.first?.asRejected
        #expect(rejected?.reason == .invalidProfileId)
        #expect(rejected?.message.contains("--encoding windows-1252") == true)
        let options = InputOptions(encoding: .windows1252)
        #expect(try readBytes(bytes, name: "excel.csv", options: options).records == [row("müller", "11", line: 2)])
        #expect(
            try readBytes(bytes, name: "excel.csv", options: InputOptions(encoding: .latin1)).records == [
                row("müller", "11", line: 2)
            ])
    }

    @Test func windows1252MapsItsOwnRangeAndLatin1DoesNot() throws {
        let bytes: [UInt8] = Array("profileId,originalTransactionId\n".utf8) + [0x80, 0x93, 0x41] + Array(",1\n".utf8)
        let windows = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .windows1252)).records
        #expect(windows == [row("€“A", "1", line: 2)])
        let latin = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .latin1)).records
        // U+0080 and U+0093 are control characters: not a profile id.
        #expect(latin.first?.asRejected?.reason == .invalidProfileId)
    }

    @Test func aHeaderNeedingTheEncodingSaysSo() throws {
        let bytes = Self.windows1252("Kundennummer;Transaktion;Währung\r\np;1;EUR\r\n")
        let error = expectInputError(.missingColumns) { _ = try readBytes(bytes, name: "a.csv") }
        #expect(error?.message.contains("--encoding windows-1252") == true)
    }

    @Test func aSingleByteEncodingForUTF8TextIsRefused() throws {
        let bytes = Array("profileId,originalTransactionId\nmüller,1\n".utf8)
        let error = expectInputError(.notTabular) {
            _ = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .windows1252))
        }
        #expect(error?.message.contains("drop --encoding windows-1252") == true)
    }

    @Test func aByteOrderMarkWinsOverTheEncodingFlag() throws {
        let bytes = Self.utf16("profileId,originalTransactionId\nmüller,1\n")
        let records = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .latin1)).records
        #expect(records == [row("müller", "1", line: 2)])
    }

    // MARK: not text

    @Test(arguments: [
        ("export.xlsx", [0x50, 0x4B, 0x03, 0x04, 0x14, 0x00] as [UInt8], "an Excel workbook"),
        ("export.csv", [0x50, 0x4B, 0x03, 0x04, 0x14, 0x00], "a ZIP archive"),
        ("Subscriptions.numbers", [0x50, 0x4B, 0x03, 0x04], "a Numbers document"),
        ("old.xls", [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0], "an old-style Office document"),
        ("report.csv", Array("%PDF-1.7\n%âãÏÓ\n".utf8), "a PDF document"),
        ("journal.csv", Array("SQLite format 3".utf8) + [0, 0x10], "an SQLite database"),
        ("rows.csv", [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00, 0x00], "compressed with xz"),
        ("rows.csv", [0xFF, 0xFE, 0x00, 0x00, 0x70, 0x00, 0x00, 0x00], "UTF-32 text"),
    ])
    func filesThatAreNotTextAreRecognisedByTheirFirstBytes(name: String, bytes: [UInt8], what: String) throws {
        for format in [nil, InputFormat.csv, .json] {
            let error = expectInputError(.notTabular) {
                _ = try readBytes(bytes + Array(repeating: 0x41, count: 40), name: name, format: format)
            }
            let message = error?.message ?? ""
            #expect(message.contains(what), "\(message)")
            #expect(message.contains("export it as CSV (UTF-8)"), "\(message)")
            #expect(message.contains("'\(name)'"), "\(message)")
        }
    }

    @Test func aGzippedWorkbookIsRecognisedInside() throws {
        let directory = Workspace()
        let path = try directory.writeGzip("export.csv.gz", [0x50, 0x4B, 0x03, 0x04] + Array(repeating: 7, count: 100))
        let error = expectInputError(.notTabular) { _ = try readAll(path) }
        #expect(error?.message.contains("ZIP archive") == true)
    }

    // MARK: empty inputs

    @Test(arguments: [
        ([] as [UInt8], EmptyInput.zeroBytes), ([0xEF, 0xBB, 0xBF], .blank), (Array("\r\n\n".utf8), .blank),
        (Array("profileId,originalTransactionId\r\n".utf8), .headerOnly),
        (Array("profileId,originalTransactionId\n\n  \n".utf8), .headerOnly),
    ])
    func anEmptyCSVIsZeroRowsAndSaysWhy(bytes: [UInt8], why: EmptyInput) throws {
        let (records, reader) = try readBytes(bytes, name: "night.csv")
        #expect(records.isEmpty)
        #expect(reader.noRows == why)
    }

    @Test(arguments: [
        ([] as [UInt8], EmptyInput.zeroBytes), (Array(" \n\t\n".utf8), .blank), (Array("[ ]\n".utf8), .emptyArray),
    ])
    func anEmptyJSONInputIsZeroRowsAndSaysWhy(bytes: [UInt8], why: EmptyInput) throws {
        let (records, reader) = try readBytes(bytes, name: "night.jsonl")
        #expect(records.isEmpty)
        #expect(reader.noRows == why)
    }

    @Test func anInputWithRowsHasNoEmptiness() throws {
        let (_, reader) = try readBytes(Array("profileId,originalTransactionId\np,x\n".utf8), name: "a.csv")
        #expect(reader.noRows == nil)
    }

    @Test func aGzippedEmptyFileIsZeroBytes() throws {
        let directory = Workspace()
        let path = try directory.writeGzip("night.csv.gz", [])
        let reader = try InputReader(path: path, format: nil)
        #expect(try reader.next() == nil)
        #expect(reader.noRows == .zeroBytes)
        #expect(EmptyInput.zeroBytes.isWarning && !EmptyInput.headerOnly.isWarning)
        #expect(EmptyInput.zeroBytes.message(input: "night.csv.gz").contains("failed or interrupted export"))
    }

    // MARK: sweep of TextSource (docs/testing.md)

    @Test(arguments: [Int.max, 1, 3])
    func charactersAtEveryUTF8LengthBoundaryAreTranscodedExactly(readLimit: Int) throws {
        // 1-, 2-, 3- and 4-byte UTF-8 at their edges, and pairs whose low half ends in 0x3FF; the
        // last line has no line end and ends in a pair, so the last unit of the file is a low half.
        let id = "ÿ߿ࠀ￦𐀀𠀀𠏿"
        let text = "originalTransactionId,profileId\r\n1,\(id)\r\n2,end-🎉"
        for bigEndian in [false, true] {
            let records = try readBytes(Self.utf16(text, bigEndian: bigEndian), name: "a.csv", readLimit: readLimit)
                .records
            #expect(records == [row(id, "1", line: 2), row("end-🎉", "2", line: 3)], "big-endian \(bigEndian)")
        }
    }

    @Test func aHighSurrogateWithoutItsLowHalfSpoilsOnlyItself() throws {
        var bytes = Self.utf16("profileId,originalTransactionId\np")
        bytes += [0x00, 0xD8]  // a high surrogate, then a letter instead of a low one
        bytes += Self.utf16("xy,1\n", mark: false)
        let rejected = try readBytes(bytes, name: "a.csv").records.first?.asRejected
        #expect(rejected?.reason == .invalidProfileId)
        // The letters after it are still there to see.
        #expect(rejected?.message.contains("xy'") == true, "\(rejected?.message ?? "")")
    }

    @Test(arguments: [Int.max, 4093])
    func utf16LargerThanTheTranscodingBufferIsReadToTheEnd(readLimit: Int) throws {
        // 5,000 rows of UTF-16 are about 150 KiB: the 64 KiB input buffer is refilled, and
        // surrogate pairs and CRLFs fall across its refills.
        var text = "profileId,originalTransactionId\r\n"
        for index in 1...5000 { text += "p\(index)-🎉,\(index)\r\n" }
        let records = try readBytes(Self.utf16(text), name: "big.csv", readLimit: readLimit).records
        #expect(records.count == 5000)
        #expect(records.first == row("p1-🎉", "1", line: 2))
        #expect(records.last == row("p5000-🎉", "5000", line: 5001))
        #expect(records.allSatisfy { $0.asRow != nil })
    }

    @Test func utf16WithoutAMarkOrAsciiFirstLettersFollowsTheEncodingFlag() throws {
        // "€" is 0xAC 0x20: no zero byte to recognise UTF-16 by, so --encoding utf-16 decides,
        // and without a mark UTF-16 is little-endian.
        let bytes = Self.utf16("€ Preis,profileId,originalTransactionId\n4 €,p1,1\n", mark: false)
        let records = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .utf16)).records
        #expect(records == [row("p1", "1", line: 2)])
    }

    @Test func aBlankUTF16FileWithoutAMarkIsBlank() throws {
        let (records, reader) = try readBytes(Self.utf16("\r\n", mark: false), name: "night.csv")
        #expect(records.isEmpty)
        #expect(reader.noRows == .blank)
    }

    @Test func aOneByteFileIsBlankNotZeroBytes() throws {
        let (records, reader) = try readBytes(Array("\n".utf8), name: "night.csv")
        #expect(records.isEmpty)
        #expect(reader.noRows == .blank)
    }

    @Test func windows1252MapsEveryByteItDefines() throws {
        // 0x80–0x9F but the five it leaves undefined, and one byte above them (é).
        let defined: [UInt8] = (0x80...0x9F).filter { ![0x81, 0x8D, 0x8F, 0x90, 0x9D].contains($0) } + [0xE9]
        let bytes = Array("profileId,originalTransactionId\n".utf8) + defined + Array(",1\n".utf8)
        let records = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: .windows1252)).records
        #expect(records == [row("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸé", "1", line: 2)])
    }

    @Test func asciiTextIsReadWhateverSingleByteEncodingIsNamed() throws {
        let bytes = Array("profileId,originalTransactionId\np1,1\n".utf8)
        for encoding in [InputEncoding.windows1252, .latin1] {
            let records = try readBytes(bytes, name: "a.csv", options: InputOptions(encoding: encoding)).records
            #expect(records == [row("p1", "1", line: 2)], "\(encoding)")
        }
    }

    @Test(arguments: [
        // old Mac line ends
        "profileId,originalTransactionId\rmüller,1\r",
        // a long header: the UTF-8 letters come after the first 64 bytes
        "profileId;originalTransactionId;productId;purchaseDate;expiresDate;storefront\nmüller;1;a;b;c;DEU\n",
    ])
    func aSingleByteEncodingForUTF8TextIsRefusedWhereverItsLettersAre(text: String) throws {
        let error = expectInputError(.notTabular) {
            _ = try readBytes(Array(text.utf8), name: "a.csv", options: InputOptions(encoding: .windows1252))
        }
        #expect(error?.message.contains("drop --encoding windows-1252") == true)
    }

    @Test func utf8LettersInAFirstLineThatArrivesInPiecesAreSeen() throws {
        // A pipe hands opening the header a few bytes at a time: it keeps reading to the line's
        // end rather than deciding on the first 16 bytes, so the letters in it count.
        signal(SIGPIPE, SIG_IGN)
        let directory = Workspace()
        let path = directory.file("pipe.csv")
        try #require(mkfifo(path, 0o600) == 0)
        let pieces = ["profileId,", "originalT", "ransactionId,Währung\np1,1,EUR\n"]
        let writer = Thread {
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            for piece in pieces {
                handle.write(Data(piece.utf8))
                Thread.sleep(forTimeInterval: 0.1)
            }
            try? handle.close()
        }
        writer.start()
        let error = expectInputError(.notTabular) {
            _ = try readAll(path, format: nil, options: InputOptions(encoding: .windows1252))
        }
        #expect(error?.message.contains("drop --encoding windows-1252") == true)
    }

    @Test(arguments: [
        ("empty.csv", [0x50, 0x4B, 0x05, 0x06] as [UInt8], "a ZIP archive"),
        ("macros.xlsm", [0x50, 0x4B, 0x03, 0x04], "an Excel workbook"),
        ("EXPORT.XLSX", [0x50, 0x4B, 0x03, 0x04], "an Excel workbook"),
        ("sheet.ods", [0x50, 0x4B, 0x03, 0x04], "an OpenDocument spreadsheet"),
        ("rows.csv", [0x7F, 0x45, 0x4C, 0x46, 0x02], "a program (ELF)"),
        ("rows.csv", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "an image"),
        ("rows.csv", [0xFF, 0xD8, 0xFF, 0xE0], "an image"),
        ("rows.csv", Array("GIF89a".utf8), "an image"),
        ("rows.csv", Array("BZh91AY&SY".utf8), "compressed with bzip2"),
        ("rows.csv", [0x28, 0xB5, 0x2F, 0xFD], "compressed with zstd"),
        ("rows.csv", [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C], "a 7-Zip archive"),
        ("rows.csv", [0x00, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x00, 0x70], "UTF-32 text"),
    ])
    func everyOtherKnownSignatureIsRefused(name: String, bytes: [UInt8], what: String) throws {
        let error = expectInputError(.notTabular) {
            _ = try readBytes(bytes + Array(repeating: 0x41, count: 40), name: name)
        }
        #expect(error?.message.contains(what) == true, "\(error?.message ?? "")")
    }
}
