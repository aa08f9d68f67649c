import Foundation

/// The known ways today's code breaks the contract: the numbered problems of issue 8, and what
/// this test found besides. `MODEL_SKIP` leaves out the step kinds and invariants of each.
enum Problem: String, CaseIterable, Comparable {
    case reportOverJournal = "1"
    case lockBySpelling = "2"
    case strandedPending = "3"
    case regression = "4"
    case nothingNeverRevisited = "5"
    case dryRunPreflight = "6"
    case counts = "7"
    case words = "8"

    var label: String { Int(rawValue) != nil ? "problem \(rawValue)" : rawValue }

    static func < (left: Problem, right: Problem) -> Bool {
        allCases.firstIndex(of: left)! < allCases.firstIndex(of: right)!
    }

    /// `3,4`, or `known` for all of them.
    static func parse(_ text: String) -> Set<Problem> {
        if text == "known" { return Set(allCases) }
        return Set(text.split(separator: ",").compactMap { Problem(rawValue: $0.trimmingCharacters(in: .whitespaces)) })
    }
}

/// A broken rule, tagged with the known problem it belongs to (nil: none of them).
struct Violation: CustomStringConvertible {
    let problem: Problem?
    let text: String

    init(_ problem: Problem?, _ text: String) {
        self.problem = problem
        self.text = text
    }

    var description: String { "[\(problem?.label ?? "new")] " + text }
}

/// The reference model of issue 8's row lifecycle contract (its rules R1-R7; docs/lifecycle.md),
/// written from the contract alone as plain tables over the journal's rows. It never calls the
/// production code: it says which rows a run must and may send, and which states a row may be in
/// after a run given what the simulator saw.
struct ModelTable {
    static let finalStatuses: Set<String> = [
        "restored", "nothing_to_restore", "profile_not_found", "rejected", "failed",
    ]
    static let owedStatuses: Set<String> = ["pending", "in_flight"]
    /// Added to what is owed by `--retry-failed`.
    static let resendableStatuses: Set<String> = ["failed", "profile_not_found", "rejected"]
    /// Added by `--refresh-older-than D` when the last definitive answer is older than D.
    static let refreshableStatuses: Set<String> = ["restored", "nothing_to_restore"]

    /// Problems left out: their rules are relaxed to what today's code does.
    let skip: Set<Problem>
    /// The shard (of 2) each profile hashes to, learned once per test (see `ShardCalibration`).
    let shardOf: [String: Int]

    /// R1: what a run works on.
    struct Selection {
        /// Owed rows of the journal the run selects (in its shard).
        var owed: Set<Pair> = []
        /// Pairs of its input the journal does not hold yet (in its shard).
        var new: Set<Pair> = []
        /// What the run may send: nothing else.
        var may: Set<Pair> { owed.union(new) }
        /// What an unstopped run in an answering world must send.
        var must: Set<Pair> = []
        /// Why each row of `owed` is owed, for messages.
        var reasons: [Pair: String] = [:]
    }

    /// An input a run named is owed the rest of its rows until a run reads it to the end. The
    /// latest run that names an input says whether it was read to the end; a run that recorded no
    /// inputs (killed: it never recorded its end) read none of those it named; a run with no input
    /// files reads nothing, so it changes nothing. An input is its absolute path within its shard
    /// (shard 1/2 does not read shard 0/2's half); standard input is left out (no later run can read
    /// the same bytes again). In the order runs first named them, as the run named them. A run
    /// given `--forget-input PATH` ends what the runs before it left unread of PATH (its recorded
    /// path: PATH as typed or resolved, never the name another run typed), in every shard.
    static func unreadInputs(_ runs: [JournalTables.Run]) -> [String] {
        var order: [String] = []
        var latest: [String: (path: String, recorded: String, unread: Bool)] = [:]
        for run in runs {
            for (key, input) in latest
            where run.forgetPaths.contains(input.recorded) {
                latest[key]?.unread = false
            }
            let complete =
                run.inputs.isEmpty ? run.namedInputs.map { _ in false } : run.inputs.map(\.complete)
            for (index, typed) in run.namedInputs.enumerated() where typed != "-" && index < complete.count {
                let recorded = run.namedPaths?[index] ?? typed
                let key = recorded + "#" + run.shard
                if latest[key] == nil { order.append(key) }
                latest[key] = (typed, recorded, !complete[index])
            }
        }
        return order.compactMap { latest[$0].flatMap { $0.unread ? $0.path : nil } }
    }

    func inShard(_ pair: Pair, _ mode: RunMode) -> Bool {
        guard let shard = mode.shard else { return true }
        return shardOf[pair.profileId] == shard
    }

    /// A selection run right after a run of the same selection that stopped owing some of it (or
    /// was killed) goes on from it: final rows answered since that run's start are not chosen
    /// again (the milliseconds before which an answer must lie; nil: no continuation).
    func continuationCutoff(before: JournalTables?, run: RunStep) -> Int64? {
        guard run.mode.resendsFinals, let last = before?.runs.last, last.retryFailed == run.mode.retryFailed,
            last.refreshOlderThan == run.mode.refreshSeconds.map(Double.init),
            last.shard == (run.mode.shard.map { "\($0)/2" } ?? ""),
            last.state == "running" || last.selectionOwed > 0
        else { return nil }
        return min(last.answeredBefore ?? last.startedAt, last.startedAt)
    }

    func selection(before: JournalTables?, run: RunStep) -> Selection {
        var selection = Selection()
        let inputPairs = run.inputPairs
        let cutoff = continuationCutoff(before: before, run: run)
        for item in (before?.items ?? [:]).values where inShard(item.pair, run.mode) {
            let reason: String?
            let answeredSince = cutoff.map { cutoff in (item.answeredAt ?? .min) >= cutoff } ?? false
            if Self.owedStatuses.contains(item.status) {
                reason = item.status
            } else if answeredSince {
                reason = nil
            } else if run.mode.retryFailed && Self.resendableStatuses.contains(item.status) {
                reason = "\(item.status) with --retry-failed"
            } else if run.mode.refreshSeconds == 0 && Self.refreshableStatuses.contains(item.status) {
                // Every definitive answer of this test is minutes old at most: only 0s selects.
                reason = "\(item.status) with --refresh-older-than 0s"
            } else {
                reason = nil
            }
            guard let reason else { continue }
            selection.owed.insert(item.pair)
            selection.reasons[item.pair] = reason
            // Problem 3: today only the owed rows of the run's own input are sent.
            if skip.contains(.strandedPending) && !inputPairs.contains(item.pair) { continue }
            // Problem 5: today a refresh skips nothing_to_restore.
            if skip.contains(.nothingNeverRevisited) && item.status == "nothing_to_restore"
                && !Self.owedStatuses.contains(item.status)
            {
                continue
            }
            selection.must.insert(item.pair)
        }
        for pair in inputPairs where before?.items[pair] == nil && inShard(pair, run.mode) {
            selection.new.insert(pair)
            selection.must.insert(pair)
        }
        return selection
    }

    /// The problem a must-send row belongs to when it was not sent.
    func problemOfUnsent(_ pair: Pair, before: JournalTables?, run: RunStep) -> Problem? {
        guard let item = before?.items[pair] else { return nil }
        if item.status == "nothing_to_restore" && run.mode.refreshSeconds != nil { return .nothingNeverRevisited }
        if !run.inputPairs.contains(pair) { return .strandedPending }
        return nil
    }

    /// What the simulator did for one pair during the step.
    struct Traffic {
        /// Authorized, well-formed requests (the simulator's per-pair count).
        var requests = 0
        /// Of which answered 200 with a restore.
        var successes = 0
        /// Attempts the journal added for the row.
        var attempts: Int64 = 0

        var sent: Bool { requests > 0 || attempts > 0 }
    }

    /// R3 and the outcome table: is `after` a state the row may be in?
    func judge(
        pair: Pair, before: JournalTables.Item?, after: JournalTables.Item?, traffic: Traffic, run: RunStep,
        killed: Bool, selection: Selection
    ) -> Violation? {
        let answer = run.world.answers ? ModelUniverse.answer(pair, generation: run.world.generation) : nil
        let definitive = traffic.sent ? answer : nil
        func matchesAnswer(_ item: JournalTables.Item) -> Bool {
            guard let definitive, item.status == definitive.status, item.code == definitive.code else { return false }
            // A restore is only believed when the simulator answered one.
            return item.status != "restored" || traffic.successes > 0
        }
        let world = "(\(traffic.requests) requests, \(run.world))"
        guard let before else {
            guard let after else { return nil }
            if !run.inputPairs.contains(pair) {
                return Violation(nil, "\(pair) appeared in the journal though no input of the run had it")
            }
            if !inShard(pair, run.mode) {
                return Violation(nil, "\(pair) of another shard was recorded by a --shard \(run.mode.shard!)/2 run")
            }
            if after.status == "pending" || (after.status == "in_flight" && killed) || matchesAnswer(after) {
                return nil
            }
            return Violation(
                nil,
                "new row \(pair) ended \(after.stateDescription) \(world); allowed: pending or \(answer?.description ?? "none")"
            )
        }
        guard let after else {
            return Violation(nil, "\(pair) vanished from the journal (was \(before.stateDescription))")
        }
        if Self.finalStatuses.contains(before.status) {
            if after.sameState(as: before) || matchesAnswer(after) { return nil }
            // Problem 4 is a resend that undoes the row; a final row changed without being resent is new.
            let resent = traffic.sent || after.status == "in_flight"
            let problem: Problem? =
                run.mode.resendsFinals && selection.owed.contains(pair) && resent ? .regression : nil
            return Violation(
                problem,
                "final row \(pair) went \(before.stateDescription) -> \(after.stateDescription) without a definitive reply that says so \(world)"
            )
        }
        // pending or in_flight before.
        if after.status == "pending" || matchesAnswer(after) { return nil }
        if after.status == "in_flight" && (killed || (before.status == "in_flight" && !traffic.sent)) { return nil }
        return Violation(
            nil,
            "row \(pair) went \(before.stateDescription) -> \(after.stateDescription) \(world); allowed: pending\(killed ? ", in_flight" : "") or \(definitive?.description ?? "no final state")"
        )
    }

    /// R6: the exit statuses a run may end with. `sentAny` is whether the server saw a request.
    static func allowedExits(run: RunStep, journalExisted: Bool, allWorkedFinal: Bool, sentAny: Bool) -> Set<Int32> {
        // R2: a run with no input on a journal that is not there has nothing to work on.
        if run.input == nil && !journalExisted { return [66] }
        if run.mode.dryRun { return [0] }
        var allowed: Set<Int32>
        if sentAny && run.world.key != .accepted {
            allowed = [77]
        } else if sentAny && run.world.noIOSSettings {
            allowed = [78]
        } else {
            allowed = [allWorkedFinal ? 0 : 75]
        }
        switch run.stop {
        case .none, .kill: break
        case .window: allowed.insert(75)
        case .signal(let signal, _): allowed.insert(signal == SIGINT ? 130 : 143)
        case .threshold: allowed.insert(69)
        }
        return allowed
    }
}
