internal import CSQLite
import Foundation

/// An SQLite failure: the result code, SQLite's own message and the statement that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var isDiskFull: Bool { code & 0xff == SQLITE_FULL }
    public var isReadOnly: Bool { code & 0xff == SQLITE_READONLY || code & 0xff == SQLITE_CANTOPEN }
    public var isNotADatabase: Bool { code & 0xff == SQLITE_NOTADB }
    public var isCorrupt: Bool { code & 0xff == SQLITE_CORRUPT }

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in: \(sql))" }
        return "SQLite error \(code): \(message)"
    }
}

/// SQLite keeps memory statistics that nothing here reads, behind a global mutex taken around every
/// allocation and free (about 2% of a run's CPU). They can be turned off only before SQLite
/// initializes, which the first connection does: every connection reads this first, and a global's
/// initializer runs once, with the others waiting on it.
private let sqliteConfigured: Bool = csqlite_disable_memory_statistics() == SQLITE_OK

/// One SQLite connection. Not Sendable: it belongs to one owner (the journal's queue).
final class SQLiteConnection {
    private(set) var handle: OpaquePointer?
    let path: String

    /// Opens the database at `path`, an absolute path. `immutable` (read-only) tells SQLite the file
    /// cannot change while it is open: it reads the file alone, with no locks and no `-wal` or
    /// `-shm` (`JournalFile.readsImmutable` says when that is right).
    init(path: String, readOnly: Bool = false, immutable: Bool = false) throws(SQLiteError) {
        self.path = path
        Self.configureLibrary()
        var db: OpaquePointer?
        // NOFOLLOW: SQLite refuses the path if any part of it is a symbolic link (the journal's
        // path is resolved before it gets here). It opens -wal and -shm with O_NOFOLLOW itself.
        let access = readOnly || immutable ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        // URI: for `immutable`, and for ATTACH (`Self.uri`). A path that starts with "/" is a plain
        // file name even so: only "file:" starts a URI.
        let flags = access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI
        let name = immutable ? Self.uri(path, immutable: true) : path
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            // The extended code tells a refused link (SQLITE_CANTOPEN_SYMLINK) from other failures.
            let code = db.map { sqlite3_extended_errcode($0) } ?? rc
            sqlite3_close_v2(db)
            throw SQLiteError(code: code, message: message, sql: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    /// A `file:` URI that opens the absolute `path` read-only (`mode=ro`), and `immutable`: every
    /// byte but letters, digits, `/`, `-`, `.`, `_` and `~` written `%XX`, so that `?`, `#` or `%`
    /// in a name stay part of it.
    static func uri(_ path: String, immutable: Bool) -> String {
        let kept = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-._~".utf8)
        var encoded = ""
        for byte in path.utf8 {
            if kept.contains(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return "file:\(encoded)?mode=ro" + (immutable ? "&immutable=1" : "")
    }

    /// Turns SQLite's memory statistics off, once, if SQLite has not initialized yet: a program
    /// (or a test) that opens SQLite by other means calls this first.
    static func configureLibrary() { _ = sqliteConfigured }

    /// The bytes SQLite's statistics count as allocated: 0 while the statistics are off, as they
    /// should be.
    static var countedMemory: Int64 { sqlite3_memory_used() }

    func close() {
        guard let handle else { return }
        // close_v2 defers the close until the last statement is finalized.
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw SQLiteError(code: rc, message: message, sql: sql)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Runs a query that returns one text value (pragmas mostly).
    func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.isNull(0) ? nil : statement.int(0)
    }

    /// Whether the database has a table of that name (a name written in our code, not input).
    func hasTable(_ name: String) throws(SQLiteError) -> Bool {
        try scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '\(name)'") ?? 0 > 0
    }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    func setBusyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }
}

/// A prepared statement, finalized when released. Bind indexes are 1-based, column indexes 0-based.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    private unowned let connection: SQLiteConnection
    let sql: String

    init(connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        self.connection = connection
        self.sql = sql
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw SQLiteError(code: rc, message: connection.lastErrorMessage, sql: sql)
        }
        handle = statement
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds the given values in order: exactly as many as the statement
    /// has parameters (a value too few or too many is refused, not left NULL or ignored).
    @discardableResult
    func reset(_ values: SQLiteValue...) throws(SQLiteError) -> SQLiteStatement {
        try reset(binding: values)
    }

    @discardableResult
    func reset(binding values: [SQLiteValue]) throws(SQLiteError) -> SQLiteStatement {
        rewind()
        // No clearing first: every parameter is bound again below (exactly as many values).
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(
                code: SQLITE_RANGE, message: "the statement takes \(expected) values, \(values.count) were given",
                sql: sql)
        }
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
        return self
    }

    /// Lets go of the current result (and the read it holds) and keeps the bound values.
    func rewind() {
        sqlite3_reset(handle)
    }

    /// Binds text SQLite reads in place, without its own copy: the bytes must stay valid and
    /// unchanged until the parameter is bound again or the bindings are cleared (`clearBindings`),
    /// and no step may run after that memory is freed.
    func bindInPlace(_ text: UnsafeBufferPointer<UInt8>, at index: Int32) throws(SQLiteError) {
        // A null pointer would bind NULL, not the empty text.
        guard let start = text.baseAddress, !text.isEmpty else { return try bind(.text(""), at: index) }
        // SQLITE_STATIC: a null destructor.
        let rc = start.withMemoryRebound(to: CChar.self, capacity: text.count) { characters in
            sqlite3_bind_text(handle, index, characters, Int32(text.count), nil)
        }
        if rc != SQLITE_OK { throw SQLiteError(code: rc, message: connection.lastErrorMessage, sql: sql) }
    }

    /// Drops every binding, so that none points at memory bound in place any more.
    func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .int(let int): rc = sqlite3_bind_int64(handle, index, int)
        case .double(let double): rc = sqlite3_bind_double(handle, index, double)
        case .text(var text):
            // withUTF8 gives every string's bytes, NULs included (it makes a bridged string native).
            rc = text.withUTF8 { bytes in
                sqlite3_bind_text(
                    handle, index, UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                    Int32(bytes.count), csqlite_transient())
            }
        }
        if rc != SQLITE_OK { throw SQLiteError(code: rc, message: connection.lastErrorMessage, sql: sql) }
    }

    /// Steps once: true when a row is available, false when done.
    func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError(code: rc, message: connection.lastErrorMessage, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Steps to completion for statements that return no rows.
    func run() throws(SQLiteError) {
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func text(_ column: Int32) -> String? {
        bytes(column).map { String(decoding: $0, as: UTF8.self) }
    }
    /// The column's text as SQLite holds it, read in place (nil for NULL): valid until the next
    /// step, reset or finalize, so a reader copies what it keeps. Not checked to be UTF-8.
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        // After column_text, as SQLite asks: the count is of the text form.
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
    }
    func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
    var columnCount: Int32 { sqlite3_column_count(handle) }
    func columnName(_ column: Int32) -> String { String(cString: sqlite3_column_name(handle, column)) }

    /// The index of the result column named `name` (its `AS` name when it has one): readers look
    /// their columns up by name once per statement, then read by index per row.
    func column(_ name: String) throws(SQLiteError) -> Int32 {
        for index in 0..<columnCount where columnName(index) == name { return index }
        throw SQLiteError(code: SQLITE_ERROR, message: "the result has no column \(name)", sql: sql)
    }
}

enum SQLiteValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
}

extension SQLiteValue {
    static func optionalText(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
    static func optionalInt(_ value: Int?) -> SQLiteValue { value.map { .int(Int64($0)) } ?? .null }
}
