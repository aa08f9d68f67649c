import BotsiRestore
import Foundation
import Testing

@testable import BotsiJournal

/// What `report` writes for its rows, cell by cell: each column its own field, numbers whole,
/// empty cells in their own columns, the lines' endings, and each row's snapshot cells its own.
@Suite struct ReportCellsTests {
    static let twoLevels =
        #"{"gold":{"expiresAt":"2027-01-01T00:00:00.000Z","isActive":true,"willRenew":false},"#
        + #""premium":{"expiresAt":"2028-01-01T00:00:00.000Z","isActive":true,"willRenew":true}}"#

    /// A record whose fields all differ, with numbers of several digits, one of them ending in 0.
    static func record(
        _ profileId: String = "p1", restoredAt: String? = "2026-12-06T09:00:00.000Z", code: String? = "ok_code",
        accessLevels: String? = twoLevels
    ) -> ReportRecord {
        ReportRecord(
            profileId: profileId, originalTransactionId: "2000000000000012", status: .restored, code: code,
            httpStatus: 201, attempts: 10, source: "in.csv:3", firstSource: "first.csv:2",
            updatedAt: "2026-12-07T10:00:00.000Z", restoredAt: restoredAt, message: "all good",
            profileState: "subscribed", accessLevels: accessLevels, lastRun: 1)
    }

    static func lines(_ format: ReportFormat, columns: [String]? = nil, _ records: [ReportRecord]) throws -> [String] {
        var lines: [String] = []
        let writer = try ReportWriter(format: format, sink: .lines { lines.append($0) }, columns: columns)
        writer.header()
        for record in records { writer.write(record) }
        writer.finish()
        return lines
    }

    @Test func eachColumnHoldsItsOwnField() throws {
        // The snapshot JSON holds commas: left out here, its own test is below.
        let columns = ReportWriter.columns.filter { $0 != "accessLevels" }
        let row = try #require(csvRecord(try Self.lines(.csv, columns: columns, [Self.record()])))
        #expect(
            row == [
                "profileId": "p1", "originalTransactionId": "2000000000000012", "status": "restored",
                "code": "ok_code", "httpStatus": "201", "attempts": "10", "source": "in.csv:3",
                "updatedAt": "2026-12-07T10:00:00.000Z", "restoredAt": "2026-12-06T09:00:00.000Z",
                "profileState": "subscribed", "activeAccessLevels": "gold premium",
                "expiresAt": "2028-01-01T00:00:00.000Z", "willRenew": "true", "message": "all good",
            ], "\(row)")
    }

    /// Every CSV line, the header's too, ends in CRLF (RFC 4180); every JSON line in one LF.
    @Test func csvLinesEndInCRLFAndJSONLinesInLF() throws {
        let csv = try Self.lines(.csv, [Self.record(), Self.record("p2")])
        #expect(csv.count == 3)
        #expect(csv[0] == ReportWriter.columns.joined(separator: ",") + "\r\n")
        #expect(csv.allSatisfy { $0.hasSuffix("\r\n") && $0.utf8.filter { $0 == 10 }.count == 1 }, "\(csv)")
        let jsonl = try Self.lines(.jsonl, [Self.record(), Self.record("p2")])
        #expect(jsonl.count == 2 && jsonl.allSatisfy { $0.hasSuffix("}\n") && !$0.hasSuffix("\r\n") }, "\(jsonl)")
    }

    /// An empty cell keeps its place wherever `--columns` puts it: in CSV between its commas, in
    /// JSON lines as null, in a table as blanks under its own header.
    @Test func emptyCellsKeepTheirPlaceInChosenColumns() throws {
        let record = Self.record(restoredAt: nil, code: nil)
        let columns = ["profileId", "restoredAt", "code", "message"]
        #expect(try Self.lines(.csv, columns: columns, [record]).last == "p1,,,all good\r\n")
        #expect(
            try Self.lines(.jsonl, columns: columns, [record])
                == [#"{"profileId":"p1","restoredAt":null,"code":null,"message":"all good"}"# + "\n"])
        let table = try Self.lines(.table, columns: columns, [record])
        let message = try #require(table.first?.range(of: "message")?.lowerBound.utf16Offset(in: table[0]))
        #expect(
            table.count == 3 && table[2].hasPrefix("p1 ") && table[2].dropFirst(message) == "all good\n", "\(table)")
    }

    /// JSON lines keep the snapshot as the JSON object it is, numbers as numbers, willRenew as a
    /// boolean and missing values as null: a script reads them without parsing strings again.
    @Test func jsonLinesKeepTheirValuesTypes() throws {
        let line = try #require(try Self.lines(.jsonl, [Self.record(restoredAt: nil)]).first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let levels = try #require(object["accessLevels"] as? [String: Any], "\(line)")
        #expect(Set(levels.keys) == ["gold", "premium"])
        #expect(object["httpStatus"] as? Int == 201 && object["attempts"] as? Int == 10, "\(line)")
        #expect(object["willRenew"] as? Bool == true, "\(line)")
        #expect(object["restoredAt"] is NSNull, "\(line)")
    }

    /// The table leaves out the raw snapshot JSON, on the first page and after it; asked for by
    /// `--columns`, it shows it.
    @Test func theTableShowsTheRawSnapshotOnlyWhenChosen() throws {
        // More than a page (500 rows): the rows after it are written cell by cell.
        let records = (0..<502).map { Self.record("p\($0)") }
        let table = try Self.lines(.table, records)
        #expect(table.count == 2 + records.count)
        #expect(!table[0].contains("accessLevels"))
        #expect(table.allSatisfy { !$0.contains(#"{"gold""#) }, "\(table.prefix(3))")
        // Each row its own cells, on the first page and after it.
        #expect(
            table.dropFirst(2).enumerated().allSatisfy { $1.hasPrefix("p\($0) ") && $1.hasSuffix("  all good\n") },
            "\(table.prefix(4)) \(table.suffix(2))")
        let chosen = try Self.lines(.table, columns: ["profileId", "accessLevels"], [Self.record()])
        // Cut to the table's 48 characters, as any wider cell of the first page is.
        #expect(chosen.last == "p1" + String(repeating: " ", count: 9) + Self.twoLevels.prefix(47) + "…\n", "\(chosen)")
    }

    /// The snapshot's cells (active levels, latest expiry, renewal) are each row's own, whether
    /// its snapshot was read by the fast scanner, by Foundation (unsorted names), or is missing.
    @Test func eachRowsSnapshotCellsAreItsOwn() throws {
        let unsorted = #"{"z":{"isActive":true,"expiresAt":"2029-01-01","willRenew":false},"a":{"isActive":true}}"#
        let single = #"{"solo":{"expiresAt":"2026-01-01","isActive":true}}"#
        let snapshots = [Self.twoLevels, nil, unsorted, nil, single, "not json", Self.twoLevels]
        let lines = try Self.lines(
            .csv, columns: ["activeAccessLevels", "expiresAt", "willRenew"],
            snapshots.map { Self.record(accessLevels: $0) })
        let rows = try #require(csvRecords(lines), "\(lines)").map {
            [$0["activeAccessLevels"], $0["expiresAt"], $0["willRenew"]]
        }
        let none: [String?] = ["", "", ""]
        #expect(
            rows == [
                ["gold premium", "2028-01-01T00:00:00.000Z", "true"], none, ["a z", "2029-01-01", "false"], none,
                ["solo", "2026-01-01", ""], none, ["gold premium", "2028-01-01T00:00:00.000Z", "true"],
            ], "\(rows)")
    }
}
