import BotsiBasics
import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Kills and signals. Serialized: each of these loads the machine, and two at once would only slow
/// both down.
@Suite("kill -9, signals and the run lock", .serialized)
struct CrashTests {
    @Test func aRunKilledMidwayIsFinishedByTheNextWithoutResendingFinishedRows() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let rows = Pair.generate(3000)
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "32"])

        let child = try Child(arguments, key: Simulator.defaultKey, in: workspace)
        let started = Date()
        let reachedMidway = eventually(timeout: 60) {
            guard child.isRunning else { return true }
            let finals = JournalView.read(workspace.journal)?.finalPairs.count ?? 0
            return (finals > 0 && Date().timeIntervalSince(started) >= 1) || finals >= rows.count / 2
        }
        child.send(SIGKILL)
        let killed = child.wait(timeout: 30)
        #expect(reachedMidway, "no row became final within 60 s")
        try #require(
            killed.killedBySignal && killed.status == SIGKILL,
            "the run ended by itself (\(killed.status)) before it could be killed: \(killed.stderr)")
        simulator.settle()
        let atKill = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(atKill.integrity == "ok")
        let finalAtKill = atKill.finalPairs
        let inFlightAtKill = atKill.pairs { $0 == "in_flight" }.count
        let requestsAtKill = simulator.requestsByPair()
        #expect(!finalAtKill.isEmpty && finalAtKill.count < rows.count)

        let rerun = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(rerun.status == 0 && !rerun.killedBySignal, "stderr: \(rerun.stderr)")

        let after = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(after.integrity == "ok")
        #expect(after.finalPairs == Set(rows), "\(rows.count - after.finalPairs.count) rows are not final")
        let requests = simulator.requestsByPair()
        let resent = finalAtKill.filter { requests[$0] != requestsAtKill[$0] }.sorted { $0.profileId < $1.profileId }
        #expect(resent.isEmpty, "rows final before the kill were sent again: \(resent.prefix(10))")
        let neverSent = rows.filter { (requests[$0] ?? 0) == 0 }
        #expect(neverSent.isEmpty, "rows never sent: \(neverSent.prefix(10))")
        let total = simulator.stats().requests
        print(
            "kill -9 mid-way: \(finalAtKill.count) of \(rows.count) rows final at the kill, \(inFlightAtKill) in flight;"
                + " \(total - rows.count) requests repeated after the rerun (\(total) for \(rows.count) rows)")
    }

    /// After a `kill -9`, `runs` counts the killed run's rows as the journal holds them (pending and
    /// in flight among them), and the command `status` advises, run exactly as printed, reads the
    /// input the run never finished and finishes every row (issue 19, items 2 and 3).
    @Test func afterAKillTheAdvisedCommandFinishesTheInputAndRunsCountsTheKilledRun() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let rows = Pair.generate(6000)
        // Two rows the input checks refuse, read long before the kill: `runs` counts them too.
        let input = workspace.csv(
            "in.csv",
            rows: [("", "2000000000000001"), ("p-bad", "not-a-number")] + rows.map { ($0.profileId, $0.transactionId) })
        let child = try Child(
            runArguments([input], workspace, simulator, ["--concurrency", "8"]), key: Simulator.defaultKey,
            in: workspace)
        let working = eventually(timeout: 60) { (JournalView.read(workspace.journal)?.finalPairs.count ?? 0) >= 100 }
        child.send(SIGKILL)
        let killed = child.wait(timeout: 30)
        try #require(working && killed.killedBySignal, "the run was not killed mid-way: \(killed.stderr)")
        let atKill = try #require(try JournalTables.read(workspace.journal))
        let killedRun = try #require(atKill.runs.last)
        var leftByIt: [String: Int] = [:]
        // Its rows in flight count as pending: what the next run's start makes them.
        for item in atKill.items.values where item.lastRun == killedRun.id {
            leftByIt[item.status == "in_flight" ? "pending" : item.status, default: 0] += 1
        }
        #expect(leftByIt["pending", default: 0] > 0, "\(leftByIt)")
        let runs = try botsi(["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        let line = ModelSequence.jsonObjects(runs.stdout).last
        #expect((line?["statuses"] as? [String: Int])?.filter { $0.value != 0 } == leftByIt, "\(runs.stdout)")
        #expect(line?["rejectedInput"] as? Int == 2, "\(runs.stdout)")

        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        let next = try #require(
            status.stdout.split(separator: "\n").first { $0.hasPrefix("next") }, "no advice: \(status.stdout)")
        let command = try #require(next.range(of: "with: ").map { String(next[$0.upperBound...]) })
        #expect(command.contains(input), "the advice forgets the input: \(command)")
        let binary = try #require(Locations.binary)
        let advised = try Child(
            ["-c", "exec " + binary + command.dropFirst("botsi-restore".count)], key: Simulator.defaultKey,
            in: workspace, executable: "/bin/sh")
        let finished = advised.wait(timeout: 120)
        #expect(finished.status == 0, "\(finished.stderr)")
        let after = try #require(JournalView.read(workspace.journal))
        #expect(after.finalPairs == Set(rows), "\(rows.count - after.finalPairs.count) rows are not final")
    }

    /// `run … 2>&1 | head -1` (or a `tee` that the same Ctrl-C ended): the reader is gone after the
    /// first line, and the run's next write must not kill it with SIGPIPE half-way (it left rows
    /// in flight, recorded as killed): it finishes every row and records its end.
    @Test func aRunWhoseOutputReaderIsGoneFinishesAndRecordsItsEnd() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 5 }
        defer { simulator.stop() }
        let rows = Pair.generate(600)
        let arguments = runArguments(
            [workspace.csv(rows)], workspace, simulator, ["--rate", "200", "--log-interval", "1s"])
        let binary = try #require(Locations.binary)
        let quoted = ([binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
        let script = quoted.joined(separator: " ") + " 2>&1 | head -1"
        let child = try Child(["-c", script], key: Simulator.defaultKey, in: workspace, executable: "/bin/sh")
        let finished = child.wait(timeout: 120)
        #expect(finished.status == 0, "\(finished.stdout) \(finished.stderr)")
        let runs = try botsi(["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        let line = ModelSequence.jsonObjects(runs.stdout).last
        #expect(line?["state"] as? String == "finished" && line?["exitCode"] as? Int == 0, "\(runs.stdout)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
    }

    @Test func twentyKillsAtRandomMomentsNeverResendAFinishedRow() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.latencyMilliseconds = 20
            options.jitterMilliseconds = 10
            options.faultRate = 0.1
            options.faults = [.internalError, .unavailable, .reset]
            options.retryAfterSeconds = 0
            options.seed = 5
        }
        defer { simulator.stop() }
        let rows = Pair.generate(5000, prefix: "loop")
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "16"])
        var random = SplitMix64(seed: 20_250_101)
        // What each row's request count was when the journal first showed it final.
        var frozen: [Pair: Int] = [:]
        var kills = 0
        var endedBeforeTheKill = 0

        var inFlightAtKills = 0
        for _ in 0..<20 {
            let child = try Child(arguments, key: Simulator.defaultKey, in: workspace)
            let moment = Double.random(in: 0.1...0.6, using: &random)
            if child.hasExited(within: moment) {
                endedBeforeTheKill += 1
            } else {
                child.send(SIGKILL)
            }
            let ended = child.wait(timeout: 30)
            if ended.killedBySignal {
                #expect(ended.status == SIGKILL)
                kills += 1
            } else {
                #expect(ended.status == 0, "a run ended by itself with \(ended.status): \(ended.stderr)")
            }
            simulator.settle()
            // Killed before it created the journal: nothing to look at yet.
            guard let view = JournalView.read(workspace.journal, integrity: true) else { continue }
            #expect(view.integrity == "ok")
            let requests = simulator.requestsByPair()
            let finalPairs = view.finalPairs
            inFlightAtKills += view.pairs { $0 == "in_flight" }.count
            let disturbed = frozen.filter { requests[$0.key] != $0.value || !finalPairs.contains($0.key) }
            #expect(
                disturbed.isEmpty,
                "\(disturbed.count) rows final at an earlier kill were sent again or lost their outcome, e.g. \(disturbed.keys.prefix(5))"
            )
            for pair in finalPairs where frozen[pair] == nil {
                frozen[pair] = requests[pair] ?? 0
                #expect((requests[pair] ?? 0) > 0, "\(pair) is final without a request")
            }
        }
        #expect(kills + endedBeforeTheKill == 20)

        let final = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(final.status == 0 && !final.killedBySignal, "stderr: \(final.stderr)")
        let after = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(after.integrity == "ok")
        #expect(after.finalPairs == Set(rows), "\(rows.count - after.finalPairs.count) rows are not final")
        let requests = simulator.requestsByPair()
        let resent = frozen.filter { requests[$0.key] != $0.value }.keys.sorted { $0.profileId < $1.profileId }
        #expect(resent.isEmpty, "rows final before a kill were sent again: \(resent.prefix(10))")
        let neverSent = rows.filter { (requests[$0] ?? 0) == 0 }
        #expect(neverSent.isEmpty, "rows never sent: \(neverSent.prefix(10))")
        // A request the journal never recorded as an attempt is one whose outcome a kill lost: its
        // row was sent again by a later run.
        let total = simulator.stats().requests
        print(
            "crash loop: \(kills) kills survived (\(endedBeforeTheKill) runs ended before their kill),"
                + " \(total - after.attempts) requests repeated (\(total) requests, \(after.attempts) journaled"
                + " attempts, \(rows.count) rows; \(inFlightAtKills) rows marked in flight at the kills,"
                + " \(frozen.count) rows final before the last kill)")
        #expect(kills >= 10, "too few runs were still working when killed: the loop proves little")
    }

    @Test func aSecondRunOnTheSameJournalIsRefusedAndNamesTheFirst() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 200 }
        defer { simulator.stop() }
        let arguments = runArguments(
            [workspace.csv(Pair.generate(2000))], workspace, simulator, ["--concurrency", "2"])
        let first = try Child(arguments, key: Simulator.defaultKey, in: workspace)
        defer {
            first.send(SIGKILL)
            _ = first.wait(timeout: 30)
        }
        // A run sends only once it holds the lock (on the journal file itself).
        let locked = eventually(timeout: 30) { simulator.stats().requests > 0 }
        try #require(locked, "the first run never sent a request: \(first.stderrSoFar)")
        try #require(first.isRunning)

        let second = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 75, "stderr: \(second.stderr)")
        #expect(second.stderr.contains("pid \(first.pid)"), "stderr: \(second.stderr)")
        #expect(second.stderr.contains(ProcessInfo.processInfo.hostName), "no host: \(second.stderr)")
        #expect(second.stderr.contains("started"), "no start time: \(second.stderr)")
        #expect(first.isRunning, "the refused run disturbed the first")
        first.send(SIGKILL)
        _ = first.wait(timeout: 30)
        #expect(try recordedRuns(workspace.journal).count == 1, "the refused run recorded itself in the journal")
    }

    @Test(arguments: zip([SIGTERM, SIGINT], [Int32(143), Int32(130)]))
    func aSignalDrainsInFlightRequestsAndExits(signal: Int32, expectedStatus: Int32) throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 150 }
        defer { simulator.stop() }
        let rows = Pair.generate(1000)
        let arguments = runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "8"])
        let child = try Child(arguments, key: Simulator.defaultKey, in: workspace)
        let working = eventually(timeout: 60) {
            (JournalView.read(workspace.journal)?.finalPairs.count ?? 0) >= 16 && simulator.stats().inFlight > 0
        }
        child.send(signal)
        let ended = child.wait(timeout: 60)
        try #require(working, "the run never got going: \(ended.stderr)")
        #expect(ended.status == expectedStatus && !ended.killedBySignal, "stderr: \(ended.stderr)")
        #expect(ended.stderr.contains("stopping"), "stderr: \(ended.stderr)")
        #expect(ended.stderr.contains("run stopped after"), "no summary after the drain: \(ended.stderr)")

        simulator.settle()
        let journal = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(journal.integrity == "ok")
        #expect(journal.pairs { $0 == "in_flight" }.isEmpty, "rows left in flight after a drain")
        // Drained: every request that went out has its outcome journaled.
        let sent = Set(simulator.requestsByPair().keys)
        let unrecorded = sent.subtracting(journal.finalPairs)
        #expect(unrecorded.isEmpty, "sent but not final after the drain: \(unrecorded.prefix(10))")
        #expect(journal.finalPairs.count < rows.count, "the run finished before the signal: nothing was drained")
        #expect(!journal.pairs { $0 == "pending" }.isEmpty)
        let run = try #require(try recordedRuns(workspace.journal).last)
        #expect(run.exitCode == Int(expectedStatus) && run.endedAt != nil, "the journal's run record: \(run)")
    }

    @Test(arguments: zip([SIGTERM, SIGINT], [Int32(143), Int32(130)]))
    func aSecondSignalExitsAtOnceAndTheJournalStaysSound(signal: Int32, expectedStatus: Int32) throws {
        let workspace = Workspace()
        // Replies that take 5 s: a drain would wait for them, an immediate exit does not.
        let slow = try startSimulator { $0.latencyMilliseconds = 5000 }
        defer { slow.stop() }
        let rows = Pair.generate(100)
        let input = workspace.csv(rows)
        let child = try Child(
            runArguments([input], workspace, slow, ["--concurrency", "8"]), key: Simulator.defaultKey, in: workspace)
        let inFlight = eventually(timeout: 60) { slow.stats().inFlight >= 8 }
        child.send(signal)
        // A repeat within half a second is the same stop (a process group's and a wrapper's).
        usleep(100_000)
        child.send(signal)
        usleep(900_000)
        #expect(child.isRunning, "a repeat of the first signal ended the drain")
        child.send(signal)
        let ended = child.wait(timeout: 60)
        try #require(inFlight, "requests never went out: \(ended.stderr)")
        #expect(ended.status == expectedStatus && !ended.killedBySignal, "stderr: \(ended.stderr)")
        #expect(!ended.stderr.contains("run stopped after"), "the run drained instead of exiting: \(ended.stderr)")
        let journal = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(journal.integrity == "ok")

        let fast = try startSimulator()
        defer { fast.stop() }
        let rerun = try botsi(runArguments([input], workspace, fast), key: Simulator.defaultKey, in: workspace)
        #expect(rerun.status == 0, "stderr: \(rerun.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
    }

    private func recordedRuns(_ path: String) throws -> [RunRecord] {
        let journal = try Journal(path: path, create: false, readOnly: true)
        defer { journal.close() }
        return try journal.runs()
    }
}
