import BotsiBasics

/// Where a report's bytes go: each line to a closure of Strings as soon as it is finished (tests,
/// short outputs), or in chunks of about 256 KiB to a closure of bytes (the command line: one write
/// per chunk, not per line). Writers append to `bytes` and call `endLine()` after each line.
final class ReportOutput {
    // Unchecked: every access is a short append by the one writer, never overlapping; the
    // runtime's exclusivity checks were a tenth of a report's time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    private let lines: ((String) -> Void)?
    private let chunks: (([UInt8]) -> Void)?
    private static let chunkSize = 1 << 18

    init(lines: @escaping (String) -> Void) {
        self.lines = lines
        chunks = nil
    }

    init(chunks: @escaping ([UInt8]) -> Void) {
        lines = nil
        self.chunks = chunks
        bytes.reserveCapacity(Self.chunkSize + (1 << 16))
    }

    func endLine() {
        if let lines {
            lines(String(decoding: bytes, as: UTF8.self))
            bytes.removeAll(keepingCapacity: true)
        } else if bytes.count >= Self.chunkSize {
            flush()
        }
    }

    /// Hands on what is buffered.
    func flush() {
        guard !bytes.isEmpty else { return }
        if let lines {
            lines(String(decoding: bytes, as: UTF8.self))
        } else {
            chunks?(bytes)
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Writes rows of fields as JSON lines, CSV or an aligned table: the part every report format
/// shares, so `report`, `--changes` and `--conflicts` differ only in the fields they give. A row
/// is one call per column, in the order of `columns`, then `endRow()`. Cells are written straight
/// into the output's bytes; only cells that need escaping take the slower, general path.
final class FieldRowWriter {
    let format: ReportFormat
    private let columns: [String]
    /// Per column: whether the table shows it.
    private let inTable: [Bool]
    /// Per column: `{"name":` for the first, `,"name":` for the others.
    private let jsonKeys: [[UInt8]]
    private let output: ReportOutput
    private let table: TextTable?
    @exclusivity(unchecked) private var column = 0
    @exclusivity(unchecked) private var cells: [String] = []

    init(format: ReportFormat, columns: [String], tableColumns: [String], output: ReportOutput) {
        self.format = format
        self.columns = columns
        let shown = Set(tableColumns)
        inTable = columns.map { shown.contains($0) }
        jsonKeys = columns.enumerated().map { index, name in
            Array(((index == 0 ? "{" : ",") + JSONString.quoted(name) + ":").utf8)
        }
        self.output = output
        table = format == .table ? TextTable(columns: tableColumns, output: output) : nil
    }

    func header() {
        guard format == .csv else { return }
        output.bytes.append(contentsOf: columns.joined(separator: ",").utf8)
        output.bytes.append(contentsOf: "\r\n".utf8)
        output.endLine()
    }

    func finish() {
        table?.finish()
        output.flush()
    }

    /// A text cell; nil is JSON `null` and an empty CSV or table cell.
    func text(_ value: String?) {
        guard let value else { return null() }
        switch format {
        case .jsonl:
            output.bytes.append(contentsOf: jsonKeys[column])
            JSONString.append(value, to: &output.bytes)
        case .csv:
            if column > 0 { output.bytes.append(UInt8(ascii: ",")) }
            CSVText.append(value, to: &output.bytes)
        case .table:
            if inTable[column] { cells.append(value) }
        }
        column += 1
    }

    func number<Number: BinaryInteger>(_ value: Number?) {
        guard let value else { return null() }
        // Digits straight into the output; a negative number is text (in CSV a `-` is defused).
        guard format != .table, value >= 0, let magnitude = UInt64(exactly: value) else {
            return literal(String(value))
        }
        if format == .jsonl {
            output.bytes.append(contentsOf: jsonKeys[column])
        } else if column > 0 {
            output.bytes.append(UInt8(ascii: ","))
        }
        Self.appendDecimal(magnitude, to: &output.bytes)
        column += 1
    }

    private static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        let start = out.count
        var rest = value
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        out[start...].reverse()
    }

    func bool(_ value: Bool?) {
        guard let value else { return null() }
        literal(value ? "true" : "false")
    }

    /// JSON kept as it is in JSON lines; a text cell elsewhere.
    func rawJSON(_ value: String?) {
        guard let value else { return null() }
        if format == .jsonl { literal(value) } else { text(value) }
    }

    func endRow() {
        assert(column == columns.count, "a row gave \(column) cells for \(columns.count) columns")
        column = 0
        switch format {
        case .jsonl:
            output.bytes.append(contentsOf: "}\n".utf8)
            output.endLine()
        case .csv:
            output.bytes.append(contentsOf: "\r\n".utf8)
            output.endLine()
        case .table:
            table?.add(cells)
            cells.removeAll(keepingCapacity: true)
        }
    }

    /// A number, `true`/`false` or raw JSON: written as it is in every format (it cannot start a
    /// formula or hold a control, except raw JSON, which only JSON lines writes this way).
    private func literal(_ value: String) {
        switch format {
        case .jsonl:
            output.bytes.append(contentsOf: jsonKeys[column])
            output.bytes.append(contentsOf: value.utf8)
        case .csv:
            if column > 0 { output.bytes.append(UInt8(ascii: ",")) }
            CSVText.append(value, to: &output.bytes)
        case .table:
            if inTable[column] { cells.append(value) }
        }
        column += 1
    }

    private func null() {
        switch format {
        case .jsonl:
            output.bytes.append(contentsOf: jsonKeys[column])
            output.bytes.append(contentsOf: "null".utf8)
        case .csv:
            if column > 0 { output.bytes.append(UInt8(ascii: ",")) }
        case .table:
            if inTable[column] { cells.append("") }
        }
        column += 1
    }
}

/// What each byte means to the report writers, looked up once per byte instead of compared
/// against each case.
enum ReportBytes {
    /// C0 controls, DEL, and C2 and E2, the lead bytes of the C1 controls and of the bidi
    /// controls (and U+2028/U+2029): every format escapes them or may have to.
    static let escapedEverywhere: UInt8 = 1
    /// `,` and `"`: a CSV cell holding one is quoted.
    static let quotedInCSV: UInt8 = 2

    static let classes: [UInt8] = (0...255).map { byte -> UInt8 in
        var kind: UInt8 = 0
        if byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xE2 { kind |= escapedEverywhere }
        if byte == 0x2C || byte == 0x22 { kind |= quotedInCSV }
        return kind
    }
}
