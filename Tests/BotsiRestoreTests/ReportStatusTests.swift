import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// The status a `status` command would show now, or nil while the journal does not exist yet.
func currentStatus(_ path: String) -> StatusReport? {
    guard let journal = try? Journal(path: path, create: false, readOnly: true) else { return nil }
    defer { journal.close() }
    let now = Date()
    // As `status` reads it: the lock first, so that a live run's attempts are not walked.
    let holder = journal.runLockHolder()
    guard
        let snapshot = try? journal.snapshot(
            recentSince: now.addingTimeInterval(-StatusReport.recentWindow), runLockHeld: holder != nil)
    else { return nil }
    return StatusReport(journalPath: path, snapshot: snapshot, holder: holder, now: now)
}

@Suite struct ReportStatusTests {
    /// A reviewer: after a stop that needs a fix first (a refused key), the summary said so and
    /// `status`'s next line gave the command alone.
    @Test func theNextLineSaysWhatToFixFirst() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = directory.csv("in.csv", rows: [("p1", "2000000000000011"), ("p2", "2000000000000021")])
        let journal = directory.file("journal.sqlite")
        let summary = try runJob([input], journal: journal, baseURL: simulator.baseURL, key: "not-the-key") {
            $0.keyFile = "/etc/botsi/key"
            $0.rate = 50
        }
        #expect(summary.stopCause == .unauthorized)
        let text = try #require(currentStatus(journal)).renderText()
        let next = try #require(text.split(separator: "\n").first { $0.hasPrefix("next ") }, "\(text)")
        #expect(next.contains("next      fix the key first ("), "\(next)")
        #expect(next.contains("; then send the 2 pending rows with: botsi-restore run"), "\(next)")
        // The run's key file and pace, as its summary's command has them (a review: status had neither).
        #expect(next.contains(" --key-file /etc/botsi/key ") && next.contains(" --rate 50"), "\(next)")
        #expect(summary.nextCommand.map { next.hasSuffix($0) } == true, "one command: \(next)")
    }

    /// A merged journal whose only owed work is held rows: releasing them on the copy would leave
    /// the shard journal holding them, so the advice points at the shard journals there too.
    @Test func heldRowsOfAMergedJournalAreReleasedThroughTheShardJournals() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let journal = directory.file("journal.sqlite")
        for (index, profile) in ["p1", "p2"].enumerated() {
            let input = directory.csv("in\(index).csv", rows: [(profile, "2000000000000011")])
            _ = try runJob([input], journal: journal, baseURL: simulator.baseURL) { $0.onConflict = .hold }
        }
        let status = try #require(currentStatus(journal))
        #expect(status.renderText().contains("--release-held"), "\(status.renderText())")
        var snapshot = status.snapshot
        snapshot.mergedFrom = ["/srv/job/s0.sqlite", "/srv/job/s1.sqlite"]
        let merged = StatusReport(journalPath: journal, snapshot: snapshot, holder: nil, now: Date()).renderText()
        let next = try #require(merged.split(separator: "\n").first { $0.hasPrefix("next ") }, "\(merged)")
        #expect(!next.contains("--release-held"), "\(next)")
        #expect(next.contains("botsi-restore status --journal /srv/job/s1.sqlite"), "\(next)")
    }

    /// The morning after a run the pacer slowed down (Apple's sandbox allows 5 requests/s), `status`
    /// says so as its summary did: it showed "24 retries" and no word of why.
    @Test func statusSaysTheRunWasThrottledAsItsSummaryDid() throws {
        let directory = Workspace()
        let simulator = try startSimulator { $0.limitRate = 10 }
        defer { simulator.stop() }
        let rows = (0..<40).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10 + 1)) }
        let input = directory.csv("in.csv", rows: rows)
        let journal = directory.file("journal.sqlite")
        let summary = try runJob([input], journal: journal, baseURL: simulator.baseURL)
        try #require(summary.throttleEvents > 0, "the run was never throttled: \(summary.render(journalPath: journal))")
        let status = try #require(currentStatus(journal))
        let times = summary.throttleEvents == 1 ? "1 time" : "\(summary.throttleEvents) times"
        #expect(
            status.renderText().contains("\nthrottled \(times) by 429/503 replies: the pacer slowed down\n"),
            "\(status.renderText())")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(status.renderJSON().utf8)) as? [String: Any])
        #expect(object["throttleEvents"] as? Int == summary.throttleEvents, "\(object)")
    }

    @Test func statusReadsAJournalWhileARunWritesIt() throws {
        let directory = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 100 }
        let rows = (0..<60).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10 + 1)) }
        let input = directory.csv("in.csv", rows: rows)
        let journal = directory.file("journal.sqlite")
        let finished = DispatchSemaphore(value: 0)
        let exitCode = Mutex<Int32?>(nil)
        let baseURL = simulator.baseURL
        DispatchQueue.global().async {
            let summary = try? runJob([input], journal: journal, baseURL: baseURL) { $0.concurrency = 2 }
            exitCode.withLock { $0 = summary?.exitCode }
            finished.signal()
        }
        // Poll until the run has journaled some attempts but not its end (a sanity limit only).
        var seenLive: StatusReport?
        let deadline = Date().addingTimeInterval(60)
        while seenLive == nil && Date() < deadline && exitCode.withLock({ $0 }) == nil {
            if let status = currentStatus(journal), status.snapshot.activity.requests > 0,
                status.snapshot.latestRun?.endedAt == nil
            {
                seenLive = status
            } else {
                usleep(20_000)
            }
        }
        finished.wait()
        #expect(exitCode.withLock { $0 } == 0)
        let live = try #require(seenLive, "the run ended before status saw it running")
        #expect(live.liveness == .running)
        #expect(live.isAlive)
        #expect(live.holder?.pid == getpid())
        // A review: 0.0/s until the run's first 5-s sample, though requests were journaled.
        #expect((live.rate ?? 0) > 0, "the live rate: \(String(describing: live.rate))")
        #expect(live.renderText().contains("running, alive"))

        let after = try #require(currentStatus(journal))
        #expect(after.liveness == .ended)
        #expect(!after.isAlive)
        #expect(after.snapshot.itemCount(status: .restored) == 60)
        #expect(after.snapshot.activity.requests == 60)
        #expect(after.etaSeconds == nil)
        let text = after.renderText()
        #expect(text.contains("run       1 of 1: finished, exit 0"))
        #expect(text.contains("restored 60"))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(after.renderJSON().utf8)) as? [String: Any])
        #expect(json["liveness"] as? String == "ended")
        #expect((json["statuses"] as? [String: Int])?["restored"] == 60)
        #expect((json["run"] as? [String: Any])?["exitCode"] as? Int == 0)
    }

    /// A batch that no send needs on disk still commits within `ActiveRun.batchAge`: three slots
    /// hold never-ending replies and the last row's reply comes after them, so no mark follows it
    /// and nothing else would commit the batch it is written in; it must reach the journal (for
    /// readers, and safe from a kill) all the same, not wait for the timeouts.
    @Test func aReplyThatNoSendFollowsReachesTheJournalWhileTheOtherSlotsHang() throws {
        let directory = Workspace()
        let hanging = (0..<3).map { String(2_000_000_000_000_101 + $0 * 10) }
        let last = "2000000000000141"
        let simulator = try startSimulator { options in
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: hanging.map {
                    SimulatorScenario.FixedReply(
                        originalTransactionId: $0, kind: .neverEndingBody, intervalMilliseconds: 100)
                })
        }
        defer { simulator.stop() }
        let rows = (hanging + [last]).enumerated().map { ("profile-\($0.offset)", $0.element) }
        let input = directory.csv("in.csv", rows: rows)
        let journal = directory.file("journal.sqlite")
        let finished = DispatchSemaphore(value: 0)
        let baseURL = simulator.baseURL
        DispatchQueue.global().async {
            _ = try? runJob([input], journal: journal, baseURL: baseURL) { options in
                options.concurrency = 4
                options.timeout = 4
                options.maxAttempts = 1
            }
            finished.signal()
        }
        defer { finished.wait() }
        let deadline = Date().addingTimeInterval(3)
        while simulator.stats().requests < 4 && Date() < deadline { usleep(10_000) }
        try #require(simulator.stats().requests == 4, "every row should be sent before the 4 s timeout")
        usleep(500_000)
        try #require(simulator.stats().inFlight == 3, "the three never-ending replies still hold their slots")
        #expect(currentStatus(journal)?.snapshot.activity.requests == 1)
    }

    @Test func aRunWithNoEndAndNoLockHolderIsReportedAsKilled() throws {
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let run = try builder.startRun()
        try builder.attempt("p1", run: run, outcome: "restored", access: levels(true))
        try builder.attempt("p2", run: run, outcome: "retry", code: "timeout")
        builder.journal.close()

        let status = try #require(currentStatus(path))
        #expect(status.liveness == .vanished)
        // p2's one attempt was answered "retry": a first attempt, not a resend.
        #expect(status.retries == 0)
        #expect(status.renderText().contains("ended without a record"))
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        let lines = RunLine.make(
            runs: try journal.runs(), attemptOutcomes: try journal.attemptOutcomesByRun(), holder: nil, now: Date())
        #expect(lines.count == 1)
        #expect(lines[0].state == "killed")
        #expect(lines[0].countsFromAttempts)
        #expect(lines[0].statuses == ["restored": 1])
        #expect(lines[0].requests == 2)
        // Counted as its summary would have: p2 waits out a backoff, pending; no resend was made.
        let counted = RunLine.make(
            runs: try journal.runs(), attemptOutcomes: try journal.attemptOutcomesByRun(),
            unrecorded: try RunLine.Unrecorded(journal, runs: try journal.runs(), holder: nil), holder: nil, now: Date()
        )
        #expect(counted[0].statuses == ["restored": 1, "pending": 1])
        #expect(counted[0].requests == 2)
        #expect(counted[0].retries == 0)
    }

    @Test func runsListsEachRunWithItsCountsAndExitCode() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let journal = directory.file("journal.sqlite")
        let input = directory.csv("in.csv", rows: [("p1", "2000000000000002"), ("p2", "2000000000000010")])
        _ = try runJob([input], journal: journal, baseURL: simulator.baseURL)
        let more = directory.csv("more.csv", rows: [("p3", "2000000000000004"), ("unknown-4", "2000000000000006")])
        _ = try runJob([more], journal: journal, baseURL: simulator.baseURL)

        let opened = try Journal(path: journal, create: false, readOnly: true)
        defer { opened.close() }
        let lines = RunLine.make(
            runs: try opened.runs(), attemptOutcomes: try opened.attemptOutcomesByRun(), holder: nil, now: Date())
        #expect(lines.map(\.state) == ["finished", "finished"])
        #expect(lines.map(\.exitCode) == [0, 0])
        #expect(lines[0].statuses == ["restored": 1, "nothing_to_restore": 1])
        #expect(lines[1].statuses == ["restored": 1, "profile_not_found": 1])
        #expect(lines[1].inputs == [more])
        #expect(lines.allSatisfy { !$0.countsFromAttempts && $0.durationSeconds != nil })

        var table = ""
        RunsWriter.write(lines, format: .table) { table += $0 }
        let tableLines = table.split(separator: "\n")
        #expect(tableLines.count == 4)
        #expect(tableLines[0].hasPrefix("run  started"))
        var jsonl = ""
        RunsWriter.write(lines, format: .jsonl) { jsonl += $0 }
        let objects = try jsonl.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["run"] as? Int } == [1, 2])
        #expect(objects.map { $0["exitCode"] as? Int } == [0, 0])
    }
}
