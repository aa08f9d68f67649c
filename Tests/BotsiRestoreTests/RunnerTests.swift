import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite struct RunnerOutcomeTests {
    @Test func eachDocumentedReplyEndsInItsStatusAndCode() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [
            ("p-restored", "2000000000000002"), ("p-nothing", "2000000000000010"),
            ("unknown-profile", "2000000000000004"),
        ])
        let summary = try harness.run([input])
        #expect(summary.exitCode == 0)
        let restored = try #require(try harness.record("p-restored", "2000000000000002"))
        #expect(restored.status == .restored)
        #expect(restored.code == nil)
        #expect(restored.httpStatus == 200)
        #expect(restored.profileState != nil)
        #expect(restored.accessLevels?.contains("isActive") == true)
        let nothing = try #require(try harness.record("p-nothing", "2000000000000010"))
        #expect(nothing.status == .nothingToRestore)
        #expect(nothing.code == "nothing_to_restore")
        let unknown = try #require(try harness.record("unknown-profile", "2000000000000004"))
        #expect(unknown.status == .profileNotFound)
        #expect(unknown.code == "not_found")
        #expect(unknown.httpStatus == 404)
    }

    @Test func transientFaultsAreRetriedUntilEveryRowIsRestored() throws {
        let harness = try Harness { options in
            options.faultRate = 0.4
            options.faults = [.tooManyRequests, .internalError, .badGateway, .unavailable, .reset, .truncated]
            options.retryAfterSeconds = 0
            options.seed = 5
        }
        defer { harness.simulator.stop() }
        let rows = (0..<60).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { $0.maxAttempts = 20 }
        #expect(summary.exitCode == 0)
        #expect(summary.retries > 0)
        let records = try harness.records()
        #expect(records.count == 60)
        #expect(records.allSatisfy { $0.status == .restored })
        #expect(records.contains { $0.attempts > 1 })
    }

    @Test func rowsStillFailingAfterMaxAttemptsStayPendingAndTheNextRunFinishesThem() throws {
        let failing = try Harness { options in
            options.faultRate = 1
            options.faults = [.unavailable]
            options.retryAfterSeconds = 0
        }
        let input = failing.scratch.csv(rows: [("p1", "2000000000000002"), ("p2", "2000000000000004")])
        let first = try failing.run([input]) { $0.maxAttempts = 3 }
        failing.simulator.stop()
        #expect(first.exitCode == 75)
        #expect(failing.requests("p1", "2000000000000002") == 3)
        #expect(try failing.record("p1", "2000000000000002")?.status == .pending)
        #expect(try failing.record("p1", "2000000000000002")?.code == "http_503")

        let healthy = Simulator(options: SimulatorOptions())
        _ = try healthy.start()
        defer { healthy.stop() }
        var options = RunOptions()
        options.inputs = [input]
        options.journalPath = failing.journalPath
        options.baseURL = healthy.baseURL
        let second = try Runner(options: options, apiKey: Simulator.defaultKey, toolVersion: "test").run()
        #expect(second.exitCode == 0)
        #expect(try failing.records().allSatisfy { $0.status == .restored })
    }

    @Test func aStalledReplyTimesOut() throws {
        let harness = try Harness { options in
            options.faultRate = 1
            options.faults = [.stall]
            options.stallSeconds = 30
        }
        defer { harness.simulator.stop() }
        let summary = try harness.run([harness.scratch.csv(rows: [("p1", "2000000000000002")])]) { options in
            options.timeout = 0.3
            options.maxAttempts = 1
        }
        #expect(summary.exitCode == 75)
        #expect(try harness.record("p1", "2000000000000002")?.code == "timeout")
    }

    @Test func anUnknownKeyStopsTheRunWith77AndLeavesEveryRowPending() throws {
        let harness = try Harness { $0.latencyMilliseconds = 20 }
        defer { harness.simulator.stop() }
        let rows = (0..<100).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)], key: "wrong-key") { $0.concurrency = 4 }
        #expect(summary.exitCode == 77)
        #expect(harness.simulator.stats().requests <= 4)
        let records = try harness.records()
        #expect(records.allSatisfy { $0.status == .pending })
        #expect(records.contains { $0.code == "unauthorized" })
        #expect(summary.stopMessage?.contains("Bearer") == true)
    }

    @Test func noIOSSettingsStopsTheRunWith78() throws {
        let harness = try Harness { $0.mode = .noIOSSettings }
        defer { harness.simulator.stop() }
        let summary = try harness.run([harness.scratch.csv(rows: [("p1", "2000000000000002")])])
        #expect(summary.exitCode == 78)
        #expect(try harness.record("p1", "2000000000000002")?.code == "ios_settings_missing")
        #expect(try harness.record("p1", "2000000000000002")?.status == .pending)
    }

    @Test func aFailingServiceDrainsTheRetryBudgetInsteadOfBeingHammered() throws {
        let harness = try Harness { options in
            options.faultRate = 1
            options.faults = [.internalError]
            options.retryAfterSeconds = 0
        }
        defer { harness.simulator.stop() }
        let rows = (0..<400).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { $0.maxAttempts = 6 }
        #expect(summary.exitCode == 75)
        // 500 tokens at 5 per retry: at most 100 retries, instead of 400 x 5 = 2,000 without a budget.
        #expect(summary.retries <= 100)
        #expect(harness.simulator.stats().requests <= 500)
        #expect(summary.retryBudgetExhausted > 0)
    }
}

@Suite struct RunnerJournalTests {
    @Test func aRerunSendsNothingAndDuplicatesAreSentOnce() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [
            ("p1", "2000000000000002"), ("p2", "2000000000000004"), ("p1", "2000000000000002"),
        ])
        let first = try harness.run([input])
        #expect(first.duplicates == 1)
        #expect(first.requests == 2)
        #expect(harness.requests("p1", "2000000000000002") == 1)
        let second = try harness.run([input])
        #expect(second.exitCode == 0)
        #expect(second.requests == 0)
        // A finished row costs no journal write on a rerun, so its repeat is not told apart.
        #expect(second.alreadyFinished[.restored] == 3)
        #expect(harness.simulator.stats().requests == 2)
    }

    @Test func retryFailedResendsNotFoundRowsAndRefreshResendsRestoredOnes() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("unknown-1", "2000000000000002"), ("p2", "2000000000000004")])
        _ = try harness.run([input])
        _ = try harness.run([input])
        #expect(harness.requests("unknown-1", "2000000000000002") == 1)
        _ = try harness.run([input]) { $0.retryFailed = true }
        #expect(harness.requests("unknown-1", "2000000000000002") == 2)
        #expect(harness.requests("p2", "2000000000000004") == 1)
        _ = try harness.run([input]) { $0.refreshOlderThan = 0 }
        #expect(harness.requests("p2", "2000000000000004") == 2)
    }

    @Test func boundedConcurrencyAndOneRequestAtATimePerProfileAndTransaction() throws {
        let harness = try Harness { $0.latencyMilliseconds = 5 }
        defer { harness.simulator.stop() }
        // 300 rows over 20 profiles and 150 transactions: plenty of sharing both ways.
        let rows = (0..<300).map { ("profile-\($0 % 20)", String(2_000_000_000_000_002 + ($0 % 150) * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { $0.concurrency = 16 }
        #expect(summary.exitCode == 0)
        let stats = harness.simulator.stats()
        #expect(stats.maxInFlight <= 16)
        #expect(stats.maxInFlight > 1)
        #expect(stats.maxInFlightPerProfile == 1)
        #expect(stats.maxInFlightPerTransaction == 1)
    }

    @Test func inputRejectionsAreJournaledWithFileLineAndReason() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [
            ("p1", "2.00000E+15"), ("", "2000000000000002"), ("p3", "12a"), ("p4", "2000000000000004"),
        ])
        let summary = try harness.run([input])
        #expect(summary.exitCode == 0)
        #expect(summary.requests == 1)
        #expect(summary.rejectedByReason[.scientificNotation] == 1)
        #expect(summary.rejectedByReason[.missingProfileId] == 1)
        #expect(summary.rejectedByReason[.invalidTransactionId] == 1)
        let rejected = try harness.records(ReportFilter(statuses: ["rejected"]))
        #expect(
            rejected.compactMap(\.code).sorted() == [
                "invalid_transaction_id", "missing_profile_id", "scientific_notation",
            ])
        #expect(rejected.contains { $0.source.hasSuffix("in.csv:2") && $0.code == "scientific_notation" })
    }

    /// A first-day review: an export whose every id was in scientific notation ran "ok" (exit 0)
    /// every night. Every row rejected is an unusable input: 65. One row that passes: 0.
    @Test func aRunWhoseEveryRowIsRejectedExits65() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let broken = harness.scratch.csv("broken.csv", rows: [("p1", "2.00000E+15"), ("p2", "2.00000E+15")])
        let summary = try harness.run([broken])
        #expect(summary.exitCode == 65 && summary.rejectedRows == 2 && summary.requests == 0)
        #expect(summary.render(journalPath: "j").contains("every row read was rejected by the input checks"))
        let status = try #require(currentStatus(harness.journalPath)).renderText()
        #expect(
            status.contains("next      fix or re-export the input: the run's rows were all rejected ("), "\(status)")
        let mixed = harness.scratch.csv("mixed.csv", rows: [("p3", "2.00000E+15"), ("p4", "2000000000000004")])
        let fine = try harness.run([mixed])
        #expect(fine.exitCode == 0 && fine.rejectedRows == 1)
        #expect(!fine.render(journalPath: "j").contains("every row read was rejected"))
        // Read again, the broken export is as broken.
        #expect(try harness.run([broken]).exitCode == 65)
        // A shard: its own rows all rejected is 65, however many rows belong to other shards (a
        // review: every shard of a broken export exited 0). A shard with no row of its own: 0.
        let rows = (0..<12).map { ("shard-profile-\($0)", "2.0E+15") }
        let sharded = harness.scratch.csv("sharded.csv", rows: rows)
        for index in 0..<4 {
            let shard = try harness.run([sharded]) {
                $0.shardIndex = index
                $0.shardCount = 4
            }
            let owned = shard.rowsRead - shard.otherShards
            #expect(shard.exitCode == (owned > 0 ? 65 : 0), "shard \(index): \(owned) rows of its own")
        }
    }

    /// Rows a filter refused on purpose are not a broken export: a file of sandbox rows run with
    /// `--environment production` has nothing to send, and exits 0.
    @Test func rowsRefusedByAFilterAreNotABrokenExport() {
        var summary = RunSummary()
        summary.rowsRead = 3
        summary.rejectedByReason = [.wrongEnvironment: 2, .wrongBundleId: 1]
        #expect(!summary.everyRowRejected)
        // The filtered rows leave the total too: the rest all broken is a broken export (a review:
        // a sandbox row and a cut-short one with --environment production exited 0).
        summary.rejectedByReason = [.wrongEnvironment: 2, .scientificNotation: 1]
        #expect(summary.everyRowRejected)
        summary.rowsRead = 4
        #expect(!summary.everyRowRejected, "one row passed")
        summary.rowsRead = 3
        summary.rejectedByReason = [.scientificNotation: 3]
        #expect(summary.everyRowRejected)
        summary.otherShards = 1
        summary.rejectedByReason = [.scientificNotation: 2]
        #expect(summary.everyRowRejected, "two of its own rows, both broken")
        summary.otherShards = 3
        summary.rejectedByReason = [:]
        #expect(!summary.everyRowRejected, "no row of its own")
    }

    @Test func aDryRunSendsNothingAndLeavesNoJournal() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let input = harness.scratch.csv(rows: [("p1", "2000000000000002"), ("p1", "2000000000000002")])
        let summary = try harness.run([input]) { $0.dryRun = true }
        #expect(summary.wouldSend == 1)
        #expect(summary.duplicates == 1)
        #expect(harness.simulator.stats().requests == 0)
        #expect(!FileManager.default.fileExists(atPath: harness.journalPath))
    }

    @Test func plainHTTPToARemoteHostIsRefusedBeforeAnythingHappens() throws {
        let scratch = Workspace()
        var options = RunOptions()
        options.inputs = [scratch.csv(rows: [("p1", "2000000000000002")])]
        options.journalPath = scratch.file("j.sqlite")
        options.baseURL = "http://api.botsi.com"
        #expect {
            try Runner(options: options, apiKey: "k", toolVersion: "test").run()
        } throws: { error in
            (error as? RunSetupError)?.exitCode == 64
        }
        #expect(!FileManager.default.fileExists(atPath: options.journalPath))
    }

    @Test func aFileWithoutTheColumnsStopsTheRunBeforeAnyRequest() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let good = harness.scratch.csv(rows: [("p1", "2000000000000002")])
        let bad = harness.scratch.file("bad.csv")
        try "user,receipt\nu1,r1\n".write(toFile: bad, atomically: true, encoding: .utf8)
        #expect {
            try harness.run([good, bad])
        } throws: { error in
            (error as? RunSetupError)?.exitCode == 65
        }
        #expect(harness.simulator.stats().requests == 0)
    }
}
