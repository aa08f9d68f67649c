import BotsiJournal
import Foundation

/// Writes `report --conflicts` rows: one per claim of a transaction that several profiles claim,
/// grouped by transaction, in journal order within a group. The cells go through the same
/// escaping as every report (`FieldRowWriter`): ids come from customer files.
public struct ConflictWriter {
    static let table: [ReportColumn<ConflictRecord>] = [
        ReportColumn("originalTransactionId") { $1.text($0.originalTransactionId) },
        ReportColumn("profiles") { $1.number($0.profiles) },
        ReportColumn("claim") { $1.number($0.claim) },
        ReportColumn("profileId") { $1.text($0.profileId) },
        ReportColumn("status") { $1.text($0.status.rawValue) },
        ReportColumn("code") { $1.text($0.code) },
        ReportColumn("attempts") { $1.number($0.attempts) },
        ReportColumn("firstSource") { $1.text($0.firstSource) },
        ReportColumn("lastSource") { $1.text($0.lastSource) },
        ReportColumn("updatedAt") { $1.text($0.updatedAt) },
    ]

    public static let columns = table.map(\.name)

    public var format: ReportFormat { writer.rows.format }
    private let writer: ColumnWriter<ConflictRecord>

    /// `columns`: the ones to write, in that order (`--columns`); nil for all.
    public init(format: ReportFormat, sink: ReportSink, columns: [String]? = nil) throws(UnknownReportColumn) {
        writer = try ColumnWriter(format: format, columns: Self.table, chosen: columns, sink: sink)
    }

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        // Every column: nothing to refuse.
        writer = try! ColumnWriter(format: format, columns: Self.table, chosen: nil, sink: .lines(write))
    }

    public func header() { writer.header() }

    public func finish() { writer.finish() }

    public func write(_ record: ConflictRecord) { writer.write(record) }
}
