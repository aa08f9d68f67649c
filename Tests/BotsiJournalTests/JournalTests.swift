import BotsiFiles
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

private func startRun(_ journal: Journal) throws -> Int64 {
    try journal.transaction { () throws(JournalError) in
        try journal.startRun(
            startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
    }
}

private func admit(_ journal: Journal, _ profile: String, _ transaction: String, run: Int64) throws -> Admission {
    try journal.transaction { () throws(JournalError) in
        try journal.admit(
            profileId: profile, originalTransactionId: transaction, source: "in.csv:2", runID: run,
            now: Timestamp.string(Date()))
    }
}

/// Admits a new pair `p<index>` for each transaction id, in order; each must be sent. The rows' item ids.
private func admitNew(_ journal: Journal, transactions: [String], run: Int64) throws -> [Int64] {
    try transactions.enumerated().map { index, transaction in
        try admitNew(journal, profile: "p\(index)", transaction: transaction, run: run)
    }
}

/// Admits a pair the journal has never seen, which must be sent: its row's item id.
private func admitNew(_ journal: Journal, profile: String, transaction: String, run: Int64) throws -> Int64 {
    let admission = try admit(journal, profile, transaction, run: run)
    let item: Int64? = if case .send(let item, _) = admission { item } else { nil }
    return try #require(item, "a new pair is sent, not \(admission)")
}

/// Every owed row's profile id, batch by batch as a run reads them.
private func owed(_ journal: Journal, _ selection: OwedSelection, run: Int64 = 0, batch: Int = 2) throws -> [String] {
    var ids: [String] = []
    var after: Int64 = 0
    while true {
        let rows = try journal.owedRows(after: after, limit: batch, selection: selection, runID: run)
        guard let last = rows.last else { return ids }
        ids += rows.map(\.profileID)
        after = last.itemID
    }
}

private let plain = OwedSelection(statuses: [.pending])

private func settle(_ journal: Journal, item: Int64, _ status: ItemStatus, code: String? = nil) throws {
    try journal.transaction { () throws(JournalError) in
        try journal.recordOutcome(
            itemID: item, status: status, code: code, httpStatus: 200, message: nil, now: Timestamp.string(Date()),
            profile: status == .restored ? ProfileRecord(state: "subscribed", accessLevelsJSON: "{}") : nil)
    }
}

@Suite struct JournalTests {
    @Test func createsJournalWithPrivateModeWALAndSchemaVersion() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        _ = try startRun(journal)
        journal.close()
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let reader = try Journal(path: path, create: false, readOnly: true)
        #expect(try reader.integrityCheck() == "ok")
        #expect(try reader.runs().count == 1)
    }

    @Test func newPairIsSentOnceAndDuplicateInSameRunIsCounted() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let item = try admitNew(journal, profile: "p1", transaction: "100", run: run)
        #expect(try admit(journal, "p1", "100", run: run) == .duplicate)
        try settle(journal, item: item, .restored)
        let nextRun = try startRun(journal)
        #expect(try admit(journal, "p1", "100", run: nextRun) == .finished(.restored))
    }

    /// A snapshot's stored hash is FNV-1a over the state's UTF-8 and a byte for its absence, then
    /// the access levels' the same way: the journal finds a snapshot again by it, so it must not
    /// drift whatever way it is computed.
    @Test func aSnapshotIsStoredUnderTheHashOfItsTexts() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        defer { journal.close() }
        let run = try startRun(journal)
        let profiles = [
            ProfileRecord(state: "subscribed", accessLevelsJSON: #"{"premium":{"isActive":true}}"#),
            ProfileRecord(state: nil, accessLevelsJSON: "{}"),
            ProfileRecord(state: "grâce 😀", accessLevelsJSON: nil),
            ProfileRecord(state: "", accessLevelsJSON: ""),
        ]
        let items = try admitNew(journal, transactions: profiles.indices.map { "10\($0)" }, run: run)
        for (item, profile) in zip(items, profiles) {
            try journal.transaction { () throws(JournalError) in
                try journal.recordOutcome(
                    itemID: item, status: .restored, code: nil, httpStatus: 200, message: nil, now: 1_000,
                    profile: profile)
            }
        }
        func fnv(_ texts: [String?]) -> Int64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for text in texts {
                for byte in Array((text ?? "").utf8) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
                hash = (hash ^ (text == nil ? 1 : 0)) &* 0x100_0000_01b3
            }
            return Int64(bitPattern: hash)
        }
        let rows = try journal.connection.prepare("SELECT hash FROM snapshots ORDER BY id")
        var stored: [Int64] = []
        while try rows.step() { stored.append(rows.int(0)) }
        #expect(stored == profiles.map { fnv([$0.state, $0.accessLevelsJSON]) })
    }

    /// Every run's start recovers what a killed run left in flight: through the runs that have such
    /// rows, never a walk of every row (0.9 s per run start on a journal of 10 million).
    @Test func recoveringInFlightRowsReadsOnlyTheRunsThatHaveThem() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        defer { journal.close() }
        let statement = try journal.connection.prepare("EXPLAIN QUERY PLAN " + Journal.recoverPendingSQL.description)
        var plan: [String] = []
        while try statement.step() { plan.append(statement.text(3) ?? "") }
        #expect(plan.contains { $0.contains("items USING INDEX items_last_run") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN items") }, "\(plan)")
    }

    @Test func pendingRowsAreOwedOldestFirstAndInFlightOnesAreRecovered() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let items = try admitNew(journal, transactions: (0..<5).map { "10\($0)" }, run: run)
        try settle(journal, item: items[2], .restored)
        try journal.transaction { () throws(JournalError) in
            try journal.markInFlight(itemID: items[1], runID: run, now: Timestamp.string(Date()))
            try journal.markInFlight(itemID: items[2], runID: run, now: Timestamp.string(Date()), keepsStatus: true)
        }
        #expect(try owed(journal, plain) == ["p0", "p3", "p4"], "in_flight is recovered before rows are selected")
        let recovered = try journal.transaction { () throws(JournalError) in try journal.recoverInFlight() }
        #expect(recovered == InFlightRecovery(pending: 1, final: 1))
        #expect(try owed(journal, plain) == ["p0", "p1", "p3", "p4"])
        let nextRun = try startRun(journal)
        #expect(try admit(journal, "p2", "102", run: nextRun) == .finished(.restored), "the final row stayed final")
        // A claimed row is this run's: the owed rows leave it out; its input meets it as an owed
        // row read again (not a duplicate), and only a second sighting is a duplicate.
        try journal.transaction { () throws(JournalError) in try journal.claim(itemID: items[0], runID: nextRun) }
        #expect(try owed(journal, plain, run: nextRun) == ["p1", "p3", "p4"])
        #expect(try admit(journal, "p0", "100", run: nextRun) == .owedMetAgain)
        #expect(try admit(journal, "p0", "100", run: nextRun) == .duplicate)
    }

    @Test(arguments: [ItemStatus.failed, .profileNotFound, .rejected])
    func failuresAreOwedOnlyWhenTheSelectionAsksForThem(status: ItemStatus) throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let item = try admitNew(journal, profile: "p", transaction: "1", run: run)
        try settle(journal, item: item, status, code: "x")
        #expect(try admit(journal, "p", "1", run: try startRun(journal)) == .finished(status))
        #expect(try owed(journal, plain).isEmpty)
        #expect(try owed(journal, OwedSelection(statuses: [.pending, status])) == ["p"])
    }

    /// `--answered-before`, a stopped selection's continuation: the failures it chose and answered
    /// since are left out (a refresh's cutoff is the earlier of its own and this one:
    /// `OutcomePolicy.owedSelection`); pending rows stay owed.
    @Test(arguments: [ItemStatus.failed, .rejected])
    func aContinuationLeavesOutFinalRowsAnsweredSinceItsCutoff(status: ItemStatus) throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let item = try admitNew(journal, profile: "p", transaction: "1", run: run)
        try settle(journal, item: item, status, code: "x")
        _ = try admit(journal, "q", "2", run: run)
        let before = OwedSelection(statuses: [.pending, status], finalAnsweredBefore: Date().addingTimeInterval(-3600))
        #expect(try owed(journal, before) == ["q"], "answered after the cutoff: left out")
        let after = OwedSelection(statuses: [.pending, status], finalAnsweredBefore: Date().addingTimeInterval(3600))
        #expect(try owed(journal, after) == ["p", "q"], "answered before the cutoff: chosen")
    }

    @Test(arguments: [ItemStatus.restored, .nothingToRestore])
    func refreshableRowsAreOwedOnlyWhenAnsweredBeforeTheCutoff(status: ItemStatus) throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let item = try admitNew(journal, profile: "p", transaction: "1", run: run)
        try settle(journal, item: item, status)
        let past = OwedSelection(
            statuses: [.pending], refreshStatuses: [status], answeredBefore: Date().addingTimeInterval(-3600))
        #expect(try owed(journal, past).isEmpty)
        let future = OwedSelection(
            statuses: [.pending], refreshStatuses: [status], answeredBefore: Date().addingTimeInterval(3600))
        #expect(try owed(journal, future) == ["p"])
    }

    @Test func aRunsCountsAreTheRowsItWorkedOnAsTheyStandNow() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let first = try startRun(journal)
        for index in 0..<3 { _ = try admit(journal, "p\(index)", "\(index)", run: first) }
        let second = try startRun(journal)
        let item = try admitNew(journal, profile: "q", transaction: "9", run: second)
        try journal.transaction { () throws(JournalError) in
            try journal.claim(itemID: 1, runID: second)
            try journal.markInFlight(itemID: 1, runID: second, now: Timestamp.string(Date()))
        }
        try settle(journal, item: 1, .restored)
        #expect(
            try journal.rowCounts(runID: second) == [
                RunRowCount(status: .pending, code: nil, count: 1, notSent: 1),
                RunRowCount(status: .restored, code: nil, count: 1, notSent: 0),
            ])
        #expect(
            try journal.rowCounts(runID: first) == [RunRowCount(status: .pending, code: nil, count: 2, notSent: 2)])
        _ = item
    }

    /// Both cutoffs are strict: a row answered at the very millisecond of `--answered-before` or
    /// of `--refresh-older-than`'s instant is not "before" it.
    @Test(arguments: [ItemStatus.failed, .restored])
    func aRowAnsweredAtTheCutoffIsNotBeforeIt(status: ItemStatus) throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let item = try admitNew(journal, profile: "p", transaction: "1", run: run)
        try settle(journal, item: item, status, code: status == .failed ? "x" : nil)
        let answeredAt: Int64 = 1_795_970_400_123
        try journal.connection.execute("UPDATE items SET answered_at = \(answeredAt) WHERE id = \(item)")
        for (cutoff, chosen) in [(answeredAt, false), (answeredAt + 1, true)] {
            let instant = Timestamp.date(milliseconds: cutoff)
            let selection =
                status.isFinal && status != .restored
                ? OwedSelection(statuses: [.pending, status], finalAnsweredBefore: instant)
                : OwedSelection(statuses: [.pending], refreshStatuses: [status], answeredBefore: instant)
            #expect(try owed(journal, selection) == (chosen ? ["p"] : []), "cutoff \(cutoff)")
        }
    }

    /// A row an earlier run sent and left pending, claimed by a run that stopped before sending
    /// it, is one this run did not send; and rows not sent are told once, however many pending
    /// codes the run's rows hold.
    @Test func rowsNotSentAreThisRunsAndToldOnce() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let first = try startRun(journal)
        let items = try admitNew(journal, transactions: (1...3).map(String.init), run: first)
        try journal.transaction { () throws(JournalError) in
            _ = try journal.markInFlight(itemID: items[0], runID: first, now: Timestamp.string(Date()))
        }
        try settle(journal, item: items[0], .pending, code: "http_503")
        let second = try startRun(journal)
        try journal.transaction { () throws(JournalError) in
            for item in items { try journal.claim(itemID: item, runID: second) }
        }
        let counts = try journal.rowCounts(runID: second)
        #expect(counts.map(\.count) == [2, 1], "\(counts)")
        #expect(counts.map(\.notSent).reduce(0, +) == 3, "\(counts)")
        #expect(counts.filter { $0.notSent > 0 }.count == 1, "told once: \(counts)")
    }

    /// What `status` reads of a run while it runs or after a kill, from the attempts' running
    /// counts and the pacer's samples: all its requests, when its last one started (across every
    /// outcome), and how many it sent since an instant (its total less the latest sample's before it).
    @Test func aRunsActivityIsReadFromItsCountsAndSamples() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let items = try admitNew(journal, transactions: (1...2).map(String.init), run: run)
        let start = Date(timeIntervalSince1970: 1_795_970_400)
        let attempts: [(item: Int64, number: Int, at: Double, outcome: AttemptOutcome)] = [
            (items[0], 1, 5, .retry), (items[1], 1, 10, .status(.restored)), (items[0], 2, 20, .status(.restored)),
        ]
        try journal.transaction { () throws(JournalError) in
            for attempt in attempts {
                try journal.recordAttempt(
                    itemID: attempt.item, runID: run, number: attempt.number,
                    startedAt: start.addingTimeInterval(attempt.at), durationMilliseconds: 50, httpStatus: 200,
                    code: nil,
                    outcome: attempt.outcome, profile: nil)
            }
            for (at, requests) in [(4.0, 1), (12.0, 2), (18.0, 2)] {
                try journal.recordSample(
                    RunSample(
                        runID: run, at: Timestamp.milliseconds(start.addingTimeInterval(at)), rowsRead: 2,
                        requests: requests, inFlight: 0, sendRateLimit: nil, concurrency: 1))
            }
        }
        let activity = try journal.snapshot(recentSince: start.addingTimeInterval(15)).activity
        #expect(activity.requests == 3)
        #expect(activity.lastAttemptAt == Timestamp.string(start.addingTimeInterval(20)))
        #expect(activity.recentRequests == 1, "3 requests, 2 of them by the sample at 12 s")
    }

    /// An empty journal file, unchanged for a minute: being set up while a run holds its lock (75,
    /// try again), left so when none does (66: a reader retrying on 75 would wait for ever).
    @Test func anEmptyJournalIsBeingSetUpOnlyWhileARunHoldsIt() throws {
        let directory = Workspace()
        let path = directory.write("j.sqlite", "", mode: 0o600)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: path)
        func readerError() -> JournalError? {
            do {
                _ = try Journal(path: path, create: false, readOnly: true)
                return nil
            } catch { return error }
        }
        guard case .neverSetUp = readerError() else {
            Issue.record("held by no run: \(String(describing: readerError()))")
            return
        }
        let holder = try JournalFile(path: path, access: .write)
        defer { holder.close() }
        #expect(holder.tryRunLock())
        guard case .notSetUp = readerError() else {
            Issue.record("held by a run: \(String(describing: readerError()))")
            return
        }
    }

    @Test func theRunLockBelongsToTheFileUnderEveryNameAndNamesTheHolder() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let first = try Journal.openForRun(path: path)
        let started = "2026-01-01T00:00:00.000Z"
        let host = ProcessInfo.processInfo.hostName
        _ = try first.transaction { () throws(JournalError) in
            try first.startRun(
                startedAt: Timestamp.date(started)!, toolVersion: "test", host: host, pid: getpid(),
                optionsJSON: "{}")
        }
        symlink(path, directory.file("link.sqlite"))
        // status: the holder as its run recorded itself.
        let reader = try Journal(path: directory.file("link.sqlite"), create: false, readOnly: true)
        #expect(reader.runLockHolder() == LockHolder(pid: getpid(), host: host, startedAt: started))
        // flock locks belong to the open file description, so a second open in this process conflicts
        // too; the refused open reads nothing, and names the process and its start from /proc.
        link(path, directory.file("hard.sqlite"))
        for name in ["link.sqlite", "hard.sqlite", "j.sqlite", "./link.sqlite"] {
            #expect {
                _ = try Journal.openForRun(path: directory.file(name))
            } throws: { error in
                guard case .locked(_, let named?) = error as? JournalError else { return false }
                return named.pid == getpid() && named.host == host && named.startedAt.hasPrefix("20")
            }
        }
        // A second name would give the journal a second -wal: when the lock does not refuse it, this does.
        #expect {
            _ = try Journal(path: directory.file("hard.sqlite"), create: false, readOnly: true)
        } throws: { error in
            "\(error)".contains("2 names (hard links)")
        }
        unlink(directory.file("hard.sqlite"))
        first.close()
        #expect(reader.runLockHolder() == nil)
        reader.close()
        let second = try Journal.openForRun(path: directory.file("link.sqlite"))
        second.close()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["j.sqlite", "link.sqlite"])
    }

    @Test func fileThatIsNotSQLiteIsRefusedAndLeftAlone() throws {
        let directory = Workspace()
        let path = directory.file("notes.sqlite")
        let text = Data(String(repeating: "not a database\n", count: 100).utf8)
        try text.write(to: URL(fileURLWithPath: path))
        #expect {
            try Journal(path: path)
        } throws: { error in
            guard let error = error as? JournalError, case .notAJournal = error else { return false }
            return true
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == text)
    }

    @Test func journalFromANewerVersionIsRefusedNotDamaged() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        _ = try startRun(journal)
        journal.close()
        try SQLiteTool.execute(path, "PRAGMA user_version=99")
        #expect {
            try Journal(path: path)
        } throws: { error in
            guard let error = error as? JournalError, case .newerSchema(_, 99, _) = error else { return false }
            return error.description.contains("newer")
        }
    }

    @Test func reportListsItemsAndInputRejectionsWithFilters() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        let first = try admitNew(journal, profile: "p1", transaction: "1", run: run)
        let second = try admitNew(journal, profile: "p2", transaction: "2", run: run)
        try settle(journal, item: first, .restored)
        try settle(journal, item: second, .failed, code: "http_409")
        try journal.transaction { () throws(JournalError) in
            try journal.recordRejection(
                file: "in.csv", line: 7, reason: "scientific_notation", message: "m", profileId: "p3",
                originalTransactionId: "2E15", runID: run, now: Timestamp.string(Date()))
        }
        var all: [ReportRecord] = []
        try journal.forEachReportRecord(ReportFilter()) { all.append($0) }
        #expect(all.map(\.status) == [.restored, .failed, .rejected])
        #expect(all.last?.source == "in.csv:7")
        var failed: [ReportRecord] = []
        try journal.forEachReportRecord(ReportFilter(codes: ["http_409"])) { failed.append($0) }
        #expect(failed.map(\.profileId) == ["p2"])
    }
}
