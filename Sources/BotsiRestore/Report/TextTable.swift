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
    /// `widths` once known, and a run of spaces, in blocks the table owns: the cell-by-cell path
    /// reads them without the retain and release an array in a class costs per access.
    private var sizedWidths = UnsafeMutableBufferPointer<Int>(start: nil, count: 0)
    private let spaces = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 128)

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
        spaces.initialize(repeating: UInt8(ascii: " "))
    }

    deinit {
        spaces.deallocate()
        sizedWidths.deallocate()
    }

    public func add(_ cells: [String]) {
        // Nearly every row needs no escaping: then it is used as it is, not copied.
        let cells = cells.contains(where: Self.mayNeedEscaping) ? cells.map(Self.printable) : cells
        if let widths {
            emit(cells, widths: widths)
            return
        }
        page.append(cells)
        if page.count >= pageSize { flushPage() }
    }

    /// True once the first page has sized the columns: rows may then be written a cell at a time.
    var isSized: Bool { widths != nil }
    /// Where the row being written cell by cell starts in the output, and its next column.
    private var rowStart = 0
    private var nextColumn = 0

    /// The next cell of a row written cell by cell (once `isSized`): what `add` writes for it,
    /// without a String when the bytes are printable ASCII.
    func appendCell(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard nextColumn < sizedWidths.count else { return }
        if nextColumn == 0 { rowStart = output.bytes.count }
        let width = sizedWidths[nextColumn]
        let shown: Int
        if ReportBytes.kinds(bytes) & (ReportBytes.escapedEverywhere | ReportBytes.nonASCII) == 0 {
            shown = append(ascii: bytes, width: width)
        } else {
            shown = append(Self.printable(String(decoding: bytes, as: UTF8.self)), width: width)
        }
        if nextColumn < sizedWidths.count - 1 { pad(width - shown + 2) }
        nextColumn += 1
    }

    /// Ends a row written cell by cell.
    func endRow() {
        if nextColumn == 0 { rowStart = output.bytes.count }
        nextColumn = 0
        endLine(from: rowStart)
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
        sizedWidths = .allocate(capacity: widths.count)
        _ = sizedWidths.initialize(from: widths)
        emit(columns, widths: widths)
        emit(widths.map { String(repeating: "-", count: $0) }, widths: widths)
        for row in page { emit(row, widths: widths) }
        page = []
    }

    /// One line: each cell cut to its column's width (the last `…`) and padded, trailing spaces dropped.
    private func emit(_ cells: [String], widths: [Int]) {
        let start = output.bytes.count
        for (index, width) in widths.enumerated() {
            let shown = append(index < cells.count ? cells[index] : "", width: width)
            if index < widths.count - 1 { pad(width - shown + 2) }
        }
        endLine(from: start)
    }

    /// Drops the line's trailing spaces and ends it.
    private func endLine(from start: Int) {
        while output.bytes.count > start && output.bytes.last == UInt8(ascii: " ") { output.bytes.removeLast() }
        output.bytes.append(UInt8(ascii: "\n"))
        output.endLine()
    }

    /// Appends the cell, cut to `width` characters with `…` when wider; returns how many it shows.
    private func append(_ cell: String, width: Int) -> Int {
        // ASCII (every byte one character, once `printable` has escaped the controls), in place.
        let ascii = cell.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            ReportBytes.isASCII(bytes) ? append(ascii: bytes, width: width) : nil
        }
        if let shown = ascii ?? nil { return shown }
        let count = cell.count
        guard count > width else {
            output.bytes.append(contentsOf: cell.utf8)
            return count
        }
        let kept = max(width - 1, 0)
        output.bytes.append(contentsOf: String(cell.prefix(kept)).utf8)
        output.bytes.append(contentsOf: "…".utf8)
        return kept + 1
    }

    /// Appends ASCII without controls, cut to `width` with `…` when wider; returns how many it shows.
    private func append(ascii bytes: UnsafeBufferPointer<UInt8>, width: Int) -> Int {
        guard bytes.count > width else {
            output.bytes.append(contentsOf: bytes)
            return bytes.count
        }
        let kept = max(width - 1, 0)
        output.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[0..<kept]))
        output.bytes.append(contentsOf: "…".utf8)
        return kept + 1
    }

    private func pad(_ count: Int) {
        var rest = count
        while rest > 0 {
            let run = min(rest, spaces.count)
            output.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: spaces[0..<run]))
            rest -= run
        }
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
        mayNeedEscaping(text) ? VisibleText.escaped(text) : text
    }

    /// `VisibleText.escaped` returns text without the bytes that may start an active scalar as it
    /// is; that first look, done on the bytes in place, was most of the cost of a table.
    private static func mayNeedEscaping(_ text: String) -> Bool {
        let plain = text.utf8.withContiguousStorageIfAvailable { bytes in
            ReportBytes.classes.withUnsafeBufferPointer { classes in
                !bytes.contains { classes[Int($0)] & ReportBytes.escapedEverywhere != 0 }
            }
        }
        return plain != true
    }
}
