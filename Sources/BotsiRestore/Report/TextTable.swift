import BotsiBasics

/// Aligned columns for a terminal. Widths come from the first page of rows (so a report of a
/// million rows still streams); a later cell wider than its column is cut with "…". Control
/// characters are escaped, so a server message cannot move the cursor or recolour the terminal.
public final class TextTable {
    public let columns: [String]
    private let write: (String) -> Void
    private let pageSize: Int
    private let maxWidth: Int
    private var page: [[String]] = []
    private var widths: [Int]?

    public init(columns: [String], pageSize: Int = 500, maxWidth: Int = 48, write: @escaping (String) -> Void) {
        self.columns = columns
        self.pageSize = pageSize
        self.maxWidth = maxWidth
        self.write = write
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
                widths[index] = max(widths[index], min(cell.count, maxWidth))
            }
        }
        self.widths = widths
        emit(columns, widths: widths)
        emit(widths.map { String(repeating: "-", count: $0) }, widths: widths)
        for row in page { emit(row, widths: widths) }
        page = []
    }

    private func emit(_ cells: [String], widths: [Int]) {
        var line = ""
        for (index, width) in widths.enumerated() {
            var cell = index < cells.count ? cells[index] : ""
            if cell.count > width { cell = String(cell.prefix(max(width - 1, 0))) + "…" }
            let isLast = index == widths.count - 1
            line += isLast ? cell : cell + String(repeating: " ", count: width - cell.count + 2)
        }
        while line.last == " " { line.removeLast() }
        write(line + "\n")
    }

    /// Controls, DEL, C1 controls and bidi overrides become visible escapes (`\u001B`): a server
    /// message cannot move the cursor, recolour the terminal or reorder the line.
    static func printable(_ text: String) -> String {
        VisibleText.escaped(text)
    }
}
