import BotsiTestSupport
import Testing

@testable import BotsiJournal

@Suite struct SQLiteStatementTests {
    /// `reset` clears old bindings only when it binds fewer values than the statement takes: a
    /// parameter it leaves out must read NULL, never the value of the call before.
    @Test func parametersAResetLeavesOutAreNull() throws {
        let directory = Workspace()
        let connection = try SQLiteConnection(path: directory.file("s.sqlite"))
        let statement = try connection.prepare("SELECT ?1, ?2")
        try statement.reset(.int(1), .text("two"))
        #expect(try statement.step())
        #expect(statement.int(0) == 1 && statement.text(1) == "two")
        try statement.reset(.int(3))
        #expect(try statement.step())
        #expect(statement.int(0) == 3 && statement.isNull(1))
        try statement.reset(.text("four"), .null)
        #expect(try statement.step())
        #expect(statement.text(0) == "four" && statement.isNull(1))
        try statement.reset()
        #expect(try statement.step())
        #expect(statement.isNull(0) && statement.isNull(1))
    }
}
