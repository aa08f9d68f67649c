import BotsiBasics
import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A stop (SIGINT or SIGTERM) at a random moment — before the input's first byte arrives, while the
/// journal opens, while requests are in flight to a slow server, as the last reply lands — always
/// leaves an honest record (issue 18). Seeded: `STOP_SEED=n` replays one trial, `STOP_TRIALS`
/// (default 12) and `STOP_SEED_BASE` (default 1) choose the seeds; a failure prints its seed.
@Suite("a stop at any moment", .serialized)
struct StopAtAnyMomentTests {
    enum Scenario: CaseIterable {
        /// The CSV arrives on stdin after a delay: the stop may land while the input opens.
        case lateStdin
        /// Every reply takes a while: the stop lands with requests in flight.
        case slowServer
        /// A quick server: the stop may land as the run finishes.
        case quickServer
    }

    struct Trial: CustomStringConvertible {
        let seed: UInt64
        let signal: Int32
        let scenario: Scenario
        /// Milliseconds after the child started.
        let moment: Int
        let rows: Int
        /// The journal already owes rows an earlier run could not send.
        let owedFirst: Bool
        let stdinDelay: Int
        let latency: Int
        /// `--no-adaptive`: nothing paces the sends, so the client also holds requests queued behind
        /// its busy connections, which a stop takes back unsent.
        let unpaced: Bool

        init(seed: UInt64) {
            var random = SplitMix64(seed: seed)
            self.seed = seed
            signal = Bool.random(using: &random) ? SIGINT : SIGTERM
            scenario = Scenario.allCases.randomElement(using: &random)!
            rows =
                scenario == .quickServer
                ? Int.random(in: 100...800, using: &random) : Int.random(in: 20...120, using: &random)
            owedFirst = Double.random(in: 0..<1, using: &random) < 0.4
            stdinDelay = Int.random(in: 100...1500, using: &random)
            latency = scenario == .slowServer ? Int.random(in: 100...300, using: &random) : 2
            // From the first instant to a little past the run's likely end (4 requests in flight).
            let sending = scenario == .slowServer ? rows * latency / 4 : rows / 2
            let likelyEnd = 150 + sending + (scenario == .lateStdin ? stdinDelay : 0)
            moment = Int.random(in: 0...(likelyEnd * 6 / 5), using: &random)
            // Drawn last, so that each seed's other choices stay what they were.
            unpaced = Bool.random(using: &random)
        }

        var description: String {
            "seed \(seed): \(signal == SIGINT ? "SIGINT" : "SIGTERM") at \(moment) ms, \(scenario), \(rows) rows"
                + (owedFirst ? ", journal owing rows" : "")
                + (scenario == .lateStdin ? ", stdin after \(stdinDelay) ms" : ", latency \(latency) ms")
                + (unpaced ? ", --no-adaptive" : "")
        }
    }

    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["STOP_SEED"].flatMap(UInt64.init) { return [seed] }
        let base = environment["STOP_SEED_BASE"].flatMap(UInt64.init) ?? 1
        let trials = environment["STOP_TRIALS"].flatMap(UInt64.init) ?? 12
        return (0..<trials).map { base + $0 }
    }

    @Test func aStopAtAnyMomentLeavesAnHonestRecord() throws {
        // stdin is written after a delay: a child that stopped first must not take the test down.
        signal(SIGPIPE, SIG_IGN)
        var failures: [String] = []
        for seed in Self.seeds {
            let trial = Trial(seed: seed)
            let (problems, outcome) = try Self.perform(trial)
            if ProcessInfo.processInfo.environment["STOP_VERBOSE"] == "1" { print("  \(trial): \(outcome)") }
            if !problems.isEmpty {
                failures.append(
                    "\(trial):\n" + problems.map { "  ! \($0)" }.joined(separator: "\n")
                        + "\n  replay: STOP_SEED=\(seed) swift test --skip-build --filter StopAtAnyMomentTests")
            }
        }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    /// What broke, and what happened (for `STOP_VERBOSE=1`).
    static func perform(_ trial: Trial) throws -> ([String], String) {
        let workspace = Workspace()
        var problems: [String] = []
        if trial.owedFirst {
            let failing = try startFailingSimulator()
            defer { failing.stop() }
            let owed = workspace.csv(Pair.generate(8, prefix: "owed"), name: "owed.csv")
            _ = try botsi(
                runArguments([owed], workspace, failing, ["--max-attempts", "1"]), key: Simulator.defaultKey,
                in: workspace)
        }
        let before = try JournalTables.read(workspace.journal)
        let simulator = try startSimulator { $0.latencyMilliseconds = Double(trial.latency) }
        defer { simulator.stop() }
        let pairs = Pair.generate(trial.rows)
        let csv = "profileId,originalTransactionId\n" + pairs.map { "\($0.profileId),\($0.transactionId)\n" }.joined()
        let late = trial.scenario == .lateStdin
        let input = late ? "-" : workspace.write("in.csv", csv)
        let child = try Child(
            runArguments(
                late ? [input, "--format", "csv"] : [input], workspace, simulator,
                ["--concurrency", "4", "--log-format", "json"] + (trial.unpaced ? ["--no-adaptive"] : [])),
            key: Simulator.defaultKey, in: workspace, holdStdin: late)
        let started = Date()
        if late {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(trial.stdinDelay)) {
                child.closeStdin(after: Data(csv.utf8))
            }
        }
        var signalAt: Date?
        if !child.hasExited(within: Double(trial.moment) / 1000) {
            signalAt = Date()
            child.send(trial.signal)
        }
        let finished = child.wait(timeout: 60)
        let stopStatus = trial.signal == SIGINT ? ExitCode.interrupted : ExitCode.terminated
        let summary = ModelSequence.summary(finished.stderr)
        let stopped = summary?["stopCause"] as? String == "signal"
        if finished.timedOut || finished.killedBySignal {
            problems.append("the run did not exit by itself: \(tail(finished.stderr))")
            return (problems, "hung")
        }
        if stopped ? finished.status != stopStatus : ![0, 75].contains(finished.status) {
            problems.append(
                "exit \(finished.status) (stopped: \(stopped), signal sent after \(signalAt.map { Int($0.timeIntervalSince(started) * 1000) } ?? -1) ms): \(tail(finished.stderr))"
            )
        }
        if signalAt == nil && stopped { problems.append("the summary names a signal that was never sent") }
        let journalExists = FileManager.default.fileExists(atPath: workspace.journal)
        let ended =
            journalExists
            ? try JournalTables.rows(workspace.journal, "SELECT max(ended_at) FROM runs").first?[0]
                .flatMap { $0 }.flatMap(Timestamp.date) : nil
        if !stopped, let signalAt, let ended, ended.timeIntervalSince(signalAt) > 1.0 {
            problems.append(
                String(
                    format: "the signal was not honoured: the run went on to finish %.2f s after it",
                    ended.timeIntervalSince(signalAt)))
        }

        let after = try JournalTables.read(workspace.journal)
        let newRuns = (after?.runs ?? []).filter { run in !(before?.runs ?? []).contains { $0.id == run.id } }
        if let running = (after?.runs ?? []).first(where: { $0.state == "running" }) {
            problems.append("run \(running.id) is left recorded as running")
        }
        guard let record = newRuns.last, let after else {
            // Stopped while the input was still opening: nothing may be recorded.
            if !(stopped && (summary?["stopMessage"] as? String ?? "").contains("before the run began")) {
                problems.append("the run left no record, and did not say it stopped before it began")
            }
            if (before == nil) != (after == nil) || before?.items != after?.items {
                problems.append("a run that stopped before it began changed the journal")
            }
            if simulator.stats().requests > 0 { problems.append("a run that stopped before it began sent requests") }
            return (problems, "stopped before it began, exit \(finished.status)")
        }
        if newRuns.count != 1 { problems.append("the run added \(newRuns.count) run records") }
        // A run that ended by itself, stopped or not, leaves no row marked in flight: what was on the
        // wire has its reply, and what was marked or queued and not sent goes back as it was.
        let leftInFlight = after.items.values.filter { $0.status == "in_flight" }.count
        if leftInFlight > 0 { problems.append("\(leftInFlight) rows are left in flight") }
        if record.exitCode != Int64(finished.status) {
            problems.append(
                "run \(record.id) is recorded with exit \(record.exitCode ?? -1), exited \(finished.status)")
        }
        // `runs` and `status` agree with the journal.
        var worked: [String: Int] = [:]
        for item in after.items.values where item.lastRun == record.id { worked[item.status, default: 0] += 1 }
        let runsLine = try botsi(
            ["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        let line = ModelSequence.jsonObjects(runsLine.stdout).first { ($0["run"] as? Int).map(Int64.init) == record.id }
        let recorded = (line?["statuses"] as? [String: Int])?.filter { $0.value != 0 } ?? [:]
        if recorded != worked {
            problems.append("`runs` counts run \(record.id) as \(recorded); the journal holds \(worked)")
        }
        let status = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let codes = ModelSequence.jsonObjects(status.stdout).first?["codes"] as? [String: Int] ?? [:]
        var byStatus: [String: Int] = [:]
        for (key, count) in codes {
            byStatus[String(key.split(separator: "/", omittingEmptySubsequences: false)[0]), default: 0] += count
        }
        if byStatus.filter({ $0.value != 0 }) != after.statusCounts {
            problems.append("`status` counts \(byStatus); the journal holds \(after.statusCounts)")
        }
        // By the run's own record, nothing was handed to the client after the stop was decided, and
        // the stop was decided within a second of the signal.
        let outcome =
            "exit \(finished.status), \(simulator.stats().requests) requests, "
            + (stopped ? "stopped" : "finished first") + ", worked \(worked)"
        guard stopped, let signalAt else { return (problems, outcome) }
        guard let stoppedText = summary?["stoppedAt"] as? String, let stoppedAt = Timestamp.date(stoppedText) else {
            problems.append("the summary of a stopped run has no stoppedAt")
            return (problems, outcome)
        }
        let delay = stoppedAt.timeIntervalSince(signalAt)
        if delay > 1.0 { problems.append(String(format: "the stop took effect %.2f s after the signal", delay)) }
        let lateAttempts = try JournalTables.rows(
            workspace.journal,
            "SELECT count(*) FROM attempts_readable WHERE run_id = \(record.id) AND started_at > '\(stoppedText)'")
        if let count = lateAttempts.first?[0], count != "0" {
            problems.append(
                "\(count) attempts of run \(record.id) started after the stop was decided at \(stoppedText)")
        }
        // Stopped before any reply came back (by 50 ms: the run's thread may be descheduled between
        // deciding the stop and taking the queue back), the run could not have freed a connection:
        // no more went out than it had (`--concurrency 4`), whatever it had queued in the client.
        let firstReply = try JournalTables.rows(
            workspace.journal,
            "SELECT min(started_at + duration_us / 1000) FROM attempts WHERE run_id = \(record.id)"
        ).first?[0].flatMap { $0 }.flatMap(Double.init)
        if let firstReply, firstReply > stoppedAt.timeIntervalSince1970 * 1000 + 50, simulator.stats().requests > 4 {
            problems.append(
                "\(simulator.stats().requests) requests reached the server though the stop came before any reply")
        }
        return (problems, outcome + String(format: ", stop decided %.0f ms after the signal", delay * 1000))
    }
}
