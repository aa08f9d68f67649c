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

    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.columns, write: write)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    public func write(_ record: ConflictRecord) {
        typealias Field = ReportWriter.Field
        let fields: [(String, Field)] = [
            ("originalTransactionId", .text(record.originalTransactionId)),
            ("profiles", .number(String(record.profiles))),
            ("claim", .number(String(record.claim))),
            ("profileId", .text(record.profileId)),
            ("status", .text(record.status)),
            ("code", .optionalText(record.code)),
            ("attempts", .number(String(record.attempts))),
            ("firstSource", .text(record.firstSource)),
            ("lastSource", .text(record.lastSource)),
            ("updatedAt", .text(record.updatedAt)),
        ]
        rows.emit(fields)
    }
}
