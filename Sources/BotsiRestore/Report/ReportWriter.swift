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
    public static let columns = [
        "profileId", "originalTransactionId", "status", "code", "httpStatus", "attempts", "source", "updatedAt",
        "restoredAt", "profileState", "activeAccessLevels", "expiresAt", "willRenew", "accessLevels", "message",
    ]

    /// The table leaves out the raw JSON: a terminal line cannot hold it.
    public static let tableColumns = columns.filter { $0 != "accessLevels" }

    public var format: ReportFormat { rows.format }
    private let rows: FieldRowWriter
    private let snapshot = SnapshotCells()

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        self.init(format: format, output: ReportOutput(lines: write))
    }

    /// Hands the report to `writeChunk` in chunks of about 256 KiB: one write per chunk, not per line.
    public init(format: ReportFormat, writeChunk: @escaping ([UInt8]) -> Void) {
        self.init(format: format, output: ReportOutput(chunks: writeChunk))
    }

    private init(format: ReportFormat, output: ReportOutput) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.tableColumns, output: output)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    /// One line: the cells in the order of `columns`.
    public func write(_ record: ReportRecord) {
        rows.text(record.profileId)
        rows.text(record.originalTransactionId)
        rows.text(record.status.rawValue)
        rows.text(record.code)
        rows.number(record.httpStatus)
        rows.number(record.attempts)
        rows.text(record.source)
        rows.text(record.updatedAt)
        rows.text(record.restoredAt)
        rows.text(record.profileState)
        if var json = record.accessLevels {
            json.withUTF8 { snapshot.write($0, to: rows) }
        } else {
            snapshot.write(nil, to: rows)
        }
        rows.text(record.message)
        rows.endRow()
    }

    /// The same line from a row read in place (`Journal.forEachReportRow`): the journal's bytes
    /// are written on without a String per cell.
    public func write(_ row: ReportRowView) {
        rows.text(row.profileId)
        rows.text(row.originalTransactionId)
        rows.text(row.status.rawValue)
        rows.text(row.code)
        rows.number(row.httpStatus)
        rows.number(row.attempts)
        rows.text(row.source)
        rows.text(row.updatedAt)
        rows.text(row.restoredAt)
        rows.text(row.profileState)
        snapshot.write(row.accessLevels, to: rows)
        rows.text(row.message)
        rows.endRow()
    }
}

/// The snapshot's four cells (activeAccessLevels, expiresAt, willRenew, accessLevels), summarised
/// from its bytes in place; the buffers are reused from row to row.
private final class SnapshotCells {
    private var levels = ScannedLevels()
    private var names: [UInt8] = []

    func write(_ json: UnsafeBufferPointer<UInt8>?, to rows: FieldRowWriter) {
        if let json, levels.scan(json) {
            names.removeAll(keepingCapacity: true)
            for (index, name) in levels.active.enumerated() {
                if index > 0 { names.append(UInt8(ascii: " ")) }
                names.append(contentsOf: UnsafeBufferPointer(rebasing: json[name]))
            }
            names.withUnsafeBufferPointer { rows.text($0) }
            rows.text(levels.latestExpiry.map { UnsafeBufferPointer(rebasing: json[$0]) })
            rows.bool(levels.willRenew)
        } else {
            // Not the runner's shape (or no snapshot): Foundation reads it, as `AccessLevelSummary` does.
            let summary = json.flatMap { AccessLevelSummary(parsing: String(decoding: $0, as: UTF8.self)) }
            rows.text(summary.map(\.activeList))
            rows.text(summary?.latestExpiry)
            rows.bool(summary?.willRenew)
        }
        rows.rawJSON(json)
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
            || first == UInt8(ascii: "@") || first == UInt8(ascii: "\t")
        {
            return false
        }
        // One look-up per byte: the bytes `cell` acts on (controls, DEL, the lead bytes of C1 and
        // bidi controls) send the cell there; commas and quotes only quote it.
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
