import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

@Suite struct SQLiteStatementTests {
    /// A reset binds every value anew: nothing of the call before survives it, and a statement
    /// given fewer values than it takes is refused instead of reading an old one.
    @Test func aResetLeavesNothingOfTheCallBefore() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("s.sqlite"))
        let statement = try connection.prepare("SELECT ?1, ?2")
        try statement.reset(.int(1), .text("two"))
        #expect(try statement.step())
        #expect(statement.int(0) == 1 && statement.text(1) == "two")
        try statement.reset(.text("four"), .null)
        #expect(try statement.step())
        #expect(statement.text(0) == "four" && statement.isNull(1))
        #expect(throws: SQLiteError.self) { try statement.reset(.int(3)) }
    }

    /// Text bound in place reads as the same text (the empty text too, not NULL), and clearing the
    /// bindings leaves NULLs, not the freed bytes.
    @Test func textBoundInPlaceIsTheTextAndClearedBindingsAreNull() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("p.sqlite"))
        let statement = try connection.prepare("SELECT ?1, ?1 IS NULL, length(?1), ?2 = 'é2000000000000002'")
        let bytes = Array("xé2000000000000002".utf8)
        try bytes.withUnsafeBufferPointer { buffer in
            try statement.bindInPlace(UnsafeBufferPointer(rebasing: buffer[0..<0]), at: 1)
            try statement.bindInPlace(UnsafeBufferPointer(rebasing: buffer[1...]), at: 2)
            #expect(try statement.step())
            #expect(statement.text(0) == "" && statement.int(1) == 0 && statement.int(2) == 0 && statement.int(3) == 1)
            statement.rewind()
        }
        statement.clearBindings()
        #expect(try statement.step())
        #expect(statement.isNull(0) && statement.int(1) == 1 && statement.isNull(3))
    }

    /// SQLite's memory statistics take a global mutex around every allocation and free; a
    /// connection opens with them off (they count nothing then).
    @Test func memoryStatisticsAreOffOnceAConnectionIsOpen() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("m.sqlite"))
        try connection.execute("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (randomblob(100000))")
        #expect(SQLiteConnection.countedMemory == 0)
    }

    /// A failure carries SQLite's extended code, which says what failed (here, which constraint),
    /// from `execute` and from a statement alike.
    @Test func failuresCarrySQLitesExtendedCodes() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("e.sqlite"))
        try connection.execute("CREATE TABLE t (x INTEGER PRIMARY KEY, y TEXT UNIQUE); INSERT INTO t VALUES (1, 'a')")
        let executed = #expect(throws: SQLiteError.self) { try connection.execute("INSERT INTO t VALUES (2, 'a')") }
        #expect(executed?.code == 2067, "SQLITE_CONSTRAINT_UNIQUE")
        let statement = try connection.prepare("INSERT INTO t VALUES (?, 'b')")
        try statement.reset(.int(1))
        let stepped = #expect(throws: SQLiteError.self) { try statement.run() }
        #expect(stepped?.code == 1555, "SQLITE_CONSTRAINT_PRIMARYKEY")
    }

    /// An immutable open names the file in a `file:` URI: a name holding `?`, `#`, `%`, a space or
    /// a control character still names that file, not another.
    @Test func anImmutableOpenFindsAFileWhateverItsName() throws {
        let directory = Workspace()
        for name in ["a?b#c%41 d.sqlite", "tab\there.sqlite"] {
            let path = directory.file(name)
            let writer = try SQLiteConnection(path: path)
            try writer.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7)")
            writer.close()
            let reader = try SQLiteConnection(path: path, readOnly: true, immutable: true)
            #expect(try reader.scalarInt("SELECT x FROM t") == 7, "\(name)")
        }
    }

    /// Whether this process may mark a directory immutable (`chattr +i`: root, on a file system
    /// that keeps the flag), tried once on a throw-away directory.
    static let canMarkImmutable: Bool = {
        let probe = Workspace()
        guard (try? runProgram("/usr/bin/chattr", ["+i", probe.path]).status) == 0 else { return false }
        _ = try? runProgram("/usr/bin/chattr", ["-i", probe.path])
        return true
    }()

    /// A directory no file can be added to (0555 to anyone but root, immutable to root too): a
    /// journal there without its `-wal` cannot be written, as SQLite cannot make the log
    /// (SQLITE_CANTOPEN), and is said to be read-only, not as an SQLite error.
    @Test(
        .enabled(
            if: SQLiteStatementTests.canMarkImmutable, "needs chattr +i: root, on a file system that keeps the flag"))
    func aJournalWhoseLogCannotBeMadeIsSaidToBeReadOnly() throws {
        let directory = Workspace()
        try Journal(path: directory.journal).close()
        #expect(!FileManager.default.fileExists(atPath: directory.journal + "-wal"))
        try runProgram("/usr/bin/chattr", ["+i", directory.path]).requireSuccess()
        defer { _ = try? runProgram("/usr/bin/chattr", ["-i", directory.path]) }
        let refused = #expect(throws: JournalError.self) { try Journal(path: directory.journal) }
        guard case .readOnly? = refused else {
            Issue.record("not said to be read-only: \(String(describing: refused))")
            return
        }
    }

    /// The scalar reads say "nothing" as nil: for no row, and for a NULL value (not 0 or "").
    @Test func scalarReadsAreNilForNoRowAndForNull() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("n.sqlite"))
        try connection.execute("CREATE TABLE t (x INTEGER)")
        #expect(try connection.scalarInt("SELECT max(x) FROM t") == nil)
        #expect(try connection.scalarInt("SELECT x FROM t") == nil)
        #expect(try connection.scalarText("SELECT NULL") == nil)
        #expect(try connection.scalarInt("SELECT 0") == 0)
        #expect(try connection.scalarText("SELECT ''") == "")
    }

    /// Closing lets go of the handle, so that a second close (the journal's, then the deinit's)
    /// does nothing instead of closing a freed connection.
    @Test func aConnectionClosesOnce() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("c.sqlite"))
        connection.close()
        #expect(connection.handle == nil)
        connection.close()
        #expect(connection.handle == nil)
    }

    /// A connection another thread finishes with: it is used by one thread at a time.
    private final class HandedOver: @unchecked Sendable {
        let connection: SQLiteConnection
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    /// A journal waits for another connection's write lock (its busy timeout) instead of failing
    /// at once with SQLITE_BUSY: a brief writer beside a run does not stop it.
    @Test func aJournalWaitsForAnotherWritersLock() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.journal)
        defer { journal.close() }
        let other = try SQLiteConnection(path: directory.journal)
        try other.execute("BEGIN IMMEDIATE")
        let holder = HandedOver(other)
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            try? holder.connection.execute("COMMIT")
            released.signal()
        }
        let started = Date()
        try journal.begin()
        #expect(Date().timeIntervalSince(started) >= 0.2)
        journal.rollback()
        released.wait()
    }

    /// Every kind of value reads back as it was bound (text with a NUL inside whole), and a value
    /// bound where the statement has no parameter is refused, copied or in place, not dropped.
    @Test func valuesReadBackAsBoundAndOnlyWhereTheStatementTakesThem() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("v.sqlite"))
        let statement = try connection.prepare("SELECT ?1, ?2, ?3, ?4, typeof(?3)")
        try statement.reset(.null, .int(Int64.min), .double(0.25), .text("a\u{0}é"))
        #expect(try statement.step())
        #expect(statement.isNull(0) && statement.int(1) == Int64.min && statement.double(2) == 0.25)
        #expect(statement.bytes(3).map(Array.init) == Array("a\u{0}é".utf8) && statement.text(4) == "real")
        statement.rewind()
        let refused = #expect(throws: SQLiteError.self) { try statement.bind(.int(1), at: 5) }
        #expect(refused?.code == 25, "SQLITE_RANGE")
        let bytes = Array("x".utf8)
        let inPlace = bytes.withUnsafeBufferPointer { buffer in
            #expect(throws: SQLiteError.self) { try statement.bindInPlace(buffer, at: 5) }
        }
        #expect(inPlace?.code == 25, "SQLITE_RANGE")
        let tooMany = #expect(throws: SQLiteError.self) { try statement.reset(.null, .null, .null, .null, .null) }
        #expect(tooMany?.message == "the statement takes 4 values, 5 were given")
    }

    /// SQL that holds no statement (a comment) is refused when it is prepared, not at its first step.
    @Test func sqlWithoutAStatementIsRefusedWhenPrepared() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("s.sqlite"))
        #expect(throws: SQLiteError.self) { try connection.prepare("-- nothing") }
    }
}
