import BotsiTestSupport
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
}
