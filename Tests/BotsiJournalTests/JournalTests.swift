import BotsiJournal
import Foundation
import Testing

/// A temporary directory per test, removed when the test ends.
final class TemporaryDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "botsi-journal-tests-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

private func startRun(_ journal: Journal) throws -> Int64 {
    try journal.transaction { () throws(JournalError) in
        try journal.startRun(
            startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}", inputsJSON: "[]")
    }
}

private func admit(
    _ journal: Journal, _ profile: String, _ transaction: String, run: Int64, policy: ResendPolicy = .init()
) throws -> Admission {
    try journal.transaction { () throws(JournalError) in
        try journal.admit(
            profileId: profile, originalTransactionId: transaction, source: "in.csv:2", runID: run,
            now: Timestamp.string(Date()), policy: policy)
    }
}

private func settle(_ journal: Journal, item: Int64, _ status: ItemStatus, code: String? = nil) throws {
    try journal.transaction { () throws(JournalError) in
        try journal.recordOutcome(
            itemID: item, status: status, code: code, httpStatus: 200, message: nil, now: Timestamp.string(Date()),
            profile: status == .restored ? ProfileRecord(state: "subscribed", accessLevelsJSON: "{}") : nil)
    }
}

@Suite struct JournalTests {
    @Test func createsJournalWithPrivateModeWALAndSchemaVersion() throws {
        let directory = TemporaryDirectory()
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
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let item, 0, true) = try admit(journal, "p1", "100", run: run) else {
            Issue.record("a new pair must be sent")
            return
        }
        #expect(try admit(journal, "p1", "100", run: run) == .duplicate)
        try settle(journal, item: item, .restored)
        let nextRun = try startRun(journal)
        #expect(try admit(journal, "p1", "100", run: nextRun) == .finished(.restored))
    }

    @Test func pendingAndInFlightRowsAreSentAgainAndInFlightIsRecovered() throws {
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let item, _, _) = try admit(journal, "p1", "100", run: run) else {
            Issue.record("expected send")
            return
        }
        try journal.transaction { () throws(JournalError) in
            try journal.markInFlight(itemID: item, runID: run, now: Timestamp.string(Date()))
        }
        let recovered = try journal.transaction { () throws(JournalError) in try journal.recoverInFlight() }
        #expect(recovered == 1)
        let nextRun = try startRun(journal)
        #expect(try admit(journal, "p1", "100", run: nextRun) == .send(itemID: item, attempts: 0, isNew: false))
    }

    @Test(arguments: [ItemStatus.failed, .profileNotFound, .rejected])
    func retryFailedResendsOnlyWithTheFlag(status: ItemStatus) throws {
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let item, _, _) = try admit(journal, "p", "1", run: run) else { return }
        try settle(journal, item: item, status, code: "x")
        #expect(try admit(journal, "p", "1", run: try startRun(journal)) == .finished(status))
        let policy = ResendPolicy(retryFailed: true)
        #expect(try admit(journal, "p", "1", run: try startRun(journal), policy: policy) != .finished(status))
    }

    @Test func nothingToRestoreIsNeverResentEvenWithRetryFailed() throws {
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let item, _, _) = try admit(journal, "p", "1", run: run) else { return }
        try settle(journal, item: item, .nothingToRestore, code: "nothing_to_restore")
        let policy = ResendPolicy(retryFailed: true, refreshRestoredBefore: Date().addingTimeInterval(10))
        #expect(
            try admit(journal, "p", "1", run: try startRun(journal), policy: policy) == .finished(.nothingToRestore))
    }

    @Test func refreshResendsOnlyRestoredRowsOlderThanTheCutoff() throws {
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let item, _, _) = try admit(journal, "p", "1", run: run) else { return }
        try settle(journal, item: item, .restored)
        let past = ResendPolicy(refreshRestoredBefore: Date().addingTimeInterval(-3600))
        #expect(try admit(journal, "p", "1", run: try startRun(journal), policy: past) == .finished(.restored))
        let future = ResendPolicy(refreshRestoredBefore: Date().addingTimeInterval(3600))
        if case .send = try admit(journal, "p", "1", run: try startRun(journal), policy: future) {
        } else {
            Issue.record("a restored row older than the cutoff must be resent")
        }
    }

    @Test func theRunLockBelongsToTheFileUnderEveryNameAndNamesTheHolder() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("j.sqlite")
        let first = try Journal.openForRun(path: path)
        let started = "2026-01-01T00:00:00.000Z"
        let host = ProcessInfo.processInfo.hostName
        _ = try first.transaction { () throws(JournalError) in
            try first.startRun(
                startedAt: Timestamp.date(started)!, toolVersion: "test", host: host, pid: getpid(),
                optionsJSON: "{}", inputsJSON: "[]")
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
        let directory = TemporaryDirectory()
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
        let directory = TemporaryDirectory()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        _ = try startRun(journal)
        journal.close()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, "PRAGMA user_version=99"]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        #expect {
            try Journal(path: path)
        } throws: { error in
            guard let error = error as? JournalError, case .newerSchema(_, 99, _) = error else { return false }
            return error.description.contains("newer")
        }
    }

    @Test func reportListsItemsAndInputRejectionsWithFilters() throws {
        let directory = TemporaryDirectory()
        let journal = try Journal(path: directory.file("j.sqlite"))
        let run = try startRun(journal)
        guard case .send(let first, _, _) = try admit(journal, "p1", "1", run: run),
            case .send(let second, _, _) = try admit(journal, "p2", "2", run: run)
        else { return }
        try settle(journal, item: first, .restored)
        try settle(journal, item: second, .failed, code: "http_409")
        try journal.transaction { () throws(JournalError) in
            try journal.recordRejection(
                file: "in.csv", line: 7, reason: "scientific_notation", message: "m", profileId: "p3",
                originalTransactionId: "2E15", runID: run, now: Timestamp.string(Date()))
        }
        var all: [ReportRecord] = []
        try journal.forEachReportRecord(ReportFilter()) { all.append($0) }
        #expect(all.map(\.status) == ["restored", "failed", "rejected"])
        #expect(all.last?.source == "in.csv:7")
        var failed: [ReportRecord] = []
        try journal.forEachReportRecord(ReportFilter(codes: ["http_409"])) { failed.append($0) }
        #expect(failed.map(\.profileId) == ["p2"])
    }
}
