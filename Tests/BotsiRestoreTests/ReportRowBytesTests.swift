import BotsiBasics
import BotsiRestore
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// `report` writes the journal's bytes in place (`forEachReportRow`); what it writes must be what
/// the typed records (`forEachReportRecord`, Strings) give, whatever the journal holds: every
/// special byte, text that is not UTF-8, and snapshots of every shape.
@Suite struct ReportRowBytesTests {
    static let specials =
        "'=a,b\"c' || char(13, 10) || '+d' || char(10) || '-e' || char(13) || '@f' || char(9) || 'g\\h' || char(0)"
        + " || char(27) || '[2J' || char(127) || char(0x9B) || char(0x202E) || char(0x2066) || char(0x2028)"
        + " || char(0x2029) || 'é€ok'"

    /// Per profile, what a hand-edited or hostile journal may hold in its columns: those of the
    /// row (`items`) and those of its answer's snapshot (`snapshots`, one of its own per row).
    static let rows: [(profile: String, set: String, snapshot: String?)] = [
        ("runner", "message = NULL", nil),
        ("specials", "profile_id = \(specials), message = \(specials), code = '-1'", "profile_state = '@st,\"x\"'"),
        (
            "invalid",
            "original_transaction_id = CAST(X'80' AS TEXT), message = CAST(X'41FF42C0AFE2' AS TEXT)",
            "profile_state = CAST(X'C3' AS TEXT), access_levels = CAST(X'7B22E9223A7B226973416374697665223A747275657D7D' AS TEXT)"
        ),
        ("malformed", "code = code", #"access_levels = '{"a":{"isActive":true'"#),
        (
            "escaped", "code = code",
            #"access_levels = '{"a\u0041":{"isActive":true,"expiresAt":"2027\/01"},"b":{"isActive":true,"willRenew":false}}'"#
        ),
        (
            "unsorted", "code = code",
            #"access_levels = '{"z":{"isActive":true,"expiresAt":"2027"},"a":{"isActive":true,"expiresAt":"2028","willRenew":true}}'"#
        ),
        (
            "several", "code = code",
            #"access_levels = '{"a":{"isActive":true,"expiresAt":""},"b":{"isActive":true},"c":{"isActive":false}}'"#
        ),
        ("empty", "message = '', restored_at = ''", "access_levels = '', profile_state = NULL"),
        ("array", "code = char(0x202E) || 'x', http_status = -5", "access_levels = '[1]'"),
        // A snapshot of a lone continuation byte, 0x80: no bit above the high one, and not UTF-8.
        ("lone", "code = code", "access_levels = CAST(X'80' AS TEXT)"),
    ]

    /// The rows above, then copies of them until the table has a first page and rows after it.
    static func journal(_ directory: Workspace) throws -> String {
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let run = try builder.startRun()
        for row in rows {
            try builder.attempt(row.profile, run: run, outcome: "restored", access: levels(true))
        }
        let connection = builder.journal.connection
        for row in rows {
            let item = builder.items[row.profile]!
            if let snapshot = row.snapshot {
                // The rows' answers were alike and share one snapshot: give this one its own.
                try connection.execute(
                    """
                    INSERT INTO snapshots (hash, profile_state, access_levels)
                        SELECT -\(item), profile_state, access_levels FROM snapshots
                        WHERE id = (SELECT snapshot_id FROM items WHERE id = \(item));
                    UPDATE items SET snapshot_id = last_insert_rowid() WHERE id = \(item);
                    UPDATE snapshots SET \(snapshot) WHERE id = (SELECT snapshot_id FROM items WHERE id = \(item));
                    """)
            }
            try connection.execute("UPDATE items SET \(row.set) WHERE id = \(item)")
        }
        try builder.journal.recordRejection(
            file: "in,put.csv", line: 7, reason: "invalid_profile_id", message: "=bad\r\nrow",
            profileId: "@p\u{1B}", originalTransactionId: "x,y", runID: run, now: "2026-01-01")
        try connection.execute(
            "CREATE TEMP TABLE copy AS SELECT * FROM items; "
                + String(
                    repeating: "UPDATE copy SET id = id + 100, profile_id = profile_id || '+'; "
                        + "INSERT INTO items SELECT * FROM copy; ", count: 60))
        builder.journal.close()
        return path
    }

    static func report(_ path: String, _ format: ReportFormat, inPlace: Bool) throws -> [UInt8] {
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        var bytes: [UInt8] = []
        let writer = try ReportWriter(format: format, sink: .chunks { bytes += $0 })
        writer.header()
        if inPlace {
            try journal.forEachReportRow(ReportFilter()) { writer.write($0) }
        } else {
            try journal.forEachReportRecord(ReportFilter()) { writer.write($0) }
        }
        writer.finish()
        return bytes
    }

    @Test(arguments: ReportFormat.allCases)
    func bytesReadInPlaceAreWrittenAsTheRecordsAre(_ format: ReportFormat) throws {
        let directory = Workspace()
        let path = try Self.journal(directory)
        let inPlace = try Self.report(path, format, inPlace: true)
        #expect(inPlace == (try Self.report(path, format, inPlace: false)))
        let text = String(decoding: inPlace, as: UTF8.self)
        #expect(Array(text.utf8) == inPlace, "the report is UTF-8, invalid input repaired")
        // Raw, only what CSV quotes: tabs and line breaks inside cells.
        let kept: Set<Unicode.Scalar> = format == .csv ? ["\t", "\r", "\n"] : ["\n"]
        #expect(!text.unicodeScalars.contains { VisibleText.isActive($0) && !kept.contains($0) })
        if format != .csv {
            #expect(text.split(separator: "\n").count == (format == .table ? 2 : 0) + 61 * Self.rows.count + 1)
        }
    }

    @Test func theSummaryAndTheRepairsAreThoseOfTheRecords() throws {
        let directory = Workspace()
        let path = try Self.journal(directory)
        let text = String(decoding: try Self.report(path, .jsonl, inPlace: true), as: UTF8.self)
        var objects: [String: [String: Any]] = [:]
        var unreadable: [Substring] = []
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                unreadable.append(line)
                continue
            }
            objects[object["profileId"] as? String ?? ""] = object
        }
        // A snapshot that is not JSON (hand-broken, empty, a lone byte) is written as a string:
        // every line stays one JSON object (it broke its line before).
        #expect(unreadable.isEmpty, "\(unreadable.prefix(3))")
        #expect(objects["malformed"]?["accessLevels"] as? String == #"{"a":{"isActive":true"#)
        #expect(objects["empty"]?["accessLevels"] as? String == "")
        #expect(objects["lone"]?["accessLevels"] as? String == "\u{FFFD}")
        #expect(objects["escaped"]?["accessLevels"] is [String: Any], "JSON stays JSON")
        #expect(objects["array"]?["accessLevels"] as? [Int] == [1])
        let invalid = try #require(objects["invalid"])
        #expect(invalid["message"] as? String == String(decoding: [0x41, 0xFF, 0x42, 0xC0, 0xAF, 0xE2], as: UTF8.self))
        #expect(invalid["originalTransactionId"] as? String == "\u{FFFD}")
        #expect(invalid["activeAccessLevels"] as? String == "\u{FFFD}", "read by Foundation once repaired")
        #expect(objects["escaped"]?["activeAccessLevels"] as? String == "aA b")
        #expect(objects["escaped"]?["expiresAt"] as? String == "2027/01")
        #expect(objects["escaped"]?["willRenew"] as? Bool == false)
        #expect(objects["unsorted"]?["activeAccessLevels"] as? String == "a z")
        #expect(objects["unsorted"]?["expiresAt"] as? String == "2028")
        #expect(objects["several"]?["activeAccessLevels"] as? String == "a b")
        #expect(objects["several"]?["expiresAt"] is NSNull, "an empty expiry is no expiry")
        #expect(objects["several"]?["willRenew"] is NSNull)
        #expect(objects["array"]?["activeAccessLevels"] is NSNull)
        #expect(objects["array"]?["httpStatus"] as? Int == -5)
        #expect(objects["array"]?["code"] as? String == "\u{202E}x")
        #expect(objects["runner"]?["activeAccessLevels"] as? String == "premium")
        #expect(objects["runner"]?["willRenew"] as? Bool == true)
        let rejection = try #require(objects["@p\u{1B}"])
        #expect(rejection["source"] as? String == "in,put.csv:7")
        #expect(rejection["status"] as? String == "rejected")
    }

    @Test func csvFromBytesStaysOneRecordPerRowWithNoFormulaLine() throws {
        let directory = Workspace()
        let path = try Self.journal(directory)
        let parsed = try pythonCSVRecords(String(decoding: try Self.report(path, .csv, inPlace: true), as: UTF8.self))
        #expect(parsed.count == 1 + 61 * Self.rows.count + 1)
        #expect(parsed.allSatisfy { $0.count == ReportWriter.columns.count })
        #expect(formulaLines(parsed) == [])
        let column = Dictionary(uniqueKeysWithValues: ReportWriter.columns.enumerated().map { ($1, $0) })
        let malformed = try #require(parsed.first { $0[0] == "malformed" })
        #expect(malformed[column["activeAccessLevels"]!] == "")
        #expect(malformed[column["accessLevels"]!] == #"{"a":{"isActive":true"#)
        let empty = try #require(parsed.first { $0[0] == "empty" })
        #expect(empty[column["activeAccessLevels"]!] == "" && empty[column["accessLevels"]!] == "")
        let array = try #require(parsed.first { $0[0] == "array" })
        #expect(array[column["httpStatus"]!] == "'-5")
        #expect(array[column["code"]!] == #"\u202Ex"#)
    }
}
