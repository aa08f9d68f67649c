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

    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.tableColumns, write: write)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    public func write(_ record: ReportRecord) {
        let levels = AccessLevelSummary(json: record.accessLevels)
        let fields: [(String, Field)] = [
            ("profileId", .text(record.profileId)),
            ("originalTransactionId", .text(record.originalTransactionId)),
            ("status", .text(record.status)),
            ("code", .optionalText(record.code)),
            ("httpStatus", record.httpStatus.map { .number(String($0)) } ?? .null),
            ("attempts", .number(String(record.attempts))),
            ("source", .text(record.source)),
            ("updatedAt", .text(record.updatedAt)),
            ("restoredAt", .optionalText(record.restoredAt)),
            ("profileState", .optionalText(record.profileState)),
            ("activeAccessLevels", .optionalText(levels.map { $0.active.joined(separator: " ") })),
            ("expiresAt", .optionalText(levels?.latestExpiry)),
            ("willRenew", levels?.willRenew.map { .bool($0) } ?? .null),
            ("accessLevels", record.accessLevels.map { .rawJSON($0) } ?? .null),
            ("message", .optionalText(record.message)),
        ]
        rows.emit(fields)
    }

    enum Field {
        case text(String)
        case number(String)
        case bool(Bool)
        case rawJSON(String)
        case null

        static func optionalText(_ value: String?) -> Field { value.map { .text($0) } ?? .null }

        var json: String {
            switch self {
            case .text(let text): return JSONString.quoted(text)
            case .number(let number): return number
            case .bool(let bool): return bool ? "true" : "false"
            case .rawJSON(let json): return json
            case .null: return "null"
            }
        }

        var text: String {
            switch self {
            case .text(let text), .number(let text), .rawJSON(let text): return text
            case .bool(let bool): return bool ? "true" : "false"
            case .null: return ""
            }
        }
    }
}

/// Writes rows of named fields as JSON lines, CSV or an aligned table: the part every report
/// format shares, so `report` and `report --changes` differ only in the fields they build.
struct FieldRowWriter {
    let format: ReportFormat
    private let columns: [String]
    private let tableColumns: Set<String>
    private let write: (String) -> Void
    private let table: TextTable?

    init(format: ReportFormat, columns: [String], tableColumns: [String], write: @escaping (String) -> Void) {
        self.format = format
        self.columns = columns
        self.tableColumns = Set(tableColumns)
        self.write = write
        table = format == .table ? TextTable(columns: tableColumns, write: write) : nil
    }

    func header() {
        if format == .csv { write(columns.joined(separator: ",") + "\r\n") }
    }

    func finish() {
        table?.finish()
    }

    func emit(_ fields: [(String, ReportWriter.Field)]) {
        switch format {
        case .jsonl:
            write("{" + fields.map { "\(JSONString.quoted($0.0)):\($0.1.json)" }.joined(separator: ",") + "}\n")
        case .csv:
            write(fields.map { CSVText.cell($0.1.text) }.joined(separator: ",") + "\r\n")
        case .table:
            table?.add(fields.filter { tableColumns.contains($0.0) }.map(\.1.text))
        }
    }
}

/// The access levels of a profile snapshot, reduced to what a spreadsheet column can hold.
struct AccessLevelSummary {
    var active: [String] = []
    var latestExpiry: String?
    var willRenew: Bool?

    init?(json: String?) {
        guard let json, let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        else { return nil }
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            guard let level = value as? [String: Any] else { continue }
            guard level["isActive"] as? Bool == true else { continue }
            active.append(name)
            if let expiry = level["expiresAt"] as? String, expiry > (latestExpiry ?? "") { latestExpiry = expiry }
            if let renew = level["willRenew"] as? Bool { willRenew = (willRenew ?? false) || renew }
        }
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

    private static func startsFormula(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "=" || scalar == "+" || scalar == "-" || scalar == "@" || scalar == "\t"
    }
}
