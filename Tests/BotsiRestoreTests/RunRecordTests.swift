import BotsiJournal
import BotsiRestore
import BotsiTestSupport
import Foundation
import Testing

/// What a real run records about itself, read back through the typed journal records.
@Suite struct RunRecordTests {
    @Test func aFinishedRunAndAStoppedRunRecordTheirStateInputsAndCounts() throws {
        let harness = try Harness()
        let input = harness.scratch.csv(rows: [("p1", "2000000000000002"), ("p2", "2000000000000010")])
        let finished = try harness.run([input])
        #expect(finished.exitCode == 0)
        // A wrong key stops the run at its first reply: the new row stays owed.
        let more = harness.scratch.csv("more.csv", rows: [("p3", "2000000000000004")])
        let stopped = try harness.run([more], key: "not-the-key")
        #expect(stopped.exitCode != 0)

        let journal = try Journal(path: harness.journalPath, create: false, readOnly: true)
        defer { journal.close() }
        let runs = try journal.runs()
        #expect(runs.map(\.state) == [.finished, .stopped])
        #expect(runs[0].inputs.map(\.path) == [input] && runs[0].inputs.allSatisfy(\.complete))
        #expect(runs[0].inputs.first?.bytes == Int64(try Data(contentsOf: URL(fileURLWithPath: input)).count))
        #expect(runs[0].counts.statuses == [.restored: 1, .nothingToRestore: 1])
        #expect(runs[0].counts.requests == 2)
        #expect(runs[1].counts.stopCause != nil)
    }
}
