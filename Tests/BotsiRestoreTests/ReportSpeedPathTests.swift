import BotsiBasics
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// The fast paths of the report writers give what the general ones give: the snapshot scanner
/// what Foundation's parser gives, and the chunked output the bytes of the line-by-line one.
@Suite struct ReportSpeedPathTests {
    static let snapshots: [String] = [
        #"{"gold":{"expiresAt":"2027-01-01T00:00:00.000Z","isActive":true,"sourceProductId":"m","willRenew":false},"#
            + #""premium":{"expiresAt":"2028-01-01T00:00:00.000Z","isActive":true,"willRenew":true}}"#,
        #"{"a":{"isActive":false,"willRenew":true},"b":{"isActive":true}}"#,
        #"{}"#,
        #"{"a":{}}"#,
        #" { "b" : { "isActive" : true , "expiresAt" : "" } , "c" : { "isActive" : true, "expiresAt": null } } "#,
        // Shapes the scanner leaves to Foundation: unsorted or repeated names, escapes, non-ASCII,
        // numbers, a level that is not an object, trailing text, not JSON, not an object.
        #"{"z":{"isActive":true},"a":{"isActive":true,"willRenew":false}}"#,
        #"{"a":{"isActive":true},"a":{"isActive":false}}"#,
        #"{"a\u0041":{"isActive":true,"expiresAt":"2027\/01"}}"#,
        #"{"é":{"isActive":true},"e":{"isActive":true}}"#,
        #"{"a":{"isActive":1,"expiresAt":5}}"#,
        #"{"a":true,"b":{"isActive":true}}"#,
        #"{"a":{"isActive":true,"isActive":false}}"#,
        #"{"a":{"isActive":true}} x"#,
        #"{"a":{"isActive":true}"#,
        #"not json"#,
        #"[1,2]"#,
        "",
    ]

    @Test(arguments: snapshots)
    func theSnapshotScannerAgreesWithFoundation(_ json: String) {
        #expect(AccessLevelSummary(json: json) == AccessLevelSummary(parsing: json), "\(json)")
    }

    @Test func theScannerReadsTheRunnersOwnShape() {
        let summary = AccessLevelSummary(json: Self.snapshots[0])
        #expect(summary?.active == ["gold", "premium"])
        #expect(summary?.latestExpiry == "2028-01-01T00:00:00.000Z")
        #expect(summary?.willRenew == true)
        #expect(AccessLevelSummary(json: "{}") == AccessLevelSummary(parsing: "{}"))
        #expect(AccessLevelSummary(json: "{}")?.active == [])
        #expect(AccessLevelSummary(json: nil) == nil)
    }

    static let cells =
        ReportFormatTests.cells.map(\.raw) + snapshots + [
            "a\"b", "x,y", "é,\"", "in\tside", "-", "@", "=", "a\u{9B}b", "a\u{202E}b", "\"", ",", "€,5",
        ]

    @Test(arguments: cells)
    func csvCellsAreCopiedAsCellWritesThem(_ text: String) {
        var bytes: [UInt8] = []
        CSVText.append(text, to: &bytes)
        #expect(bytes == Array(CSVText.cell(text).utf8))
    }

    @Test(arguments: cells + ["a\\b", "\u{7F}", "\u{2028}", "line\nbreak"])
    func jsonStringsAreCopiedAsJSONStringWritesThem(_ text: String) {
        var bytes: [UInt8] = []
        JSONString.append(text, to: &bytes)
        #expect(bytes == Array(JSONString.quoted(text).utf8))
        #expect(TextTable.printable(text) == VisibleText.escaped(text))
    }

    /// Once the first page has sized the columns, a row written a cell at a time (the report's
    /// fast path) is the line `add` writes for it: cut, padded and trimmed alike.
    @Test func aRowWrittenCellByCellIsTheLineAddWrites() {
        let rows = [["short", "", "x"], ["a cell wider than its column", "mid", ""], ["é—ü", "b", "last"]]
        func written(cellByCell: Bool) -> String {
            var text = ""
            let table = TextTable(columns: ["first", "second", "third"], pageSize: 1, maxWidth: 12) { text += $0 }
            table.add(["sizing row", "two", "three"])
            for row in rows {
                if cellByCell {
                    for cell in row {
                        var cell = cell
                        cell.withUTF8 { table.appendCell($0) }
                    }
                    table.endRow()
                } else {
                    table.add(row)
                }
            }
            table.finish()
            return text
        }
        let expected = written(cellByCell: false)
        #expect(written(cellByCell: true) == expected)
        #expect(expected.hasSuffix("short               x\na cell wi…  mid\né—ü         b       last\n"), "\(expected)")
    }

    @Test func tableColumnsAreSizedInCharactersNotBytes() {
        var text = ""
        let table = TextTable(columns: ["a", "b"]) { text += $0 }
        table.add(["éé", "x"])
        table.add(["ab", "y"])
        table.finish()
        #expect(text == "a   b\n--  -\néé  x\nab  y\n")
    }

    static func records() -> [ReportRecord] {
        let hostile = ["=1", "a,b", "q\"q", "x\r\ny", "\u{1B}[2J", "é—ü", "\t-", "ok", "", "\u{202E}rtl"]
        return (0..<4000).map { index in
            let text = hostile[index % hostile.count]
            let snapshot = snapshots[index % snapshots.count]
            return ReportRecord(
                profileId: "p-\(index)\(text)", originalTransactionId: "20000000000\(index)",
                status: ItemStatus.allCases[index % ItemStatus.allCases.count], code: index % 3 == 0 ? nil : "c\(text)",
                httpStatus: index % 4 == 0 ? nil : 200 + index % 300, attempts: index % 7, source: "in.csv:\(index)",
                firstSource: "in.csv:\(index)", updatedAt: "2026-01-01T00:00:00.000Z",
                restoredAt: index % 2 == 0 ? nil : "2026-01-02T00:00:00.000Z", message: index % 5 == 0 ? nil : text,
                profileState: index % 3 == 1 ? "subscribed\(text)" : nil,
                accessLevels: snapshot.isEmpty ? nil : snapshot,
                lastRun: 1)
        }
    }

    @Test(arguments: ReportFormat.allCases)
    func chunksCarryTheSameBytesAsLines(_ format: ReportFormat) throws {
        var lines = ""
        var lineCalls = 0
        let byLine = ReportWriter(format: format) {
            lines += $0
            lineCalls += 1
        }
        var chunks: [UInt8] = []
        var chunkCalls = 0
        let byChunk = try ReportWriter(
            format: format,
            sink: .chunks {
                chunks += $0
                chunkCalls += 1
            })
        for writer in [byLine, byChunk] {
            writer.header()
            for record in Self.records() { writer.write(record) }
            writer.finish()
        }
        #expect(Array(lines.utf8) == chunks)
        #expect(
            chunkCalls > 1 && chunkCalls < lineCalls / 100,
            "chunks of about 256 KiB: \(chunkCalls) for \(lineCalls) lines")
    }
}
