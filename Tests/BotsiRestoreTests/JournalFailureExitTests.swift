import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Whatever goes wrong with the journal, `run` ends with exit 73 (what the CLI returns, see
/// RunCommand.execute) and a one-line message, and keeps every outcome already committed.
/// The journal-level behaviour is in Tests/BotsiJournalTests/JournalStressTests.swift.
@Suite struct JournalFailureExitTests {
    private struct Outcome {
        let exitCode: Int32
        let message: String
        let summary: RunSummary?
    }

    private func run(_ harness: Harness, _ inputs: [String], journal: String? = nil) -> Outcome {
        var options = RunOptions()
        options.inputs = inputs
        options.journalPath = journal ?? harness.journalPath
        options.baseURL = harness.simulator.baseURL
        options.concurrency = 8
        options.timeout = 5
        options.backoffBase = 0.01
        options.backoffCap = 0.05
        options.seed = 3
        do {
            let summary = try Runner(options: options, apiKey: Simulator.defaultKey, toolVersion: "test").run()
            return Outcome(exitCode: summary.exitCode, message: summary.stopMessage ?? "", summary: summary)
        } catch {
            return Outcome(exitCode: error.exitCode, message: error.message, summary: nil)
        }
    }

    private func expectSummaryAgreesWithTheJournal(
        _ outcome: Outcome, _ journalPath: String, location: SourceLocation = #_sourceLocation
    ) throws {
        let summary = try #require(outcome.summary, sourceLocation: location)
        let journal = try Journal(path: journalPath, create: false, readOnly: true)
        defer { journal.close() }
        let run = try #require(try journal.runs().last, sourceLocation: location)
        var held: [ItemStatus: Int] = [:]
        for count in try journal.rowCounts(runID: run.id) { held[count.status, default: 0] += count.count }
        #expect(summary.statuses == held, "summary \(summary.statuses), journal \(held)", sourceLocation: location)
        #expect(
            run.state != .running || summary.endUnrecorded, "run \(run.id) left running, and the summary did not say",
            sourceLocation: location)
        #expect(
            summary.render(journalPath: journalPath).contains("what the journal holds"), sourceLocation: location)
    }

    private func rows(_ count: Int, from start: Int = 0) -> [(String, String)] {
        (start..<start + count).map { ("profile-\($0)", String(2_000_000_000_000_001 + $0 * 10)) }
    }

    private func finalRows(_ journalPath: String) throws -> [String: String] {
        let journal = try Journal(path: journalPath, create: false, readOnly: true)
        defer { journal.close() }
        #expect(try journal.integrityCheck() == "ok")
        var rows: [String: String] = [:]
        try journal.forEachReportRecord(ReportFilter()) { record in
            if record.status != .pending && record.status != .inFlight {
                rows[record.profileId + "/" + record.originalTransactionId] =
                    record.status.rawValue + "@" + record.updatedAt
            }
        }
        return rows
    }

    private func expectOneLine(
        _ outcome: Outcome, mentioning phrase: String, location: SourceLocation = #_sourceLocation
    ) {
        #expect(outcome.exitCode == 73, "\(outcome.message)", sourceLocation: location)
        #expect(!outcome.message.isEmpty && !outcome.message.contains("\n"), sourceLocation: location)
        #expect(outcome.message.contains(phrase), "\(outcome.message)", sourceLocation: location)
    }

    @Test func fileThatIsNotSQLiteExits73AndIsLeftAlone() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let text = Data("id,name\n1,not a journal\n".utf8)
        try text.write(to: URL(fileURLWithPath: harness.journalPath))
        let outcome = run(harness, [harness.scratch.csv(rows: rows(5))])
        expectOneLine(outcome, mentioning: "not a botsi-restore journal")
        #expect(try Data(contentsOf: URL(fileURLWithPath: harness.journalPath)) == text)
        #expect(harness.simulator.stats().requests == 0)
    }

    @Test func journalFromANewerVersionExits73AndKeepsItsRows() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: rows(50))
        #expect(run(harness, [input]).exitCode == 0)
        let before = try finalRows(harness.journalPath)
        let version = try SQLiteTool.execute(harness.journalPath, "PRAGMA user_version")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try SQLiteTool.execute(harness.journalPath, "PRAGMA user_version = 99")
        let requests = harness.simulator.stats().requests

        let outcome = run(harness, [input])
        expectOneLine(outcome, mentioning: "newer")
        #expect(harness.simulator.stats().requests == requests, "a refused journal must not start a run")
        try SQLiteTool.execute(harness.journalPath, "PRAGMA user_version = \(version)")
        #expect(try finalRows(harness.journalPath) == before)
    }

    @Test func truncatedJournalExits73WithoutSendingAnything() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: rows(3000))
        #expect(run(harness, [input]).exitCode == 0)
        let copy = harness.scratch.file("truncated.sqlite")
        try FileManager.default.copyItem(atPath: harness.journalPath, toPath: copy)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int)
        #expect(truncate(copy, off_t(size / 2)) == 0)
        let requests = harness.simulator.stats().requests

        let outcome = run(harness, [input], journal: copy)
        #expect(outcome.exitCode == 73, "\(outcome.message)")
        #expect(!outcome.message.isEmpty && !outcome.message.contains("\n"))
        #expect(outcome.message.contains(copy))
        // Rows the damaged copy no longer knows must not be sent as if they were new.
        #expect(harness.simulator.stats().requests == requests)
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func readOnlyDirectoryExits73AndKeepsEveryCommittedRow() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let mount = try Tmpfs(at: harness.scratch.file("ro"), sizeKiB: 16 * 1024)
        defer { mount.unmount() }
        let journalPath = mount.path + "/journal.sqlite"
        let input = harness.scratch.csv(rows: rows(40))
        #expect(run(harness, [input], journal: journalPath).exitCode == 0)
        let before = try finalRows(journalPath)
        // A read-only mount stops root too, where a 0555 directory would not.
        try mount.remount(options: "ro")

        // Said as what it is: no permission fixes a read-only mount, a copy elsewhere does.
        let outcome = run(harness, [harness.scratch.csv("more.csv", rows: rows(20, from: 40))], journal: journalPath)
        expectOneLine(outcome, mentioning: "is on a file system mounted read-only, so it cannot be written")
        #expect(outcome.message.contains("copy it") && !outcome.message.contains("permissions"), "\(outcome.message)")

        try mount.remount(options: "rw")
        #expect(try finalRows(journalPath) == before)
    }

    @Test(.enabled(if: Tmpfs.canMount, "needs permission to mount a tmpfs (root, or CAP_SYS_ADMIN)"))
    func diskFullMidRunExits73AndTheNextRunResendsNothingCommitted() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let mount = try Tmpfs(at: harness.scratch.file("small"), sizeKiB: 3072)
        defer { mount.unmount() }
        let journalPath = mount.path + "/journal.sqlite"
        let input = harness.scratch.csv(rows: rows(4000))

        let outcome = run(harness, [input], journal: journalPath)
        expectOneLine(outcome, mentioning: "full")
        let committed = try finalRows(journalPath)
        #expect(!committed.isEmpty && committed.count < 4000, "the disk must fill mid-run, not before or after")
        // The summary counts what the journal holds, not the outcomes of the batch rolled back, and
        // the run is not left recorded as running unless the summary says its end was not recorded.
        try expectSummaryAgreesWithTheJournal(outcome, journalPath)
        // What is left is owed, and the summary says how to go on once space is back (it said the
        // journal owed nothing, with a thousand rows pending).
        let text = try #require(outcome.summary).render(journalPath: journalPath)
        #expect(!text.contains("owes no row"), "\(text)")
        #expect(text.contains("make the journal usable first"), "\(text)")
        #expect(text.contains("with: botsi-restore run \(input)"), "\(text)")
        let requestsBefore = Dictionary(
            harness.simulator.stats().pairs.map { ($0.profileId + "/" + $0.originalTransactionId, $0.requests) },
            uniquingKeysWith: +)

        // Space comes back: the next run finishes and sends no row whose outcome was committed.
        try mount.remount(options: "size=64m")
        let second = run(harness, [input], journal: journalPath)
        #expect(second.exitCode == 0, "\(second.message)")
        let after = try finalRows(journalPath)
        #expect(after.count == 4000)
        let requestsAfter = Dictionary(
            harness.simulator.stats().pairs.map { ($0.profileId + "/" + $0.originalTransactionId, $0.requests) },
            uniquingKeysWith: +)
        for (pair, record) in committed {
            #expect(after[pair] == record, "committed outcome of \(pair) changed")
            #expect(requestsAfter[pair] == requestsBefore[pair], "\(pair) was committed but sent again")
        }
        print("disk full: \(committed.count) of 4000 rows were committed before the disk filled: \(outcome.message)")
    }
}
