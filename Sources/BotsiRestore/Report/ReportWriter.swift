import BotsiBasics
import BotsiJournal
import Foundation

public enum ReportFormat: String, Sendable, CaseIterable {
    /// `table`: aligned columns for a terminal, without the raw `accessLevels` JSON.
    case jsonl, csv, table
}

/// Writes report records as JSON lines, CSV or an aligned table, with the same column names.
/// Call `finish()` at the end: a table holds back its first page to size its columns.
public struct ReportWriter {
    /// A row as the columns read it: its cells, and its snapshot scanned once for the four cells
    /// that show it.
    struct Line {
        let cells: ReportCells
        let snapshot: SnapshotCells
    }

    /// The columns, each with its cell: the one list of them.
    static let table: [ReportColumn<Line>] = [
        ReportColumn("profileId") { $1.text($0.cells.profileId) },
        ReportColumn("originalTransactionId") { $1.text($0.cells.originalTransactionId) },
        ReportColumn("status") { $1.text($0.cells.status.rawValue) },
        ReportColumn("code") { $1.text($0.cells.code) },
        ReportColumn("httpStatus") { $1.number($0.cells.httpStatus) },
        ReportColumn("attempts") { $1.number($0.cells.attempts) },
        ReportColumn("source") { $1.text($0.cells.source) },
        ReportColumn("updatedAt") { $1.text($0.cells.updatedAt) },
        ReportColumn("restoredAt") { $1.text($0.cells.restoredAt) },
        ReportColumn("profileState") { $1.text($0.cells.profileState) },
        ReportColumn("activeAccessLevels") { $0.snapshot.writeActive(to: $1) },
        ReportColumn("expiresAt") { $0.snapshot.writeExpiry(to: $1) },
        ReportColumn("willRenew") { $0.snapshot.writeRenewal(to: $1) },
        // The table leaves out the raw JSON: a terminal line cannot hold it.
        ReportColumn("accessLevels", inTable: false) { $1.rawJSON($0.cells.accessLevels) },
        ReportColumn("message") { $1.text($0.cells.message) },
    ]

    public static let columns = table.map(\.name)

    public var format: ReportFormat { writer.rows.format }
    private let writer: ColumnWriter<Line>
    private let snapshot = SnapshotCells()

    /// `columns`: the ones to write, in that order (`--columns`); nil for all.
    public init(format: ReportFormat, sink: RowOutput, columns: [String]? = nil) throws(UnknownReportColumn) {
        writer = try ColumnWriter(format: format, columns: Self.table, chosen: columns, sink: sink)
    }

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        // Every column: nothing to refuse.
        writer = try! ColumnWriter(format: format, columns: Self.table, chosen: nil, sink: .lines(write))
    }

    public func header() { writer.header() }

    public func finish() { writer.finish() }

    /// A row read in place (`Journal.forEachReportRow`): the journal's bytes are written on
    /// without a String per cell.
    public func write(_ row: ReportRowView) { write(row.cells) }

    public func write(_ record: ReportRecord) { record.withCells { write($0) } }

    private func write(_ cells: ReportCells) {
        snapshot.scan(cells.accessLevels)
        writer.write(Line(cells: cells, snapshot: snapshot))
    }
}

/// The snapshot's cells (activeAccessLevels, expiresAt, willRenew), summarised from its bytes in
/// place, once per row; the buffers are reused from row to row.
final class SnapshotCells {
    private var levels = ScannedLevels()
    private var names: [UInt8] = []
    private var json: UnsafeBufferPointer<UInt8>?
    /// Not the runner's shape: Foundation read it, as `AccessLevelSummary` does.
    private var parsed: AccessLevelSummary?
    private var scanned = false

    func scan(_ json: UnsafeBufferPointer<UInt8>?) {
        self.json = json
        parsed = nil
        scanned = false
        guard let json else { return }
        if levels.scan(json) {
            scanned = true
            names.removeAll(keepingCapacity: true)
            for (index, name) in levels.active.enumerated() {
                if index > 0 { names.append(UInt8(ascii: " ")) }
                names.append(contentsOf: UnsafeBufferPointer(rebasing: json[name]))
            }
        } else {
            parsed = AccessLevelSummary(parsing: String(decoding: json, as: UTF8.self))
        }
    }

    func writeActive(to rows: FieldRowWriter) {
        if scanned {
            names.withUnsafeBufferPointer { rows.text($0) }
        } else {
            rows.text(parsed.map(\.activeList))
        }
    }

    func writeExpiry(to rows: FieldRowWriter) {
        if scanned, let json {
            rows.text(levels.latestExpiry.map { UnsafeBufferPointer(rebasing: json[$0]) })
        } else {
            rows.text(parsed?.latestExpiry)
        }
    }

    func writeRenewal(to rows: FieldRowWriter) {
        rows.bool(scanned ? levels.willRenew : parsed?.willRenew)
    }
}

public enum CSVText {
    /// A CSV cell per RFC 4180 that no spreadsheet, CSV reader or terminal can be fooled by:
    /// - every line of the cell (the start, and after each CR or LF) that a spreadsheet would run
    ///   as a formula or shift (starting with `= + - @` or a tab) gets a leading apostrophe, which
    ///   spreadsheets show as text;
    /// - a cell holding a comma, a quote, or any CR or LF byte is quoted (tested on scalars, not
    ///   `Character`s: `"\r\n"` is a single `Character`);
    /// - other controls, C1 controls and bidi overrides are written as visible `\u001B` escapes.
    public static func cell(_ text: String) -> String {
        guard let first = text.unicodeScalars.first else { return "" }
        let plain =
            !startsFormula(first) && !VisibleText.mayContainActive(text)
            && !text.utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") }
        if plain { return text }
        var value = String.UnicodeScalarView()
        var quoted = false
        var atLineStart = true
        for scalar in text.unicodeScalars {
            if atLineStart && startsFormula(scalar) { value.append("'") }
            atLineStart = false
            switch scalar {
            case "\r", "\n":
                quoted = true
                atLineStart = true
                value.append(scalar)
            case "\"":
                quoted = true
                value.append(contentsOf: "\"\"".unicodeScalars)
            case ",":
                quoted = true
                value.append(scalar)
            case "\t":
                value.append(scalar)
            case _ where VisibleText.isActive(scalar):
                value.append(contentsOf: VisibleText.escape(scalar).unicodeScalars)
            default:
                value.append(scalar)
            }
        }
        return quoted ? "\"" + String(value) + "\"" : String(value)
    }

    /// Appends `cell(text)`.
    static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { append($0, to: &out) }
    }

    /// Appends `cell(String(decoding: bytes, as: UTF8.self))`. A cell of valid UTF-8 without
    /// controls, lead bytes of escaped scalars or a formula start (nearly all of them, snapshots'
    /// JSON included) is copied as it is, quoted with its quotes doubled when it holds a comma or a
    /// quote; any other goes through `cell`.
    static func append(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        if !appendPlain(bytes, to: &out) { out.append(contentsOf: cell(String(decoding: bytes, as: UTF8.self)).utf8) }
    }

    /// False, having appended nothing, when the cell needs more than quoting.
    private static func appendPlain(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool {
        guard let first = bytes.first else { return true }
        if first == UInt8(ascii: "=") || first == UInt8(ascii: "+") || first == UInt8(ascii: "-")
            || first == UInt8(ascii: "@")
        {
            return false
        }
        // One look-up per byte: the bytes `cell` acts on (controls, a leading tab among them, DEL,
        // the lead bytes of C1 and bidi controls) send the cell there; commas and quotes only quote it.
        let kinds = ReportBytes.kinds(bytes)
        if kinds & ReportBytes.escapedEverywhere != 0 { return false }
        if kinds & ReportBytes.nonASCII != 0 && !bytes.isValidUTF8 { return false }
        guard kinds & ReportBytes.quotedInCSV != 0 else {
            out.append(contentsOf: bytes)
            return true
        }
        // Quoted, each quote doubled: sized once, then filled in place.
        var quotes = 0
        for byte in bytes where byte == UInt8(ascii: "\"") { quotes += 1 }
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "\""), count: bytes.count + quotes + 2))
        out.withUnsafeMutableBufferPointer { buffer in
            var at = start + 1
            for byte in bytes {
                buffer[at] = byte
                at += byte == UInt8(ascii: "\"") ? 2 : 1
            }
        }
        return true
    }

    private static func startsFormula(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "=" || scalar == "+" || scalar == "-" || scalar == "@" || scalar == "\t"
    }
}
