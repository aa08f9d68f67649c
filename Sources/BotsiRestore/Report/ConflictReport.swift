import BotsiJournal
import Foundation

/// Writes `report --conflicts` rows: one per claim of a transaction that several profiles claim,
/// grouped by transaction, in journal order within a group. The cells go through the same
/// escaping as every report (`FieldRowWriter`): ids come from customer files.
public struct ConflictWriter {
    public static let columns = [
        "originalTransactionId", "profiles", "claim", "profileId", "status", "code", "attempts", "firstSource",
        "lastSource", "updatedAt",
    ]

    public var format: ReportFormat { rows.format }
    private let rows: FieldRowWriter

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        self.init(format: format, output: ReportOutput(lines: write))
    }

    /// Hands the report to `writeChunk` in chunks of about 256 KiB.
    public init(format: ReportFormat, writeChunk: @escaping ([UInt8]) -> Void) {
        self.init(format: format, output: ReportOutput(chunks: writeChunk))
    }

    private init(format: ReportFormat, output: ReportOutput) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.columns, output: output)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    /// One line: the cells in the order of `columns`.
    public func write(_ record: ConflictRecord) {
        rows.text(record.originalTransactionId)
        rows.number(record.profiles)
        rows.number(record.claim)
        rows.text(record.profileId)
        rows.text(record.status.rawValue)
        rows.text(record.code)
        rows.number(record.attempts)
        rows.text(record.firstSource)
        rows.text(record.lastSource)
        rows.text(record.updatedAt)
        rows.endRow()
    }
}
