import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// The row lifecycle across runs (issue 8, problems 3, 4, 5 and 7), through the real runner, journal
/// and client against the simulator over loopback. Ids ending in 0 answer nothing_to_restore, the
/// others restore (the simulator's rule); a profile named `unknown-…` does not exist.
@Suite struct LifecycleTests {
    private static func pairs(_ count: Int, prefix: String, from start: Int = 1) -> [(String, String)] {
        (0..<count).map { ("\(prefix)-\($0)", String(2_000_000_000_000_000 + start + $0 * 10)) }
    }

    // MARK: Owed rows (problem 3)

    @Test func pendingRowsARefusedRunLeftAreSentFirstByTheNextRunOnOtherInput() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let monday = harness.scratch.csv("monday.csv", rows: Self.pairs(3, prefix: "mon"))
        let refused = try harness.run([monday], key: "wrong-key") { $0.concurrency = 1 }
        #expect(refused.exitCode == 77)
        #expect(try harness.records().allSatisfy { $0.status == .pending })

        let tuesday = harness.scratch.csv("tuesday.csv", rows: Self.pairs(2, prefix: "tue"))
        let next = try harness.run([tuesday]) { $0.concurrency = 1 }
        #expect(next.exitCode == 0, "\(next.render(journalPath: harness.journalPath))")
        let records = try harness.records()
        #expect(records.count == 5)
        #expect(records.allSatisfy { $0.status == .restored }, "\(records.map(\.status))")
        // Owed rows first, oldest first, then the input in its order.
        #expect(
            try sendOrder(harness, run: 2) == ["mon-0", "mon-1", "mon-2", "tue-0", "tue-1"])
        #expect(next.statuses[.restored] == 5, "the run worked on the owed rows and its own")
    }

    @Test func aRunWithoutInputSendsWhatTheJournalOwesAndSaysWhenNothingIs() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: Self.pairs(4, prefix: "p"))
        #expect(try harness.run([input], key: "wrong-key").exitCode == 77)

        let owed = try harness.run([])
        #expect(owed.exitCode == 0)
        #expect(owed.requests == 4)
        #expect(try harness.records().allSatisfy { $0.status == .restored })

        let nothing = try harness.run([])
        #expect(nothing.exitCode == 0)
        #expect(nothing.requests == 0)
        let text = nothing.render(journalPath: harness.journalPath)
        #expect(text.contains("nothing owed"), "\(text)")
    }

    @Test func aRunWithoutInputOnAJournalThatDoesNotExistExits66AndCreatesNothing() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        #expect {
            try harness.run([])
        } throws: { error in
            guard let error = error as? RunSetupError else { return false }
            return error.exitCode == 66 && error.message.contains(harness.journalPath)
        }
        #expect(!FileManager.default.fileExists(atPath: harness.journalPath))
    }

    @Test func aRunWithoutInputWhoseJournalDirectoryDoesNotExistExits66Too() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let journal = harness.scratch.file("missing-directory/journal.sqlite")
        #expect {
            try harness.run([]) { $0.journalPath = journal }
        } throws: { error in
            guard let error = error as? RunSetupError else { return false }
            return error.exitCode == 66 && error.message.contains("does not exist and no input file was named")
        }
        #expect(!FileManager.default.fileExists(atPath: harness.scratch.file("missing-directory")))
    }

    @Test func retryFailedResendsTheJournalsFailuresWithoutTheirInput() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("unknown-1", "2000000000000002"), ("p2", "2000000000000004")])
        _ = try harness.run([input])
        #expect(try harness.record("unknown-1", "2000000000000002")?.status == .profileNotFound)
        let plain = try harness.run([])
        #expect(plain.requests == 0, "a plain run owes no failures")
        let retried = try harness.run([]) { $0.retryFailed = true }
        #expect(retried.requests == 1)
        #expect(harness.requests("unknown-1", "2000000000000002") == 2)
        #expect(harness.requests("p2", "2000000000000004") == 1)
    }

    @Test func aShardOwesOnlyItsOwnRows() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let rows = Self.pairs(40, prefix: "s")
        _ = try harness.run([harness.scratch.csv(rows: rows)], key: "wrong-key") { $0.concurrency = 1 }
        let mine = rows.filter { shardIndex(profileId: $0.0, shardCount: 2) == 1 }
        try #require(!mine.isEmpty && mine.count < rows.count)
        let shard = try harness.run([]) { options in
            options.shardIndex = 1
            options.shardCount = 2
        }
        #expect(shard.requests == mine.count)
        for (profile, transaction) in rows {
            let expected = mine.contains { $0 == (profile, transaction) } ? ItemStatus.restored : .pending
            #expect(try harness.record(profile, transaction)?.status == expected, "\(profile)")
        }
    }

    @Test func aPairOwedAndInTheInputIsSentOnce() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: Self.pairs(3, prefix: "p"))
        _ = try harness.run([input], key: "wrong-key")
        let again = try harness.run([input])
        #expect(again.exitCode == 0)
        #expect(harness.simulator.stats().pairs.allSatisfy { $0.requests == 1 })
    }

    // MARK: No regression without a definitive answer (problem 4)

    @Test(arguments: [RefusalKind.wrongKey, .noIOSSettings, .serverDown])
    func aResendWithoutADefinitiveAnswerLeavesFinalRowsExactlyAsTheyWere(_ kind: RefusalKind) throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: Self.pairs(3, prefix: "p", from: 0) + Self.pairs(3, prefix: "q"))
        _ = try harness.run([input])
        let before = try harness.records()
        #expect(Set(before.map(\.status)) == [.restored, .nothingToRestore])

        let refusing = try Harness { options in
            switch kind {
            case .wrongKey: options.keys = ["another-key"]
            case .noIOSSettings: options.mode = .noIOSSettings
            case .serverDown:
                options.faultRate = 1
                options.faults = [.unavailable]
                options.retryAfterSeconds = 0
            }
        }
        defer { refusing.simulator.stop() }
        var options = RunOptions()
        options.inputs = [input]
        options.journalPath = harness.journalPath
        options.baseURL = refusing.simulator.baseURL
        options.refreshOlderThan = 0
        options.maxAttempts = 2
        options.backoffBase = 0.01
        options.backoffCap = 0.02
        let summary = try Runner(options: options, apiKey: Simulator.defaultKey, toolVersion: "test").run()
        #expect(summary.requests > 0)
        let after = try harness.records()
        #expect(after.count == before.count)
        for (old, new) in zip(before, after) {
            #expect(new.status == old.status, "\(new.profileId)")
            #expect(new.code == old.code, "\(new.profileId)")
            #expect(new.httpStatus == old.httpStatus, "\(new.profileId)")
            #expect(new.profileState == old.profileState, "\(new.profileId)")
            #expect(new.accessLevels == old.accessLevels, "\(new.profileId)")
            #expect(new.restoredAt == old.restoredAt, "\(new.profileId)")
        }
        var changes: [RowChange] = []
        let journal = try Journal(path: harness.journalPath, create: false, readOnly: true)
        defer { journal.close() }
        try journal.forEachChange(since: 1, until: 2) { changes.append($0) }
        #expect(changes.isEmpty, "a resend without an answer is no change: \(changes.map(\.after.status))")
    }

    enum RefusalKind: Sendable {
        case wrongKey, noIOSSettings, serverDown
    }

    // MARK: Revisable finals (problem 5)

    @Test func refreshResendsNothingToRestoreRowsToo() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p1", "2000000000000010"), ("p2", "2000000000000002")])
        _ = try harness.run([input])
        #expect(try harness.record("p1", "2000000000000010")?.status == .nothingToRestore)
        _ = try harness.run([input]) { $0.refreshOlderThan = 3600 }
        #expect(harness.requests("p1", "2000000000000010") == 1, "answered a moment ago: not older than 1h")
        _ = try harness.run([input]) { $0.refreshOlderThan = 0 }
        #expect(harness.requests("p1", "2000000000000010") == 2)
        #expect(harness.requests("p2", "2000000000000002") == 2)
    }

    @Test func theAgeOfARowIsTheAgeOfItsLastDefinitiveAnswer() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p1", "2000000000000010"), ("p2", "2000000000000002")])
        _ = try harness.run([input])
        // Both rows were answered two days ago.
        // The journal keeps its times as milliseconds since 1970.
        let twoDaysAgo = Int64((Date().timeIntervalSince1970 - 2 * 86_400) * 1000)
        let writer = try Journal(path: harness.journalPath)
        try writer.connection.execute(
            "UPDATE items SET answered_at = \(twoDaysAgo), restored_at = \(twoDaysAgo), updated_at = \(twoDaysAgo)")
        writer.close()
        // A refresh that gets no answer (wrong key) does not make them younger...
        _ = try harness.run([], key: "wrong-key") { $0.refreshOlderThan = 0 }
        // ...so a refresh of rows older than a day still sends both.
        let refreshed = try harness.run([]) { $0.refreshOlderThan = 86_400 }
        #expect(refreshed.requests == 2)
        #expect(harness.requests("p1", "2000000000000010") == 2)
        #expect(harness.requests("p2", "2000000000000002") == 2)
    }

    // MARK: A dry run writes nothing (problem 6)

    @Test func aDryRunListsOwedRowsOfAnOlderJournalWithoutMigratingIt() throws {
        let scratch = Workspace()
        let path = scratch.file("v2.sqlite")
        let connection = try SQLiteConnection(path: path)
        try connection.execute(Schema.migrations[0])
        try connection.execute(Schema.migrations[1])
        try connection.execute(
            """
            INSERT INTO runs (started_at, tool_version, host, pid, options) VALUES ('2026-01-01T00:00:00.000Z', '0.1', 'h', 1, '{}');
            INSERT INTO items (profile_id, original_transaction_id, status, code, first_source, last_source, first_run,
                last_run, created_at, updated_at)
            VALUES ('p1', '2000000000000002', 'pending', 'unauthorized', 'in.csv:2', 'in.csv:2', 1, 1,
                '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
            PRAGMA application_id = \(Schema.applicationID);
            PRAGMA user_version = 2;
            """)
        connection.close()
        var options = RunOptions()
        options.journalPath = path
        options.baseURL = "http://127.0.0.1:9"
        options.dryRun = true
        let summary = try Runner(options: options, apiKey: "k", toolVersion: "test").run()
        #expect(summary.exitCode == 0)
        #expect(summary.wouldSend == 1)
        let after = try SQLiteConnection(path: path)
        defer { after.close() }
        #expect(try after.scalarInt("PRAGMA user_version") == 2)
        #expect(try after.scalarInt("SELECT count(*) FROM runs") == 1)
    }

    // MARK: Counts from the journal (problem 7)

    @Test(arguments: [StopKind.signal, .window, .failureThreshold, .refusedKey])
    func theSummaryAndTheRunsLineCountTheSameRowsAsTheJournal(_ kind: StopKind) throws {
        let harness = try Harness { options in
            options.latencyMilliseconds = 15
            if kind == .failureThreshold {
                options.faultRate = 0.7
                options.faults = [.internalError]
                options.retryAfterSeconds = 0
            }
        }
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: Self.pairs(3000, prefix: "c"))
        var options = RunOptions()
        options.inputs = [input]
        options.journalPath = harness.journalPath
        options.baseURL = harness.simulator.baseURL
        options.concurrency = 4
        options.backoffBase = 0.01
        options.backoffCap = 0.02
        options.maxAttempts = 2
        switch kind {
        case .window: options.deadline = Date().addingTimeInterval(0.6)
        case .failureThreshold:
            options.minSample = 20
            options.maxFailureRate = 30
        default: break
        }
        let key = kind == .refusedKey ? "wrong-key" : Simulator.defaultKey
        let runner = Runner(options: options, apiKey: key, toolVersion: "test")
        if kind == .signal {
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.6) { runner.requestStop(signal: SIGINT) }
        }
        let summary = try runner.run()
        #expect(summary.stopMessage != nil, "the run was meant to stop early")
        var journalCounts: [ItemStatus: Int] = [:]
        for record in try harness.records() { journalCounts[record.status, default: 0] += 1 }
        #expect(summary.statuses == journalCounts)
        #expect(summary.pending == (journalCounts[.pending] ?? 0))
        let journal = try Journal(path: harness.journalPath, create: false, readOnly: true)
        defer { journal.close() }
        let lines = RunLine.make(
            runs: try journal.runs(), attemptOutcomes: try journal.attemptOutcomesByRun(), holder: nil, now: Date())
        #expect(
            lines.last?.statuses == Dictionary(uniqueKeysWithValues: journalCounts.map { ($0.key.rawValue, $0.value) }))
    }

    enum StopKind: Sendable {
        case signal, window, failureThreshold, refusedKey
    }

    // MARK: Helpers

    /// Profile ids in the order their first attempt in `run` was made.
    private func sendOrder(_ harness: Harness, run: Int64) throws -> [String] {
        let journal = try Journal(path: harness.journalPath, create: false, readOnly: true)
        defer { journal.close() }
        let statement = try journal.connection.prepare(
            """
            SELECT i.profile_id FROM attempts a JOIN items i ON i.id = a.item_id
            WHERE a.run_id = ? ORDER BY a.id
            """)
        try statement.reset(.int(run))
        var order: [String] = []
        while try statement.step() { order.append(statement.text(0) ?? "") }
        return order
    }
}
