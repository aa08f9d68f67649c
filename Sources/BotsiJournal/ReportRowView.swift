/// One report row read in place from the journal's result row: each text is SQLite's own bytes
/// (nil for NULL), valid only during the call that hands the row over, and not checked to be
/// UTF-8. `ReportRecord(_:)` copies a row into Strings; a report writes the bytes on directly.
public struct ReportRowView {
    private let statement: SQLiteStatement
    private let columns: Columns
    /// A rejection's `file:line`, built by the reader; nil for an item.
    private let builtSource: UnsafeBufferPointer<UInt8>?
    public let status: ItemStatus

    init(_ statement: SQLiteStatement, item columns: ItemColumns, status: ItemStatus) {
        self.statement = statement
        self.columns = .item(columns)
        builtSource = nil
        self.status = status
    }

    init(_ statement: SQLiteStatement, rejection columns: RejectionColumns, source: UnsafeBufferPointer<UInt8>) {
        self.statement = statement
        self.columns = .rejection(columns)
        builtSource = source
        status = .rejected
    }

    /// Empty when NULL, as `ReportRecord` has it.
    public var profileId: UnsafeBufferPointer<UInt8> { text(columns.shared.profileId) }
    public var originalTransactionId: UnsafeBufferPointer<UInt8> { text(columns.shared.originalTransactionId) }
    /// A rejection's reason.
    public var code: UnsafeBufferPointer<UInt8>? { statement.bytes(columns.shared.code) }
    public var updatedAt: UnsafeBufferPointer<UInt8> { text(columns.shared.updatedAt) }
    public var message: UnsafeBufferPointer<UInt8>? { statement.bytes(columns.shared.message) }
    public var lastRun: Int64 { statement.int(columns.shared.lastRun) }

    public var httpStatus: Int64? { item.flatMap { statement.optionalInt($0.httpStatus) } }
    public var attempts: Int64 { item.map { statement.int($0.attempts) } ?? 0 }
    /// `file:line` of the row's latest sighting.
    public var source: UnsafeBufferPointer<UInt8> { builtSource ?? item.map { text($0.lastSource) } ?? Self.empty }
    public var firstSource: UnsafeBufferPointer<UInt8> {
        builtSource ?? item.map { text($0.firstSource) } ?? Self.empty
    }
    public var restoredAt: UnsafeBufferPointer<UInt8>? { item.flatMap { statement.bytes($0.restoredAt) } }
    public var profileState: UnsafeBufferPointer<UInt8>? { item.flatMap { statement.bytes($0.profileState) } }
    /// The snapshot's JSON object, as the runner wrote it.
    public var accessLevels: UnsafeBufferPointer<UInt8>? { item.flatMap { statement.bytes($0.accessLevels) } }

    private static var empty: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: nil, count: 0) }

    private func text(_ column: Int32) -> UnsafeBufferPointer<UInt8> { statement.bytes(column) ?? Self.empty }

    private var item: ItemColumns? {
        if case .item(let columns) = columns { return columns }
        return nil
    }

    private enum Columns {
        case item(ItemColumns)
        case rejection(RejectionColumns)

        /// The columns both queries have, by what the report calls them.
        var shared:
            (
                profileId: Int32, originalTransactionId: Int32, code: Int32, updatedAt: Int32, message: Int32,
                lastRun: Int32
            )
        {
            switch self {
            case .item(let item):
                (item.profileId, item.originalTransactionId, item.code, item.updatedAt, item.message, item.lastRun)
            case .rejection(let rejection):
                (
                    rejection.profileId, rejection.originalTransactionId, rejection.reason, rejection.updatedAt,
                    rejection.message, rejection.lastRun
                )
            }
        }
    }

    /// The result columns of the report's item query, looked up by name once per statement.
    struct ItemColumns {
        let id, profileId, originalTransactionId, status, code, httpStatus, attempts, lastSource, firstSource: Int32
        let updatedAt, restoredAt, message, profileState, accessLevels, lastRun: Int32

        init(_ statement: SQLiteStatement) throws(SQLiteError) {
            id = try statement.column("id")
            profileId = try statement.column("profile_id")
            originalTransactionId = try statement.column("original_transaction_id")
            status = try statement.column("status")
            code = try statement.column("code")
            httpStatus = try statement.column("http_status")
            attempts = try statement.column("attempts")
            lastSource = try statement.column("last_source")
            firstSource = try statement.column("first_source")
            updatedAt = try statement.column("updated_at")
            restoredAt = try statement.column("restored_at")
            message = try statement.column("message")
            profileState = try statement.column("profile_state")
            accessLevels = try statement.column("access_levels")
            lastRun = try statement.column("last_run")
        }
    }

    /// The result columns of the report's rejection query.
    struct RejectionColumns {
        let profileId, originalTransactionId, reason, file, line, updatedAt, message, lastRun: Int32

        init(_ statement: SQLiteStatement) throws(SQLiteError) {
            profileId = try statement.column("profile_id")
            originalTransactionId = try statement.column("original_transaction_id")
            reason = try statement.column("reason")
            file = try statement.column("file")
            line = try statement.column("line")
            updatedAt = try statement.column("updated_at")
            message = try statement.column("message")
            lastRun = try statement.column("last_run")
        }
    }
}

/// A report row's cells as bytes, as `report` writes them: read in place from the journal
/// (`ReportRowView.cells`) or lent from a record's Strings; valid only during the call that
/// hands them over, and not checked to be UTF-8.
public struct ReportCells {
    public var profileId: UnsafeBufferPointer<UInt8>
    public var originalTransactionId: UnsafeBufferPointer<UInt8>
    public var status: ItemStatus
    public var code: UnsafeBufferPointer<UInt8>?
    public var httpStatus: Int64?
    public var attempts: Int64
    /// `file:line` of the row's latest sighting.
    public var source: UnsafeBufferPointer<UInt8>
    public var updatedAt: UnsafeBufferPointer<UInt8>
    public var restoredAt: UnsafeBufferPointer<UInt8>?
    public var profileState: UnsafeBufferPointer<UInt8>?
    /// The snapshot's JSON object, as the runner wrote it.
    public var accessLevels: UnsafeBufferPointer<UInt8>?
    public var message: UnsafeBufferPointer<UInt8>?

    public init(
        profileId: UnsafeBufferPointer<UInt8>, originalTransactionId: UnsafeBufferPointer<UInt8>, status: ItemStatus,
        code: UnsafeBufferPointer<UInt8>?, httpStatus: Int64?, attempts: Int64, source: UnsafeBufferPointer<UInt8>,
        updatedAt: UnsafeBufferPointer<UInt8>, restoredAt: UnsafeBufferPointer<UInt8>?,
        profileState: UnsafeBufferPointer<UInt8>?, accessLevels: UnsafeBufferPointer<UInt8>?,
        message: UnsafeBufferPointer<UInt8>?
    ) {
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.status = status
        self.code = code
        self.httpStatus = httpStatus
        self.attempts = attempts
        self.source = source
        self.updatedAt = updatedAt
        self.restoredAt = restoredAt
        self.profileState = profileState
        self.accessLevels = accessLevels
        self.message = message
    }
}

extension ReportRowView {
    /// The row's cells, read in place.
    public var cells: ReportCells {
        ReportCells(
            profileId: profileId, originalTransactionId: originalTransactionId, status: status, code: code,
            httpStatus: httpStatus, attempts: attempts, source: source, updatedAt: updatedAt, restoredAt: restoredAt,
            profileState: profileState, accessLevels: accessLevels, message: message)
    }
}

extension ReportRecord {
    /// The record's cells, lent from its Strings for the duration of `body`.
    public func withCells<T>(_ body: (ReportCells) throws -> T) rethrows -> T {
        // One buffer holds every text, each cell a slice of it.
        let texts: [String?] = [
            profileId, originalTransactionId, code, source, updatedAt, restoredAt, profileState, accessLevels, message,
        ]
        var bytes: [UInt8] = []
        var ranges: [Range<Int>?] = []
        for text in texts {
            guard let text else {
                ranges.append(nil)
                continue
            }
            let start = bytes.count
            bytes.append(contentsOf: text.utf8)
            ranges.append(start..<bytes.count)
        }
        return try bytes.withUnsafeBufferPointer { buffer in
            func cell(_ index: Int) -> UnsafeBufferPointer<UInt8>? {
                ranges[index].map { UnsafeBufferPointer(rebasing: buffer[$0]) }
            }
            let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            return try body(
                ReportCells(
                    profileId: cell(0) ?? empty, originalTransactionId: cell(1) ?? empty, status: status, code: cell(2),
                    httpStatus: httpStatus.map(Int64.init), attempts: Int64(attempts), source: cell(3) ?? empty,
                    updatedAt: cell(4) ?? empty, restoredAt: cell(5), profileState: cell(6), accessLevels: cell(7),
                    message: cell(8)))
        }
    }

    /// The row copied into Strings (invalid UTF-8 repaired as `String(decoding:)` does).
    public init(_ row: ReportRowView) {
        func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
        self.init(
            profileId: text(row.profileId), originalTransactionId: text(row.originalTransactionId),
            status: row.status, code: row.code.map(text), httpStatus: row.httpStatus.map(Int.init),
            attempts: Int(row.attempts), source: text(row.source), firstSource: text(row.firstSource),
            updatedAt: text(row.updatedAt), restoredAt: row.restoredAt.map(text), message: row.message.map(text),
            profileState: row.profileState.map(text), accessLevels: row.accessLevels.map(text), lastRun: row.lastRun)
    }
}

extension ItemStatus {
    /// The status whose name is exactly `bytes`; nil for NULL or a name this version does not know.
    init?(journalBytes bytes: UnsafeBufferPointer<UInt8>?) {
        guard let bytes else { return nil }
        for (name, status) in Self.names where name.elementsEqual(bytes) {
            self = status
            return
        }
        return nil
    }

    private static let names = allCases.map { (Array($0.rawValue.utf8), $0) }
}
