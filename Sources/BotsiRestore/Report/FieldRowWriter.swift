import BotsiBasics
import BotsiInput

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
/// is one call per column, in the order of `columns`, then `endRow()`. Cells are bytes (a String
/// is written as its UTF-8), copied straight into the output; only cells that need escaping, or
/// bytes that are not plain UTF-8, take the slower, general path through a String.
final class FieldRowWriter {
    let format: ReportFormat
    private let columns: [String]
    /// Per column: whether the table shows it.
    private let inTable: [Bool]
    /// Per column: `{"name":` for the first, `,"name":` for the others. Slices of one block that
    /// lives as long as the writer: appending an array of arrays' element retained and released it,
    /// a seventh of a JSON lines report's time.
    private let jsonKeys: [UnsafeBufferPointer<UInt8>]
    private let jsonKeyBlock: UnsafeMutableBufferPointer<UInt8>
    private let output: ReportOutput
    private let table: TextTable?
    @exclusivity(unchecked) private var column = 0
    /// A table row's cells while the table is still sizing its columns from its first page.
    @exclusivity(unchecked) private var cells: [String] = []

    init(format: ReportFormat, columns: [String], tableColumns: [String], output: ReportOutput) {
        self.format = format
        self.columns = columns
        let shown = Set(tableColumns)
        inTable = columns.map { shown.contains($0) }
        let keys = columns.enumerated().map { index, name in
            Array(((index == 0 ? "{" : ",") + JSONString.quoted(name) + ":").utf8)
        }
        jsonKeyBlock = .allocate(capacity: keys.reduce(0) { $0 + $1.count })
        var start = 0
        var slices: [UnsafeBufferPointer<UInt8>] = []
        for key in keys {
            let slice = UnsafeMutableBufferPointer(rebasing: jsonKeyBlock[start..<(start + key.count)])
            _ = slice.initialize(from: key)
            slices.append(UnsafeBufferPointer(slice))
            start += key.count
        }
        jsonKeys = slices
        self.output = output
        table = format == .table ? TextTable(columns: tableColumns, output: output) : nil
    }

    deinit { jsonKeyBlock.deallocate() }

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
        guard var value else { return null() }
        value.withUTF8 { cell($0, quoted: true) }
    }

    /// A text cell of bytes that may not be UTF-8 (read in place from the journal).
    func text(_ value: UnsafeBufferPointer<UInt8>?) {
        guard let value else { return null() }
        cell(value, quoted: true)
    }

    func number<Number: BinaryInteger>(_ value: Number?) {
        guard let value else { return null() }
        // A negative number (no UInt64) is text (in CSV a `-` is defused).
        guard let magnitude = UInt64(exactly: value) else {
            var digits = String(value)
            return digits.withUTF8 { cell($0, quoted: false) }
        }
        Self.withDigits(magnitude) { cell($0, quoted: false) }
    }

    /// The decimal digits of `value`, from a buffer on the stack: no String per number.
    private static func withDigits(_ value: UInt64, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var start = buffer.count
            var rest = value
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            body(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }

    func bool(_ value: Bool?) {
        guard let value else { return null() }
        var word = value ? "true" : "false"
        word.withUTF8 { cell($0, quoted: false) }
    }

    /// JSON kept as it is in JSON lines; a text cell elsewhere. A journal edited by hand may hold
    /// a snapshot that is not JSON (cut short, empty): JSON lines gives it as a string, which keeps
    /// its line readable.
    func rawJSON(_ value: UnsafeBufferPointer<UInt8>?) {
        guard let value else { return null() }
        cell(value, quoted: format == .jsonl && !JSONSyntax.isOneValue(value))
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
            guard let table else { return }
            if table.isSized {
                table.endRow()
            } else {
                table.add(cells)
                cells.removeAll(keepingCapacity: true)
            }
        }
    }

    /// One cell. `quoted: false` is a number, `true`/`false` or raw JSON, which JSON lines writes as
    /// it is (numbers and words cannot hold anything to escape; raw JSON is the journal's own);
    /// every other format escapes it as text, so no cell gets past the CSV or table rules.
    private func cell(_ bytes: UnsafeBufferPointer<UInt8>, quoted: Bool) {
        switch format {
        case .jsonl:
            output.bytes.append(contentsOf: jsonKeys[column])
            if quoted {
                JSONString.append(utf8: bytes, to: &output.bytes)
            } else if ReportBytes.isASCII(bytes) || bytes.isValidUTF8 {
                output.bytes.append(contentsOf: bytes)
            } else {
                output.bytes.append(contentsOf: String(decoding: bytes, as: UTF8.self).utf8)
            }
        case .csv:
            if column > 0 { output.bytes.append(UInt8(ascii: ",")) }
            CSVText.append(bytes, to: &output.bytes)
        case .table:
            guard inTable[column], let table else { break }
            if table.isSized {
                table.appendCell(bytes)
            } else {
                cells.append(String(decoding: bytes, as: UTF8.self))
            }
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
            cell(UnsafeBufferPointer(start: nil, count: 0), quoted: true)
            return
        }
        column += 1
    }
}

/// What each byte means to the report writers, looked up once per byte instead of compared
/// against each case.
enum ReportBytes {
    /// C0 controls, DEL, and the lead bytes of the other scalars `VisibleText` calls active (C1
    /// controls, bidi marks and the other invisible ones): every format escapes them or may have to.
    static let escapedEverywhere: UInt8 = 1
    /// `,` and `"`: a CSV cell holding one is quoted.
    static let quotedInCSV: UInt8 = 2
    /// 80–FF: part of a multi-byte character, or of bytes that are not UTF-8 at all.
    static let nonASCII: UInt8 = 4

    static let classes: [UInt8] = (0...255).map { byte -> UInt8 in
        var kind: UInt8 = 0
        if VisibleText.mayStartActive[byte] { kind |= escapedEverywhere }
        if byte == 0x2C || byte == 0x22 { kind |= quotedInCSV }
        if byte >= 0x80 { kind |= nonASCII }
        return kind
    }

    /// The classes of all the bytes, or-ed together.
    static func kinds(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt8 {
        classes.withUnsafeBufferPointer { classes in
            var kinds: UInt8 = 0
            for byte in bytes { kinds |= classes[Int(byte)] }
            return kinds
        }
    }

    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var high: UInt8 = 0
        for byte in bytes { high |= byte }
        return high < 0x80
    }
}
