import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A rerun of an input whose rows the journal still owes meets each of them twice: once taken up
/// as owed, once read in the file. That is not a duplicate (issue 19, item 4: 1,023 "duplicates
/// (same pair again, sent once)" in a rerun of a file that had none).
@Suite struct OwedMetAgainTests {
    @Test func owedRowsReadAgainAreNotDuplicates() throws {
        let failing = try Harness {
            $0.faultRate = 1
            $0.faults = [.internalError]
        }
        defer { failing.simulator.stop() }
        let rows = (0..<12).map { ("owed-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        // One true duplicate in the file, so that both counts show.
        let input = failing.scratch.csv(rows: rows + [rows[0]])
        let first = try failing.run([input]) { $0.maxAttempts = 1 }
        #expect(first.duplicates == 1 && first.owedMetAgain == 0)

        let good = try startSimulator()
        defer { good.stop() }
        let rerun = try runJob(
            [input], journal: failing.journalPath, baseURL: good.baseURL, key: Simulator.defaultKey)
        #expect(rerun.exitCode == 0)
        #expect(rerun.owedMetAgain == 12, "each owed row read again in the file")
        #expect(rerun.duplicates == 1, "only the pair the file holds twice")
        let text = rerun.render(journalPath: failing.journalPath)
        #expect(text.contains("met again in the input (one row each, never sent twice): 12"), "\(text)")
        #expect(text.contains("duplicates (same pair again, sent once): 1"), "\(text)")
        #expect(good.stats().requests == 12, "each owed row sent once")
    }
}
