import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

/// An attempt is counted on its row, and its in-flight mark cleared, by the same call that records
/// it: `recordReply` (the run's one call per reply, attempt and outcome in two statements) or
/// `recordAttempt` alone. Whatever happens after, no query and no commit sees a row without it.
@Suite struct JournalAttemptCountTests {
    private let directory = Workspace()
    private var path: String { directory.file("j.sqlite") }

    private func openWithRows(_ count: Int) throws -> (Journal, run: Int64, items: [Int64]) {
        let journal = try Journal(path: path)
        let run = try journal.transaction { () throws(JournalError) in
            try journal.startRun(
                startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
        }
        var items: [Int64] = []
        for index in 0..<count {
            let admission = try journal.transaction { () throws(JournalError) in
                try journal.admit(
                    profileId: "p\(index)", originalTransactionId: "10\(index)", source: "in.csv:\(index + 2)",
                    runID: run, now: Timestamp.string(Date()))
            }
            guard case .send(let item, _) = admission else { throw CancellationError() }
            items.append(item)
        }
        return (journal, run, items)
    }

    private func attempt(_ journal: Journal, _ item: Int64, run: Int64, outcome: AttemptOutcome = .status(.restored))
        throws(JournalError)
    {
        try journal.recordAttempt(
            itemID: item, runID: run, number: 1, startedAt: Date(), durationMilliseconds: 1, httpStatus: 200,
            code: nil, outcome: outcome, profile: nil)
    }

    private func outcome(_ journal: Journal, _ item: Int64, _ status: ItemStatus, withProfile: Bool = true)
        throws(JournalError)
    {
        try journal.recordOutcome(
            itemID: item, status: status, code: status == .pending ? "timeout" : nil, httpStatus: 200, message: nil,
            now: Timestamp.string(Date()),
            profile: withProfile ? ProfileRecord(state: "subscribed", accessLevelsJSON: "{}") : nil)
    }

    /// The committed counts, as another process sees them.
    private func committedAttempts() throws -> [String: Int] {
        let reader = try Journal(path: path, create: false, readOnly: true)
        defer { reader.close() }
        var attempts: [String: Int] = [:]
        try reader.forEachReportRecord(ReportFilter()) { attempts[$0.profileId] = $0.attempts }
        return attempts
    }

    @Test func aReplyRecordedInOneCallCountsOnceAndClearsTheMark() throws {
        let (journal, run, items) = try openWithRows(1)
        try journal.transaction { () throws(JournalError) in
            try journal.markInFlight(itemID: items[0], runID: run, now: Timestamp.string(Date()))
            try journal.recordReply(
                AttemptRecord(
                    itemID: items[0], runID: run, number: 1, startedAt: Date(), durationMilliseconds: 1,
                    httpStatus: 200, code: nil, outcome: .status(.restored), profile: nil),
                outcome: OutcomeRecord(
                    status: .restored, code: nil, httpStatus: 200, message: nil, now: Timestamp.string(Date()),
                    profile: nil))
        }
        #expect(try committedAttempts() == ["p0": 1])
        let recovered = try journal.transaction { () throws(JournalError) in try journal.recoverInFlight() }
        #expect(recovered == InFlightRecovery(pending: 0, final: 0), "the reply cleared the mark")
        journal.close()
    }

    @Test(arguments: [true, false])
    func anAttemptAndItsOutcomeCountOnceAndClearTheMark(withProfile: Bool) throws {
        let (journal, run, items) = try openWithRows(2)
        try journal.transaction { () throws(JournalError) in
            try journal.recordOutcome(
                itemID: items[1], status: .restored, code: nil, httpStatus: 200, message: nil,
                now: Timestamp.string(Date()), profile: nil)
        }
        try journal.transaction { () throws(JournalError) in
            try journal.markInFlight(itemID: items[0], runID: run, now: Timestamp.string(Date()))
            try journal.markInFlight(itemID: items[1], runID: run, now: Timestamp.string(Date()), keepsStatus: true)
            for item in items {
                try attempt(journal, item, run: run)
                try outcome(journal, item, .restored, withProfile: withProfile)
            }
        }
        #expect(try committedAttempts() == ["p0": 1, "p1": 1])
        let report = try Journal(path: path, create: false, readOnly: true)
        var states: [String?] = []
        try report.forEachReportRecord(ReportFilter()) { states.append($0.profileState) }
        report.close()
        #expect(states == (withProfile ? ["subscribed", "subscribed"] : [nil, nil]))
        let recovered = try journal.transaction { () throws(JournalError) in try journal.recoverInFlight() }
        #expect(recovered == InFlightRecovery(pending: 0, final: 0), "the outcome cleared the resend's mark")
    }

    @Test func anAttemptWithoutItsOutcomeIsCountedBeforeWhateverComesNext() throws {
        let (journal, run, items) = try openWithRows(3)
        try journal.transaction { () throws(JournalError) in
            try attempt(journal, items[0], run: run, outcome: .retry)
            // A query in the same transaction sees the count.
            let owed = try journal.owedRows(
                after: 0, limit: 10, selection: OwedSelection(statuses: [.pending]), runID: 0)
            #expect(owed.map(\.attempts) == [1, 0, 0])
            try outcome(journal, items[0], .pending, withProfile: false)
            // Another row's outcome does not take this row's attempt.
            try attempt(journal, items[1], run: run)
            try outcome(journal, items[2], .restored)
            // An attempt left last is written by the commit.
            try attempt(journal, items[2], run: run, outcome: .kept)
        }
        #expect(try committedAttempts() == ["p0": 1, "p1": 1, "p2": 1])
    }

    @Test func aKeptResendLosesItsMarkWithoutAnOutcome() throws {
        let (journal, run, items) = try openWithRows(1)
        try journal.transaction { () throws(JournalError) in
            try outcome(journal, items[0], .restored)
            try journal.markInFlight(itemID: items[0], runID: run, now: Timestamp.string(Date()), keepsStatus: true)
            try attempt(journal, items[0], run: run, outcome: .kept)
        }
        let recovered = try journal.transaction { () throws(JournalError) in try journal.recoverInFlight() }
        #expect(recovered == InFlightRecovery(pending: 0, final: 0))
        #expect(try committedAttempts() == ["p0": 1])
    }

    @Test func anAttemptOutsideATransactionIsCountedAtOnce() throws {
        let (journal, run, items) = try openWithRows(1)
        try attempt(journal, items[0], run: run)
        #expect(try committedAttempts() == ["p0": 1])
        journal.close()
    }

    @Test func aRolledBackAttemptIsNeverCounted() throws {
        let (journal, run, items) = try openWithRows(2)
        try journal.begin()
        try attempt(journal, items[0], run: run)
        journal.rollback()
        try journal.transaction { () throws(JournalError) in try outcome(journal, items[0], .restored) }
        #expect(try committedAttempts() == ["p0": 0, "p1": 0])
        try journal.begin()
        try attempt(journal, items[1], run: run)
        journal.close()
        #expect(try committedAttempts() == ["p0": 0, "p1": 0], "closing inside a transaction rolls it back")
    }

    /// Attempts whose INSERT waits for the commit (the run's replies) are written as if each had
    /// been inserted with its reply: the same ids in the same order, values, snapshots and counts,
    /// for a few and for more than a statement holds; a rollback drops the waiting ones.
    @Test(arguments: [1, 3, 31, 32, 33, 70])
    func attemptsInsertedAtTheCommitAreThoseInsertedOneByOne(count: Int) throws {
        func journal(deferring: Bool) throws -> String {
            let path = directory.file("\(deferring ? "deferred" : "at-once")-\(count).sqlite")
            let (journal, run, items) = try journalWithAdmittedRows(at: path, count: count)
            func record(_ index: Int, _ item: Int64) throws(JournalError) {
                let restored = index % 3 != 0
                let attempt = AttemptRecord(
                    itemID: item, runID: run, number: 1 + index % 2,
                    startedAt: Date(timeIntervalSince1970: 1_000 + Double(index)),
                    durationMilliseconds: 12.5 + Double(index),
                    httpStatus: restored ? 200 : (index % 2 == 0 ? nil : 503),
                    code: restored ? nil : "http_503", outcome: restored ? .status(.restored) : .retry,
                    profile: restored ? ProfileRecord(state: "s\(index % 4)", accessLevelsJSON: "{}") : nil)
                let outcome: OutcomeRecord? =
                    index % 5 == 4
                    ? nil
                    : OutcomeRecord(
                        status: restored ? .restored : .pending, code: attempt.code, httpStatus: attempt.httpStatus,
                        message: nil, now: 2_000 + Int64(index), profile: attempt.profile)
                try journal.recordReply(attempt, outcome: outcome, deferringAttempt: deferring)
            }
            // Two batches, the second rolled back: nothing of it may stay, nor wait for the next commit.
            try journal.begin()
            for (index, item) in items.enumerated() { try record(index, item) }
            try journal.commit()
            try journal.begin()
            for (index, item) in items.enumerated() { try record(index + count, item) }
            journal.rollback()
            _ = try journal.transaction { () throws(JournalError) in try journal.inputID(path: "next.csv") }
            journal.close()
            return try SQLiteTool.execute(
                path,
                """
                SELECT id, item_id, run_id, number, started_at, duration_us, http_status, code, outcome, snapshot_id
                    FROM attempts ORDER BY id;
                SELECT id, status, code, http_status, attempts, in_flight_run, snapshot_id FROM items ORDER BY id;
                SELECT * FROM run_attempts ORDER BY run_id, outcome, http_status;
                SELECT * FROM snapshots ORDER BY id;
                """)
        }
        let atOnce = try journal(deferring: false)
        #expect(try journal(deferring: true) == atOnce)
        #expect(atOnce.split(separator: "\n").count >= count * 2, "\(atOnce)")
    }
}
