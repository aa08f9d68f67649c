import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// The typed boundary: what the runner writes comes back as the same values, the text on disk is
/// the format docs/journal.md describes (unchanged since v1), and a value this version does not
/// know is refused with an error naming the row.
@Suite struct JournalRecordsTests {
    private func newJournal(_ directory: Workspace) throws -> Journal {
        try Journal(path: directory.file("journal.sqlite"))
    }

    private func startRun(_ journal: Journal) throws -> Int64 {
        try journal.transaction { () throws(JournalError) in
            try journal.startRun(startedAt: Date(), toolVersion: "test", host: "h", pid: 1, optionsJSON: "{}")
        }
    }

    /// A run that admitted one row to send, for the tests that write what became of it.
    private func startRunAdmittingOneRow(_ journal: Journal) throws -> (run: Int64, item: Int64) {
        let run = try startRun(journal)
        let admission = try journal.transaction { () throws(JournalError) in
            try journal.admit(profileId: "p", originalTransactionId: "1", source: "in.csv:2", runID: run, now: "x")
        }
        guard case .send(let item, _) = admission else { throw CancellationError() }
        return (run, item)
    }

    @Test func aRunsStateInputsCountsAndProgressComeBackAsWritten() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        let run = try startRun(journal)
        let progress = RunProgressRecord(
            rowsRead: 10, bytesRead: 200, totalBytes: 400, requests: 9, updatedAt: "2026-01-01T00:00:00.000Z")
        try journal.transaction { () throws(JournalError) in try journal.recordProgress(run, progress) }
        #expect(try journal.runs().first?.state == .running)
        #expect(try journal.runs().first?.progress == progress)
        #expect(try journal.runs().first?.counts == RunCounts(), "a run that has not ended has no counts")

        let inputs = [
            RunInput(path: "a.csv", sha256: "ab", bytes: 1234, complete: true),
            RunInput(path: "b, \"odd\".csv", sha256: "cd", bytes: 0, complete: false),
        ]
        var counts = RunCounts()
        counts.statuses = [.held: 2, .restored: 3]
        counts.codes = [StatusCode(.held, ItemStatus.heldCode): 2, StatusCode(.restored, nil): 3]
        counts.rejectedByReason = ["malformed_csv": 1]
        counts.requests = 7
        counts.retries = 4
        counts.stopCause = .signal
        try journal.transaction { () throws(JournalError) in
            try journal.finishRun(run, endedAt: Date(), state: .stopped, exitCode: 75, inputs: inputs, counts: counts)
        }
        let record = try #require(try journal.runs().first)
        #expect(record.state == .stopped)
        #expect(record.inputs == inputs)
        #expect(record.counts == counts, "the record reads back as the run wrote it")
        // Written with the keys every version used: codes as "status/code".
        let storedCounts = try #require(try journal.connection.scalarText("SELECT counts FROM runs"))
        #expect(
            storedCounts.contains(#""restored\/":3"#) || storedCounts.contains(#""restored/":3"#), "\(storedCounts)")
        // On disk, as every version wrote it: byte counts and completeness as strings.
        let stored = try #require(try journal.connection.scalarText("SELECT inputs FROM runs"))
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [[String: String]])
        #expect(objects[0] == ["path": "a.csv", "sha256": "ab", "bytes": "1234", "complete": "true"])
        #expect(objects[1]["complete"] == "false")
        #expect(try journal.connection.scalarText("SELECT state FROM runs") == "stopped")
    }

    @Test func columnsWrittenByEarlierVersionsStillRead() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        _ = try startRun(journal)
        // Progress as the runner concatenated it, inputs as JSONSerialization wrote them.
        try journal.connection.execute(
            """
            UPDATE runs SET state = 'finished',
                progress = '{"rowsRead":5,"bytesRead":50,"requests":4,"updatedAt":"2026-01-01T00:00:00.000Z","totalBytes":100}',
                inputs = '[{"bytes":"10","complete":"false","path":"in\\/x.csv","sha256":"00"}]',
                counts = '{"statuses":{"pending":1},"codes":{"pending/http_503":1},"stopCause":"windowEnd","somethingElse":[1,2]}'
            """)
        let record = try #require(try journal.runs().first)
        #expect(record.state == .finished)
        #expect(record.progress.bytesRead == 50 && record.progress.totalBytes == 100 && record.progress.rowsRead == 5)
        #expect(record.inputs == [RunInput(path: "in/x.csv", sha256: "00", bytes: 10, complete: false)])
        #expect(record.counts.statuses == [.pending: 1])
        #expect(record.counts.codes == [StatusCode(.pending, "http_503"): 1])
        #expect(record.counts.stopCause == .windowEnd)
        #expect(record.counts.requests == nil, "fields an older run did not record are absent, not zero")
    }

    @Test func attemptOutcomesAreStoredAsTheirJournalCodesAndReadAsText() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        let (run, item) = try startRunAdmittingOneRow(journal)
        let outcomes: [AttemptOutcome] = [.retry, .kept, .status(.restored), .status(.pending)]
        try journal.transaction { () throws(JournalError) in
            for (index, outcome) in outcomes.enumerated() {
                try journal.recordAttempt(
                    itemID: item, runID: run, number: index + 1, startedAt: Date(), durationMilliseconds: 1,
                    httpStatus: nil, code: nil, outcome: outcome, profile: nil)
            }
        }
        let statement = try journal.connection.prepare("SELECT outcome FROM attempts_readable ORDER BY id")
        var stored: [String] = []
        while try statement.step() { stored.append(statement.text(0) ?? "") }
        #expect(stored == ["retry", "kept", "restored", "pending"])
        #expect(
            try journal.attemptOutcomesByRun()[run] == [
                .retry: 1, .kept: 1, .status(.restored): 1, .status(.pending): 1,
            ])
        for outcome in outcomes + ItemStatus.allCases.map(AttemptOutcome.status) {
            #expect(AttemptOutcome(rawValue: outcome.rawValue) == outcome)
        }
        #expect(AttemptOutcome(rawValue: "Retry") == nil)
    }

    /// A hand-edited journal: an unknown status, state or outcome stops the reader with an error
    /// that names the table, the row and the value — never a guess, never a crash.
    @Test func anUnknownValueIsAClearErrorNamingItsRow() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        let (run, item) = try startRunAdmittingOneRow(journal)
        // As sqlite3 lets one write it: its foreign keys are off unless asked.
        try journal.connection.execute("PRAGMA foreign_keys = OFF; UPDATE items SET status = 99 WHERE id = \(item)")
        let reportError = #expect(throws: JournalError.self) {
            try journal.forEachReportRecord(ReportFilter()) { _ in }
        }
        guard case .unknownValue(_, let table, let column, let row, let value)? = reportError else {
            Issue.record("expected unknownValue, got \(String(describing: reportError))")
            return
        }
        #expect((table, column, row, value) == ("items", "status", item, "99"))
        #expect(reportError?.description.contains("items row \(item) holds status '99'") == true)
        #expect(throws: JournalError.self) { try journal.snapshot(recentSince: Date()) }

        try journal.connection.execute("UPDATE runs SET state = 'paused'")
        #expect(throws: JournalError.self) { try journal.runs() }
        try journal.connection.execute("UPDATE runs SET state = 'running', counts = '{\"statuses\":{\"paused\":1}}'")
        #expect(throws: JournalError.self) { try journal.runs() }
        try journal.connection.execute("UPDATE runs SET counts = '{}'")
        #expect(try journal.runs().count == 1)

        try journal.transaction { () throws(JournalError) in
            try journal.recordAttempt(
                itemID: item, runID: run, number: 1, startedAt: Date(), durationMilliseconds: 1, httpStatus: nil,
                code: nil, outcome: .retry, profile: nil)
        }
        // The per-run counts the triggers keep are what the readers read.
        try journal.connection.execute("UPDATE attempts SET outcome = 98; UPDATE run_attempts SET outcome = 98")
        #expect(throws: JournalError.self) { try journal.attemptOutcomesByRun() }
    }

    /// The writer's readers refuse to guess too: a later run that reads the pair again stops on its
    /// unknown status instead of taking it for `pending` (issue 18, item 7).
    @Test func admittingAPairWhoseStatusIsUnknownIsAClearErrorNamingItsRow() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        let (_, item) = try startRunAdmittingOneRow(journal)
        // As sqlite3 lets one write it: its foreign keys are off unless asked.
        try journal.connection.execute("PRAGMA foreign_keys = OFF; UPDATE items SET status = 99 WHERE id = \(item)")
        let later = try startRun(journal)
        let error = #expect(throws: JournalError.self) {
            try journal.transaction { () throws(JournalError) in
                try journal.admit(
                    profileId: "p", originalTransactionId: "1", source: "in.csv:2", runID: later, now: "y")
            }
        }
        guard case .unknownValue(_, let table, let column, let row, let value)? = error else {
            Issue.record("expected unknownValue, got \(String(describing: error))")
            return
        }
        #expect((table, column, row, value) == ("items", "status", item, "99"))
        // Nothing was admitted in its place.
        let count = try journal.connection.prepare("SELECT count(*), max(status) FROM items")
        #expect(try count.step() && count.int(0) == 1 && count.int(1) == 99)
    }

    @Test func aStatementRefusesTheWrongNumberOfValues() throws {
        let directory = Workspace()
        let journal = try newJournal(directory)
        defer { journal.close() }
        let statement = try journal.connection.prepare("SELECT ? + ?")
        #expect(throws: SQLiteError.self) { try statement.reset(.int(1)) }
        #expect(throws: SQLiteError.self) { try statement.reset(.int(1), .int(2), .int(3)) }
        try statement.reset(.int(1), .int(2))
        #expect(try statement.step() && statement.int(0) == 3)
        #expect(throws: SQLiteError.self) { try statement.column("missing") }
    }

    /// A time read back from its text is the same millisecond: the advice's `--answered-before`
    /// came out a millisecond early (…19.659Z typed, …19.658Z advised), and earlier each round.
    @Test func aTimeReadBackFromItsTextKeepsItsMillisecond() {
        var generator = SplitMix64(seed: 11)
        for _ in 0..<10_000 {
            let milliseconds = Int64.random(in: 1_700_000_000_000...1_900_000_000_000, using: &generator)
            let text = Timestamp.string(milliseconds: milliseconds)
            let date = Timestamp.date(text)
            #expect(date.map(Timestamp.string) == text, "\(text)")
            if date.map(Timestamp.string) != text { return }
        }
    }

    /// A time before 1970 (a clock reset, an imported row) still reads as a time: the second is
    /// the one before, not a negative millisecond.
    @Test func aTimeBefore1970IsWrittenAsOne() {
        #expect(Timestamp.string(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.string(milliseconds: -1000) == "1969-12-31T23:59:59.000Z")
        #expect(Timestamp.milliseconds("1969-12-31T23:59:59.999Z") == -1)
    }

    /// Text that is not a time the journal wrote is not read as one, however close.
    @Test func textThatIsNoTimestampIsNil() {
        #expect(Timestamp.milliseconds("2026-11-29T16:40:00.123Z") == 1_795_970_400_123)
        for text in [
            "2026-11-00T16:40:00.123Z", "2026-11-32T16:40:00.123Z", "2026-11-29T16:40:00.123+",
            "2026-13-01T00:00:00.000Z",
        ] {
            #expect(Timestamp.milliseconds(text) == nil, "\(text)")
        }
    }
}
