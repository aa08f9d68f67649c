import BotsiJournal

/// Where a report's lines go: each line to a closure as soon as it is finished (tests, short
/// outputs), or chunks of about 256 KiB to a closure of bytes (the command line: one write per
/// chunk, not per line).
public enum ReportSink {
    case lines((String) -> Void)
    case chunks(([UInt8]) -> Void)

    var output: ReportOutput {
        switch self {
        case .lines(let write): ReportOutput(lines: write)
        case .chunks(let write): ReportOutput(chunks: write)
        }
    }
}

/// One column of a report: its name, whether the table shows it, and how a row's cell is written.
/// A report's columns are one list of these, so no column reaches the header without its cell.
struct ReportColumn<Row>: Sendable {
    let name: String
    /// The table leaves out what a terminal line cannot hold (the raw snapshot JSON).
    let inTable: Bool
    let cell: @Sendable (Row, FieldRowWriter) -> Void

    init(_ name: String, inTable: Bool = true, _ cell: @escaping @Sendable (Row, FieldRowWriter) -> Void) {
        self.name = name
        self.inTable = inTable
        self.cell = cell
    }
}

/// A column `--columns` names that the report does not have.
public struct UnknownReportColumn: Error, CustomStringConvertible, Sendable {
    public let name: String
    public let known: [String]
    public var description: String {
        "the report has no column '\(name)'; its columns are \(known.joined(separator: ", "))"
    }
}

/// Writes rows of one kind, cell by cell through their columns (all of them, or the ones
/// `--columns` chose, in its order): `report`, `report --changes` and `report --conflicts`.
final class ColumnWriter<Row> {
    private let columns: [ReportColumn<Row>]
    let rows: FieldRowWriter

    init(format: ReportFormat, columns all: [ReportColumn<Row>], chosen: [String]?, sink: ReportSink)
        throws(UnknownReportColumn)
    {
        var columns = all
        if let chosen {
            columns = []
            for name in chosen {
                guard let column = all.first(where: { $0.name == name }) else {
                    throw UnknownReportColumn(name: name, known: all.map(\.name))
                }
                columns.append(column)
            }
        }
        self.columns = columns
        // Columns someone chose are shown in a table too, the raw JSON included.
        let table = chosen == nil ? columns.filter(\.inTable) : columns
        rows = FieldRowWriter(
            format: format, columns: columns.map(\.name), tableColumns: table.map(\.name), output: sink.output)
    }

    func header() { rows.header() }

    func finish() { rows.finish() }

    func write(_ row: Row) {
        for column in columns { column.cell(row, rows) }
        rows.endRow()
    }
}
