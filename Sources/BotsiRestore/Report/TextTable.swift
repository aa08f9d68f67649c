import BotsiBasics

/// Aligned columns for a terminal. Widths come from the first page of rows (so a report of a
/// million rows still streams); a later cell wider than its column is cut with "…". Control
/// characters are escaped, so a server message cannot move the cursor or recolour the terminal.
public final class TextTable {
    public let columns: [String]
    private let output: ReportOutput
    private let pageSize: Int
    private let maxWidth: Int
    private var page: [[String]] = []
    private var widths: [Int]?

    public convenience init(
        columns: [String], pageSize: Int = 500, maxWidth: Int = 48, write: @escaping (String) -> Void
    ) {
        self.init(columns: columns, pageSize: pageSize, maxWidth: maxWidth, output: ReportOutput(lines: write))
    }

    init(columns: [String], pageSize: Int = 500, maxWidth: Int = 48, output: ReportOutput) {
        self.columns = columns
        self.pageSize = pageSize
        self.maxWidth = maxWidth
        self.output = output
    }

    public func add(_ cells: [String]) {
        let cells = cells.map(Self.printable)
        if let widths {
            emit(cells, widths: widths)
            return
        }
        page.append(cells)
        if page.count >= pageSize { flushPage() }
    }

    /// Prints what is buffered (the header too, for an empty table).
    public func finish() {
        if widths == nil { flushPage() }
    }

    private func flushPage() {
        var widths = columns.map(\.count)
        for row in page {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], min(Self.width(cell), maxWidth))
            }
        }
        self.widths = widths
        emit(columns, widths: widths)
        emit(widths.map { String(repeating: "-", count: $0) }, widths: widths)
        for row in page { emit(row, widths: widths) }
        page = []
    }

    /// One line: each cell cut to its column's width (the last `…`) and padded, trailing spaces dropped.
    private func emit(_ cells: [String], widths: [Int]) {
        let start = output.bytes.count
        for (index, width) in widths.enumerated() {
            let cell = index < cells.count ? cells[index] : ""
            var shown = Self.width(cell)
            if shown > width {
                let kept = max(width - 1, 0)
                if cell.utf8.count == shown {
                    output.bytes.append(contentsOf: cell.utf8.prefix(kept))
                } else {
                    output.bytes.append(contentsOf: String(cell.prefix(kept)).utf8)
                }
                output.bytes.append(contentsOf: "…".utf8)
                shown = kept + 1
            } else {
                output.bytes.append(contentsOf: cell.utf8)
            }
            if index < widths.count - 1 {
                output.bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: width - shown + 2))
            }
        }
        while output.bytes.count > start && output.bytes.last == UInt8(ascii: " ") { output.bytes.removeLast() }
        output.bytes.append(UInt8(ascii: "\n"))
        output.endLine()
    }

    /// The cell's width in characters: its byte count when it is ASCII (after `printable`, no
    /// ASCII cell holds a control, so every byte is one character).
    private static func width(_ cell: String) -> Int {
        let ascii = cell.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } }
        return ascii == true ? cell.utf8.count : cell.count
    }

    /// Controls, DEL, C1 controls and bidi overrides become visible escapes (`\u001B`): a server
    /// message cannot move the cursor, recolour the terminal or reorder the line.
    static func printable(_ text: String) -> String {
        // `VisibleText.escaped` returns text without the bytes that may start an active scalar as
        // it is; that first look, done on the bytes in place, is most of the cost for a table.
        let plain = text.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }
        }
        return plain == true ? text : VisibleText.escaped(text)
    }
}
