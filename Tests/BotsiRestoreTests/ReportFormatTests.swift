import BotsiRestore
import Foundation
import Testing

@testable import BotsiJournal

struct CellCase: Sendable, CustomTestStringConvertible {
    let raw: String
    let written: String
    var testDescription: String { raw.debugDescription }
}

@Suite struct ReportFormatTests {
    static let cells: [CellCase] = [
        CellCase(raw: "=HYPERLINK(\"http://x\")", written: "\"'=HYPERLINK(\"\"http://x\"\")\""),
        CellCase(raw: "+1+1", written: "'+1+1"),
        CellCase(raw: "-2+3", written: "'-2+3"),
        CellCase(raw: "@SUM(A1)", written: "'@SUM(A1)"),
        CellCase(raw: "\t=1", written: "'\t=1"),
        CellCase(raw: "\r=1", written: "\"\r'=1\""),
        CellCase(raw: "ok\r\n-1", written: "\"ok\r\n'-1\""),
        CellCase(raw: "a\u{1B}b", written: "a\\u001Bb"),
        CellCase(raw: "=1,2", written: "\"'=1,2\""),
        CellCase(raw: "2000000000000002", written: "2000000000000002"),
        CellCase(raw: "a, b", written: "\"a, b\""),
        CellCase(raw: "a=b", written: "a=b"),
        // Only a line's first character can start a formula.
        CellCase(raw: "a-b, c", written: "\"a-b, c\""),
        CellCase(raw: "", written: ""),
    ]

    @Test(arguments: cells)
    func csvCellsThatASpreadsheetWouldRunAreNeutralised(_ cell: CellCase) {
        #expect(CSVText.cell(cell.raw) == cell.written)
    }

    static func record(message: String) -> ReportRecord {
        ReportRecord(
            profileId: "@evil", originalTransactionId: "2000000000000002", status: .failed, code: "http_418",
            httpStatus: 418, attempts: 1, source: "in.csv:2", firstSource: "in.csv:2", updatedAt: "2026-01-01",
            restoredAt: nil, message: message, profileState: nil, accessLevels: nil, lastRun: 1)
    }

    @Test func aServerMessageBeginningWithEqualsIsTextInTheCSV() {
        var text = ""
        let writer = ReportWriter(format: .csv) { text += $0 }
        writer.header()
        writer.write(Self.record(message: "=cmd|' /C calc'!A0"))
        writer.finish()
        let row = text.split(separator: "\r\n")[1]
        #expect(row.hasPrefix("'@evil,2000000000000002,failed,"))
        #expect(row.hasSuffix(",'=cmd|' /C calc'!A0"))
    }

    @Test func theTableAlignsColumnsAndDropsTheRawJSON() {
        var lines: [String] = []
        let writer = ReportWriter(format: .table) { lines.append($0) }
        writer.write(Self.record(message: "short"))
        writer.write(Self.record(message: "a longer message"))
        #expect(lines.isEmpty, "the first page is held back to size the columns")
        writer.finish()
        #expect(lines.count == 4)
        #expect(!lines[0].contains("accessLevels,"))
        #expect(lines[0].hasPrefix("profileId  originalTransactionId  status"))
        let statusColumn = lines[0].range(of: "status")!.lowerBound.utf16Offset(in: lines[0])
        for line in lines.dropFirst(2) {
            #expect(line.dropFirst(statusColumn).hasPrefix("failed"))
        }
    }

    @Test func tableCellsCannotCarryTerminalEscapes() {
        var text = ""
        // The first page (one row) sizes column a to 14 characters; the later, longer cell is cut.
        let table = TextTable(columns: ["a", "b"], pageSize: 1, maxWidth: 16) { text += $0 }
        table.add(["x\u{1B}[31mred", "1"])
        table.add(["a very long cell indeed", "2"])
        table.finish()
        #expect(!text.contains("\u{1B}"))
        #expect(text.contains(#"x\u001B[31mred"#))
        #expect(text.contains("a very long c…  2"))
    }

    /// A cell wider than `maxWidth` on the first page widens its column only that far, and is
    /// cut (by characters, not bytes); no line ends in spaces, even one whose last cell is empty.
    @Test func theFirstPageSizesColumnsUpToTheirMaximumAndNoLineEndsInSpaces() {
        var text = ""
        let table = TextTable(columns: ["a", "b"], maxWidth: 8) { text += $0 }
        table.add(["a cell of twenty-one", "1"])
        table.add(["grâce période", "2"])
        table.add(["short", ""])
        table.finish()
        #expect(text == "a         b\n--------  -\na cell …  1\ngrâce p…  2\nshort\n")
    }

    @Test func anEmptyTableStillPrintsItsHeader() {
        var text = ""
        let table = TextTable(columns: ["run", "state"]) { text += $0 }
        table.finish()
        #expect(text == "run  state\n---  -----\n")
    }
}

/// A CSV report (cells without commas or quotes) as column → cell, one per row; nil unless every
/// row has the header's number of cells.
func csvRecords(_ lines: [String]) -> [[String: String]]? {
    let rows = lines.joined().split(whereSeparator: \.isNewline).map {
        $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }
    guard let header = rows.first, rows.allSatisfy({ $0.count == header.count }) else { return nil }
    return rows.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
}

/// The same of a report of one row; nil unless it is a header and one row.
func csvRecord(_ lines: [String]) -> [String: String]? {
    guard let records = csvRecords(lines), records.count == 1 else { return nil }
    return records[0]
}

/// `report --conflicts`: each column holds its own field of the claim.
@Suite struct ConflictColumnsTests {
    @Test func eachColumnHoldsItsOwnField() throws {
        let record = ConflictRecord(
            originalTransactionId: "2000000000000012", profiles: 2, claim: 1, profileId: "p1", status: .failed,
            code: "http_409", firstSource: "a.csv:2", lastSource: "b.csv:7", attempts: 3,
            updatedAt: "2026-12-07T10:00:00.000Z")
        var lines: [String] = []
        let writer = ConflictWriter(format: .csv) { lines.append($0) }
        writer.header()
        writer.write(record)
        writer.finish()
        let row = try #require(csvRecord(lines), "\(lines)")
        #expect(
            row == [
                "originalTransactionId": "2000000000000012", "profiles": "2", "claim": "1", "profileId": "p1",
                "status": "failed", "code": "http_409", "attempts": "3", "firstSource": "a.csv:2",
                "lastSource": "b.csv:7", "updatedAt": "2026-12-07T10:00:00.000Z",
            ])
    }
}
