import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

@Suite struct CSVReaderTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    func read(_ text: String, columns: ColumnNames = .init(), maxRecordBytes: Int = 1 << 20) throws -> [InputRecord] {
        try readAll(directory.write("input.csv", text), columns: columns, maxRecordBytes: maxRecordBytes)
    }

    func read(bytes: [UInt8], maxRecordBytes: Int = 1 << 20) throws -> [InputRecord] {
        try readAll(directory.write("input.csv", bytes), maxRecordBytes: maxRecordBytes)
    }

    @Test func readsRowsWithTheirLineNumbers() throws {
        let records = try read("profileId,originalTransactionId\np1,2000000261699248\np2,2000000261699249\n")
        #expect(records == [row("p1", "2000000261699248", line: 2), row("p2", "2000000261699249", line: 3)])
    }

    @Test(arguments: [
        "profile_id,original_transaction_id",
        "PROFILE_ID,ORIGINAL_TRANSACTION_ID",
        " profileId , originalTransactionId ",
        "\"profileId\",\"originalTransactionId\"",
    ])
    func acceptsTheHeaderSpellings(header: String) throws {
        let records = try read("\(header)\np1,123\n")
        #expect(records == [row("p1", "123", line: 2)])
    }

    @Test func ignoresExtraColumnsInAnyOrder() throws {
        let records = try read("price,original_transaction_id,currency,profile_id\n9.99,123,EUR,p1\n")
        #expect(records == [row("p1", "123", line: 2)])
    }

    @Test func usesTheUsersColumnNames() throws {
        let columns = ColumnNames(profile: "app_user_id", transaction: "original_id")
        let records = try read("app_user_id,receipt,original_id\nu1,xyz,456\n", columns: columns)
        #expect(records == [row("u1", "456", line: 2)])
        // The defaults no longer apply once a name is given.
        expectInputError(.missingColumns) {
            _ = try read("profileId,original_id\np1,1\n", columns: ColumnNames(profile: "user", transaction: nil))
        }
    }

    @Test func handlesQuotedFieldsDoubledQuotesCommasAndNewlines() throws {
        let text =
            "profileId,note,originalTransactionId\n\"p,1\",\"say \"\"hi\"\"\",123\n"
            + "\"p\"\"2\",\"two\nlines\",456\np3,,789\n"
        let records = try read(text)
        #expect(
            records == [
                row("p,1", "123", line: 2),
                row("p\"2", "456", line: 3),
                row("p3", "789", line: 5),
            ])
    }

    @Test func multiLineQuotedFieldsKeepLineNumbersRightWithCRLF() throws {
        let records = try read("profileId,x,originalTransactionId\r\np1,\"a\r\nb\r\nc\",1\r\np2,,2\r\n")
        #expect(records == [row("p1", "1", line: 2), row("p2", "2", line: 5)])
    }

    @Test func acceptsCRLFLoneCRAndMixedLineEnds() throws {
        let records = try read("profileId,originalTransactionId\r\np1,1\rp2,2\np3,3\r\n\r\rp4,4")
        #expect(
            records == [
                row("p1", "1", line: 2), row("p2", "2", line: 3), row("p3", "3", line: 4), row("p4", "4", line: 7),
            ])
    }

    @Test func skipsTheByteOrderMarkAndBlankLines() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("\nprofileId,originalTransactionId\n\n  \t \np1,1\n\n".utf8)
        let records = try read(bytes: bytes)
        #expect(records == [row("p1", "1", line: 5)])
    }

    /// A line of only spaces is blank, but a quoted field on a line of its own is a record, however
    /// empty: a short one, rejected where it stands, not a line skipped without a word.
    @Test func aLineOfOneQuotedFieldIsARecordNotABlankLine() throws {
        for line in ["\"\"", "\"  \""] {
            let records = try read("profileId,originalTransactionId\n\(line)\np2,2\n")
            #expect(records.count == 2, "\(line)")
            #expect(records.first?.asRejected?.reason == .malformedCSV, "\(line)")
            #expect(records.first?.line == 2, "\(line)")
            #expect(records.last == row("p2", "2", line: 3), "\(line)")
        }
    }

    @Test func readsTheLastRecordWithoutALineEnd() throws {
        #expect(try read("profileId,originalTransactionId\np1,1") == [row("p1", "1", line: 2)])
        #expect(try read("profileId,originalTransactionId\n\"p1\",\"1\"") == [row("p1", "1", line: 2)])
        #expect(try read("profileId,originalTransactionId") == [])
    }

    @Test func aShortRecordIsMalformed() throws {
        let records = try read("profileId,originalTransactionId\np1\np2,2\n")
        let rejected = try #require(records.first?.asRejected)
        #expect(rejected.reason == .malformedCSV)
        #expect(rejected.line == 2)
        #expect(rejected.profileId == "p1")
        #expect(rejected.originalTransactionId == nil)
        #expect(rejected.message.contains("1 field"))
        #expect(records.dropFirst().elementsEqual([row("p2", "2", line: 3)]))
    }

    @Test func aStrayQuoteIsMalformedAndReadingResumesOnTheNextLine() throws {
        let records = try read("profileId,originalTransactionId\npro\"file,1\np2,2\n\"p3\"x,3\np4,4\n")
        #expect(records.count == 4)
        #expect(records[0].asRejected?.reason == .malformedCSV)
        #expect(records[0].line == 2)
        #expect(records[1] == row("p2", "2", line: 3))
        #expect(records[2].asRejected?.reason == .malformedCSV)
        #expect(records[2].asRejected?.message.contains("after the closing quote") == true)
        #expect(records[3] == row("p4", "4", line: 5))
    }

    /// `p1, "2000"` is how people type a list: the message names the spaces, not the quote.
    @Test func spacesAroundAQuotedFieldAreNamedInTheMessage() throws {
        let records = try read("profileId,originalTransactionId\np1, \t\"1\"\n\"p2\" ,2\np3,x\"1\"\n\"p4\"x,4\n")
        let messages = records.map { $0.asRejected?.message ?? "" }
        #expect(records.map { $0.asRejected?.reason } == Array(repeating: .malformedCSV, count: 4))
        #expect(messages[0].contains("has spaces before the opening quote of field 2"), "\(messages[0])")
        #expect(messages[1].contains("has a space after the closing quote of field 1"), "\(messages[1])")
        #expect(messages[2].contains("a quote inside unquoted field 2"), "\(messages[2])")
        #expect(messages[3].contains("has text after the closing quote of field 1"), "\(messages[3])")
    }

    @Test func anUnterminatedQuoteDoesNotSwallowTheRestOfTheFile() throws {
        // The quote on line 3 is never closed: only line 3 is lost.
        let records = try read("profileId,originalTransactionId\np1,1\n\"p2,2\np3,3\np4,4\n")
        #expect(records.count == 4)
        #expect(records[0] == row("p1", "1", line: 2))
        let rejected = try #require(records[1].asRejected)
        #expect(rejected.reason == .malformedCSV)
        #expect(rejected.line == 3)
        #expect(rejected.message.contains("never closed"))
        #expect(records[2] == row("p3", "3", line: 4))
        #expect(records[3] == row("p4", "4", line: 5))
    }

    @Test func anUnterminatedQuoteOnTheLastLineIsMalformed() throws {
        let records = try read("profileId,originalTransactionId\np1,1\np2,\"2")
        #expect(records.count == 2)
        #expect(records[1].asRejected?.reason == .malformedCSV)
        #expect(records[1].line == 3)
    }

    @Test func anUnterminatedQuoteIsBoundedByMaxRecordBytes() throws {
        var text = "profileId,originalTransactionId\n\"p1,1\n"
        for index in 0..<2000 { text += "p\(index),\(index + 1)\n" }
        let records = try read(text, maxRecordBytes: 256)
        #expect(records.count == 2001)
        #expect(records[0].asRejected?.reason == .malformedCSV)
        #expect(records[0].asRejected?.message.contains("not closed within 256 bytes") == true)
        #expect(records[1] == row("p0", "1", line: 3))
        #expect(records.last == row("p1999", "2000", line: 2002))
    }

    @Test func aLongLineIsRejectedWithoutBufferingIt() throws {
        let long = String(repeating: "x", count: 5 << 20)
        let path = directory.write("long.csv", "profileId,originalTransactionId\np1,1\n\(long),2\np3,3\n")
        let reader = try InputReader(path: path, format: nil, maxRecordBytes: 4096)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records.count == 3)
        #expect(records[1].asRejected?.reason == .lineTooLong)
        #expect(records[1].line == 3)
        #expect(records[2] == row("p3", "3", line: 4))
        #expect(reader.bufferCapacityForTesting <= 4096 + 2 * ByteWindow.chunkSize)
    }

    @Test func aRecordJustUnderTheLimitIsRead() throws {
        let profile = String(repeating: "p", count: 100)
        let records = try read("profileId,originalTransactionId\n\(profile),1\n", maxRecordBytes: 102)
        #expect(records == [row(profile, "1", line: 2)])
        let tooLong = try read("profileId,originalTransactionId\n\(profile),12\n", maxRecordBytes: 102)
        #expect(tooLong.first?.asRejected?.reason == .lineTooLong)
    }

    @Test func readsTenThousandColumns() throws {
        let names = (0..<10_000).map { "c\($0)" }
        var header = names
        header[9_998] = "profileId"
        header[3] = "originalTransactionId"
        var values = names
        values[9_998] = "p1"
        values[3] = "42"
        let records = try read(header.joined(separator: ",") + "\n" + values.joined(separator: ",") + "\n")
        #expect(records == [row("p1", "42", line: 2)])
    }

    @Test func nulBytesAreDataNotTerminators() throws {
        let bytes = Array("profileId,other,originalTransactionId\np\u{0}1,x,1\np2,a\u{0}b,2\n".utf8)
        let records = try read(bytes: bytes)
        #expect(records.count == 2)
        #expect(records[0].asRejected?.reason == .invalidProfileId)
        #expect(records[0].asRejected?.profileId == "p\u{0}1")
        #expect(records[1] == row("p2", "2", line: 3))
    }

    @Test func invalidUTF8IsRejectedPerField() throws {
        var bytes = Array("profileId,originalTransactionId\n".utf8)
        bytes += [0x70, 0xFF, 0xFE] + Array(",1\n".utf8)
        bytes += Array("p2,12".utf8) + [0xC3] + Array("\n".utf8)
        bytes += Array("p3,3\n".utf8)
        let records = try read(bytes: bytes)
        #expect(records.count == 3)
        #expect(records[0].asRejected?.reason == .invalidProfileId)
        #expect(records[0].asRejected?.profileId == "p\u{FFFD}\u{FFFD}")
        #expect(records[1].asRejected?.reason == .invalidTransactionId)
        #expect(records[2] == row("p3", "3", line: 4))
    }

    @Test func sqlTextIsKeptLiterally() throws {
        let records = try read("profileId,originalTransactionId\n\"'); DROP TABLE items; --\",1\n")
        #expect(records == [row("'); DROP TABLE items; --", "1", line: 2)])
    }

    // MARK: inputs unusable as a whole

    @Test func aHeaderWithoutTheColumnsThrowsAndListsIt() throws {
        let error = expectInputError(.missingColumns) {
            _ = try read("user,transaction\nu1,1\n")
        }
        let message = try #require(error?.message)
        #expect(message.contains("'user', 'transaction'"))
        #expect(message.contains("--profile-column"))
        #expect(message.contains("--transaction-column"))
        #expect(message.contains("input.csv"))
        #expect(error?.path == directory.file("input.csv"))
    }

    @Test func aHeaderMissingOneColumnNamesIt() throws {
        let error = expectInputError(.missingColumns) { _ = try read("profileId,transaction_id\np,1\n") }
        #expect(error?.message.contains("the transaction column") == true)
        #expect(error?.message.contains("the profile column") == false)
    }

    @Test func aSemicolonHeaderReadWithACommaGetsAHint() throws {
        let error = expectInputError(.missingColumns) {
            _ = try readAll(
                directory.write("input.csv", "profileId;originalTransactionId\np;1\n"), format: nil,
                options: InputOptions(delimiter: ASCII.comma))
        }
        #expect(error?.message.contains("semicolons; pass --delimiter ';'") == true)
    }

    @Test func binaryDataIsNotTabular() throws {
        let bytes: [UInt8] = [0x00, 0x01, 0xFF, 0xFE, 0x89, 0x50, 0x4E, 0x47, 0x0A, 0x00]
        expectInputError(.notTabular) { _ = try read(bytes: bytes) }
    }

    @Test func jsonGivenAsCSVIsNotTabular() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("{\"profileId\": \"p\", \"originalTransactionId\": \"1\"}\n")
        }
        #expect(error?.message.contains("--format jsonl") == true)
    }

    @Test func aHeaderLongerThanTheLimitIsNotTabular() throws {
        expectInputError(.notTabular) {
            _ = try read(String(repeating: "a", count: 10_000) + "\n", maxRecordBytes: 1000)
        }
    }
}
