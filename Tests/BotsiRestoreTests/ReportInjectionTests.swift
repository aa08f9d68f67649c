import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Reads CSV text with Python's `csv` module, the reader data teams script with: what it sees is
/// what a spreadsheet import sees.
func pythonCSVRecords(_ text: String) throws -> [[String]] {
    let directory = Workspace()
    let file = directory.write("report.csv", text)
    let script = """
        import csv, json, sys
        with open(sys.argv[1], newline='', encoding='utf-8') as f:
            print(json.dumps(list(csv.reader(f))))
        """
    let result = try runProgram("/usr/bin/env", ["python3", "-c", script, file])
    try #require(result.status == 0, "python3 failed: \(result.error)")
    let decoded = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String]]
    return try #require(decoded)
}

/// The lines of every cell that a spreadsheet would run as a formula (or that a tab would shift).
func formulaLines(_ records: [[String]]) -> [String] {
    records.flatMap { $0 }.flatMap { cell in
        cell.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
            .filter { line in line.unicodeScalars.first.map { "=+-@\t".unicodeScalars.contains($0) } ?? false }
            .map(String.init)
    }
}

/// Text from input files and servers that tries to split a CSV record, start a formula on a line
/// of its own, or drive a terminal.
enum Hostile {
    static let splitting = "victim\r\n=cmd|' /C calc'!A0"
    static let lineFeed = "a\n+SUM(1)"
    static let carriageReturn = "b\r@SUM(1)"
    static let tabbed = "c\n\t=1"
    static let escape = "x\u{1B}]0;owned\u{07}\u{1B}[31mred"
    static let bidi = "abc\u{202E}fdp.exe"
    static let c1 = "y\u{9B}31m"
}

@Suite struct ReportInjectionTests {
    static func record(_ profileId: String, message: String?, state: String? = nil, level: String? = nil)
        -> ReportRecord
    {
        let levels = level.map { name in
            String(decoding: try! JSONSerialization.data(withJSONObject: [name: ["isActive": true]]), as: UTF8.self)
        }
        return ReportRecord(
            profileId: profileId, originalTransactionId: "2000000000000002",
            status: state == nil ? .failed : .restored,
            code: nil, httpStatus: 200, attempts: 1, source: "in.csv:2", firstSource: "in.csv:2",
            updatedAt: "2026-01-01", restoredAt: nil, message: message, profileState: state, accessLevels: levels,
            lastRun: 1)
    }

    static let records = [
        record(Hostile.splitting, message: Hostile.lineFeed),
        record("p-2", message: Hostile.carriageReturn, state: "sub\r\n-1", level: "pre\r\n=x"),
        record(Hostile.tabbed, message: "\r\n=2", state: "active\n@x", level: "gold\r=y"),
    ]

    @Test func crLfCrAndLfInCellsNeverSplitARecordAndNoCellLineStartsAFormula() throws {
        var text = ""
        let writer = ReportWriter(format: .csv) { text += $0 }
        writer.header()
        for record in Self.records { writer.write(record) }
        let parsed = try pythonCSVRecords(text)
        #expect(parsed.count == 1 + Self.records.count, "records: \(parsed)")
        #expect(parsed.allSatisfy { $0.count == ReportWriter.columns.count })
        #expect(formulaLines(parsed) == [])
        #expect(parsed[1][0] == "victim\r\n'=cmd|' /C calc'!A0", "the value stays readable, the formula inert")
    }

    @Test func changeReportsKeepTheirRecordsWholeToo() throws {
        func state(_ profileState: String, levels: String?) -> RowState {
            RowState(
                status: .restored, code: nil, httpStatus: 200, runID: 1, attemptedAt: "", profileState: profileState,
                accessLevels: levels)
        }
        let change = RowChange(
            profileId: Hostile.splitting, originalTransactionId: "2000000000000002", source: "in.csv:2",
            before: state("a\r\n=1", levels: #"{"x\r\n+1":{"isActive":true}}"#),
            after: state("b\r-1", levels: #"{"y\n@1":{"isActive":true}}"#))
        var text = ""
        let writer = ChangeWriter(format: .csv) { text += $0 }
        writer.header()
        writer.write(change)
        writer.write(change)
        let parsed = try pythonCSVRecords(text)
        #expect(parsed.count == 3, "records: \(parsed)")
        #expect(formulaLines(parsed) == [])
    }

    @Test func csvCellsCarryNoRawControlButVisibleEscapes() throws {
        var text = ""
        let writer = ReportWriter(format: .csv) { text += $0 }
        writer.header()
        writer.write(Self.record(Hostile.escape, message: Hostile.bidi + Hostile.c1))
        #expect(
            !text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{202E}" || $0 == "\u{9B}" })
        let parsed = try pythonCSVRecords(text)
        #expect(parsed.count == 2)
        #expect(parsed[1][0] == #"x\u001B]0;owned\u0007\u001B[31mred"#)
        #expect(parsed[1].last == #"abc\u202Efdp.exey\u009B31m"#)
    }

    @Test func tablesShowControlsAndBidiOverridesEscaped() {
        var text = ""
        let writer = ReportWriter(format: .table) { text += $0 }
        writer.write(Self.record(Hostile.escape, message: Hostile.bidi + "\u{2066}"))
        writer.finish()
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(!text.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{2066}" })
        #expect(text.contains(#"x\u001B]0;owned\u0007\u001B[31mred"#))
        #expect(text.contains(#"abc\u202Efdp.exe\u2066"#))
    }

    @Test func jsonLinesEscapeControlsAndBidiAndStillDecodeToTheSameText() throws {
        var text = ""
        let writer = ReportWriter(format: .jsonl) { text += $0 }
        let hostile = Hostile.escape + Hostile.bidi + Hostile.c1 + "\u{7F}"
        writer.write(Self.record(hostile, message: Hostile.splitting))
        #expect(text.hasSuffix("}\n") && text.filter { $0 == "\n" }.count == 1)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(!text.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{9B}" || $0 == "\u{7F}" })
        #expect(text.contains(#"\u001b"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["profileId"] as? String == hostile)
        #expect(object["message"] as? String == Hostile.splitting)
    }

    /// The bidi marks U+200E, U+200F and U+061C were missing from the escape set, and every other
    /// invisible character (zero-width ones, the BOM, tags, U+2028, variation selectors…) reached
    /// reports raw, so two ids that differ only by one printed alike (issue 20, item 5). Every format
    /// shows each escaped now, the JSON still decoding to the same text.
    @Test(arguments: [
        "\u{200E}", "\u{200F}", "\u{061C}", "\u{200B}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{00AD}", "\u{180E}",
        "\u{034F}", "\u{2028}", "\u{2029}", "\u{FE0F}", "\u{3164}", "\u{E0041}", "\u{E0100}",
    ])
    func everyFormatShowsInvisibleCharactersEscaped(_ invisible: String) throws {
        let scalar = invisible.unicodeScalars.first!
        let escape = String(scalar).utf16.map { String(format: "\\u%04X", $0) }.joined()
        let id = "c\(invisible)1"
        for format in [ReportFormat.csv, .table] {
            var text = ""
            let writer = ReportWriter(format: format) { text += $0 }
            writer.header()
            writer.write(Self.record(id, message: "m\(invisible)"))
            writer.finish()
            #expect(!text.unicodeScalars.contains(scalar), "\(format) carries \(escape) raw")
            #expect(text.contains("c\(escape)1") && text.contains("m\(escape)"), "\(format): \(text)")
        }
        var lines = ""
        let writer = ReportWriter(format: .jsonl) { lines += $0 }
        writer.write(Self.record(id, message: nil))
        #expect(!lines.unicodeScalars.contains(scalar))
        #expect(lines.contains("c\(escape.lowercased())1"), "\(lines)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines.utf8)) as? [String: Any])
        #expect(object["profileId"] as? String == id)
    }

    /// The issue's reproduction: rejected input values keep their raw bytes in the journal, and the
    /// CSV report of them must still parse to one record per row.
    @Test func rejectedInputValuesWithLineBreaksStayOneRecordEach() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let input = directory.write(
            "in.csv",
            "profileId,originalTransactionId\r\n\"victim\r\n=cmd|' /C calc'!A0\",2000000000000002\r\n"
                + "p-1,\"12\r\n@SUM(1)\"\r\n\"\u{1B}[2J\",2000000000000004\r\np-2,2000000000000006\r\n")
        let journalPath = directory.file("journal.sqlite")
        let summary = try runJob([input], journal: journalPath, baseURL: simulator.baseURL)
        #expect(summary.exitCode == 0)
        let journal = try Journal(path: journalPath, create: false, readOnly: true)
        defer { journal.close() }
        var text = ""
        let writer = ReportWriter(format: .csv) { text += $0 }
        writer.header()
        var count = 0
        try journal.forEachReportRecord(ReportFilter()) {
            count += 1
            writer.write($0)
        }
        #expect(count == 4)
        let parsed = try pythonCSVRecords(text)
        #expect(parsed.count == 5, "records: \(parsed)")
        #expect(formulaLines(parsed) == [])
        #expect(!text.contains("\u{1B}"))
    }
}
