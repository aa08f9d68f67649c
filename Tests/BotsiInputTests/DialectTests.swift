import Foundation
import Testing

@testable import BotsiInput

/// CSV dialects: the delimiter, files without a header, and headers that name a field twice.
@Suite struct DialectTests {
    func read(
        _ text: String, name: String = "input.csv", options: InputOptions = .init(), readLimit: Int = .max
    ) throws -> (records: [InputRecord], reader: InputReader) {
        try readBytes(Array(text.utf8), name: name, options: options, readLimit: readLimit)
    }

    @Test(arguments: [
        (";", UInt8(ascii: ";")), ("\t", ASCII.tab), ("|", UInt8(ascii: "|")), (",", ASCII.comma),
    ])
    func theDelimiterIsDetectedFromTheHeader(separator: String, byte: UInt8) throws {
        let text =
            ["profileId", "originalTransactionId", "note"].joined(separator: separator) + "\n"
            + ["p1", "1", "a"].joined(separator: separator) + "\n"
        for readLimit in [Int.max, 1, 3] {
            let (records, reader) = try read(text, readLimit: readLimit)
            #expect(records == [row("p1", "1", line: 2)])
            #expect(reader.delimiter == byte)
        }
    }

    @Test func commasInsideASemicolonFileAreData() throws {
        // Excel in Europe: decimal commas, quoted or not; a quoted ';' is data too.
        let text = "profileId;originalTransactionId;price;note\np1;11;\"4,99\";a\np2;22;7,99;\"x;y\"\n"
        let (records, reader) = try read(text)
        #expect(reader.delimiter == UInt8(ascii: ";"))
        #expect(records == [row("p1", "11", line: 2), row("p2", "22", line: 3)])
    }

    @Test func quotedDelimitersInTheHeaderDoNotCount() throws {
        let text = "\"a,b,c\";profileId;originalTransactionId\nx;p;1\n"
        let (records, reader) = try read(text)
        #expect(reader.delimiter == UInt8(ascii: ";"))
        #expect(records == [row("p", "1", line: 2)])
    }

    @Test func aTieGoesToTheComma() throws {
        let (_, reader) = try read("profileId,originalTransactionId,note;x;y\np,1,a;b;c\n")
        #expect(reader.delimiter == ASCII.comma)
    }

    @Test func aTSVNameMeansTabsEvenWithCommasInTheHeader() throws {
        let text = "profileId\toriginalTransactionId\tnote, with commas, many\np1\t1\ta,b\n"
        let (records, reader) = try read(text, name: "dump.tsv")
        #expect(reader.delimiter == ASCII.tab)
        #expect(records == [row("p1", "1", line: 2)])
    }

    @Test func aGivenDelimiterWins() throws {
        // Two pipes and two semicolons: detection takes the semicolon, which splits wrongly.
        let text = "profileId|originalTransactionId|note;with;semicolons\np|1|x;y;z\n"
        expectInputError(.missingColumns) { _ = try read(text) }
        let (records, _) = try read(text, options: InputOptions(delimiter: UInt8(ascii: "|")))
        #expect(records == [row("p", "1", line: 2)])
    }

    // MARK: no header

    @Test func withoutAHeaderTheFirstLineIsARowAndPositionsNameTheColumns() throws {
        let text = "x,p1,2000000000000001\ny,p2,2000000000000002\n"
        let options = InputOptions(hasHeader: false, positions: ColumnPositions(profile: 2, transaction: 3))
        let (records, _) = try read(text, options: options)
        #expect(records == [row("p1", "2000000000000001", line: 1), row("p2", "2000000000000002", line: 2)])
    }

    @Test func withoutAHeaderThePositionsDefaultToOneAndTwo() throws {
        let (records, _) = try read("p1;1;a\r\np2;2;b\r\n", options: InputOptions(hasHeader: false))
        #expect(records == [row("p1", "1", line: 1), row("p2", "2", line: 2)])
    }

    @Test func aShortRowWithoutAHeaderIsMalformed() throws {
        let options = InputOptions(hasHeader: false, positions: ColumnPositions(profile: 1, transaction: 3))
        let (records, _) = try read("p1,x,1\np2,2\n", options: options)
        #expect(records[0] == row("p1", "1", line: 1))
        #expect(records[1].asRejected?.reason == .malformedCSV)
        #expect(records[1].asRejected?.message.contains("needs at least 3") == true)
    }

    @Test(arguments: [ColumnPositions(profile: 0, transaction: 2), ColumnPositions(profile: 2, transaction: 2)])
    func badPositionsAreRefused(positions: ColumnPositions) throws {
        let error = expectInputError(.missingColumns) {
            _ = try read("p,1\n", options: InputOptions(hasHeader: false, positions: positions))
        }
        #expect(error?.message.contains("count from 1") == true)
    }

    @Test func aHeaderlessFileReadWithAHeaderGetsTheNoHeaderHint() throws {
        let error = expectInputError(.missingColumns) { _ = try read("p1,2000000000000001\np2,2000000000000002\n") }
        #expect(error?.message.contains("--no-header") == true)
    }

    // MARK: ambiguity

    @Test func twoColumnsForOneFieldStopTheReaderNamingBoth() throws {
        let text = "profileId,originalTransactionId,profile_id\np,1,q\n"
        let error = expectInputError(.notTabular) { _ = try read(text) }
        let message = error?.message ?? ""
        #expect(message.contains("'profileId' (column 1)") && message.contains("'profile_id' (column 3)"), "\(message)")
        #expect(message.contains("--profile-column"), "\(message)")
        #expect(message.contains("nothing was sent"), "\(message)")
    }

    @Test func twoTransactionColumnsNameTheirFlag() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("profileId,ORIGINAL_TRANSACTION_ID,originalTransactionId\np,1,2\n")
        }
        #expect(error?.message.contains("--transaction-column") == true)
    }

    @Test func theFlagPicksOneOfTwoNamesThatDifferOnlyInCase() throws {
        let text = "profileId,PROFILEID,originalTransactionId\np,q,1\n"
        expectInputError(.notTabular) { _ = try read(text) }
        let (records, _) = try read(text, options: InputOptions(columns: ColumnNames(profile: "PROFILEID")))
        #expect(records == [row("q", "1", line: 2)])
    }

    @Test func twoColumnsWithTheSameNameCannotBePickedByName() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("profileId,profileId,originalTransactionId\np,q,1\n")
        }
        #expect(error?.message.contains("Remove or rename") == true)
    }

    // MARK: names as people write them (issue 19, item 16)

    @Test(arguments: [
        "Price;profile_id;Original Transaction ID", "price,Profile ID,original-transaction-id",
        "PROFILE_ID\tORIGINAL_TRANSACTION_ID\tprice", "price|profile-id|Original_Transaction_Id",
    ])
    func headerNamesMatchIgnoringCaseSpacesUnderscoresAndHyphens(header: String) throws {
        let separator = header.first { ";,\t|".contains($0) }!
        let names = header.split(separator: separator).map(String.init)
        let values = names.map {
            $0.lowercased().contains("profile") ? "p1" : $0.lowercased() == "price" ? "4" : "2000"
        }
        let (records, _) = try read(header + "\n" + values.joined(separator: String(separator)) + "\n")
        #expect(records == [row("p1", "2000", line: 2)])
    }

    @Test func twoColumnsThatMeanOneFieldAreStillRefusedWhateverTheirSpelling() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("Profile ID,originalTransactionId,profile-id\np,1,q\n")
        }
        let message = error?.message ?? ""
        #expect(
            message.contains("'Profile ID' (column 1)") && message.contains("'profile-id' (column 3)"), "\(message)")
        #expect(message.contains("--profile-column"), "\(message)")
    }

    @Test func aNearMissHeaderNameIsSuggested() throws {
        let error = expectInputError(.missingColumns) { _ = try read("profile_id,original_transaction\np,1\n") }
        let message = error?.message ?? ""
        #expect(message.contains("Did you mean 'original_transaction'"), "\(message)")
        #expect(message.contains("--transaction-column original_transaction"), "\(message)")
    }

    @Test func aNameFarFromEveryFieldGetsNoSuggestion() throws {
        let error = expectInputError(.missingColumns) { _ = try read("profile_id,price\np,1\n") }
        #expect(error?.message.contains("Did you mean") == false, "\(error?.message ?? "")")
    }

    @Test func aNamedTransactionColumnIsNotAlsoReadAsAReceipt() throws {
        let (records, _) = try read(
            "profileId,receipt\np,1\n", options: InputOptions(columns: ColumnNames(transaction: "receipt")))
        #expect(records == [row("p", "1", line: 2)])
    }
}
