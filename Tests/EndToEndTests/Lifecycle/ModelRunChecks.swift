import BotsiSimulator
import Foundation

/// The invariants of one `run` step, from the model's tables and what the simulator saw.
extension ModelSequence {
    func checkRun(_ observation: RunObservation) -> [Violation] {
        let run = observation.run
        let before = observation.before
        let after = observation.after
        let selection = observation.selection
        var violations: [Violation] = []
        let finished = observation.finished
        if finished.timedOut { violations.append(Violation(nil, "the run ran past 90 s and was killed")) }
        if finished.killedBySignal && !observation.killed {
            violations.append(Violation(nil, "the run died of signal \(finished.status): \(tail(finished.stderr))"))
        }
        violations += trafficChecks(observation)

        // Row by row: what was sent and what each row became (R1, R3, the outcome table).
        var traffic: [Pair: ModelTable.Traffic] = [:]
        for pair in observation.stats.pairs {
            let key = Pair(pair.profileId, pair.originalTransactionId)
            traffic[key, default: .init()].requests = pair.requests
            traffic[key, default: .init()].successes = pair.successes
        }
        let pairs = Set(ModelUniverse.pairs).union(before?.items.keys ?? [:].keys).union(after?.items.keys ?? [:].keys)
        for pair in pairs.sorted(by: { $0.description < $1.description }) {
            let itemBefore = before?.items[pair]
            let itemAfter = after?.items[pair]
            traffic[pair, default: .init()].attempts = (itemAfter?.attempts ?? 0) - (itemBefore?.attempts ?? 0)
            let seen = traffic[pair]!
            if seen.sent && (run.mode.dryRun || !selection.may.contains(pair)) {
                violations.append(
                    Violation(
                        nil,
                        "\(pair) was sent (\(seen.requests) requests, \(seen.attempts) attempts) though the run was not to work on it (before: \(itemBefore?.stateDescription ?? "not in the journal"))"
                    ))
            }
            // Every request is one of ours: libcurl's own resend of a request whose reused connection
            // closed without a reply is refused (docs/reliability.md), so none is allowed here.
            if seen.requests > run.maxAttempts || (run.world.faultRate == 0 && seen.requests > 1) {
                violations.append(
                    Violation(
                        nil,
                        "\(pair) was sent \(seen.requests) times in one run with --max-attempts \(run.maxAttempts) (\(run.world))"
                    ))
            }
            let unrecorded = Int64(seen.requests) - seen.attempts
            if run.world.answers && !observation.killed && unrecorded != 0 {
                violations.append(
                    Violation(
                        nil,
                        "\(pair): \(seen.requests) requests reached Botsi but \(seen.attempts) attempts were journaled")
                )
            }
            // A row marked in flight ahead of need and then not sent goes back exactly as it was:
            // a run that was not killed leaves every row it did not send untouched (a row a killed
            // run left marked is put right by recovery, which the table judges).
            if itemBefore == nil, let itemAfter, !seen.sent, !observation.killed,
                itemAfter.updatedAt != itemAfter.createdAt || itemAfter.sentRun != nil || itemAfter.inFlightRun != nil
            {
                violations.append(
                    Violation(
                        nil,
                        "new row \(pair) was not sent but is not as admitted: created_at \(itemAfter.createdAt ?? "-"), updated_at \(itemAfter.updatedAt ?? "-"), sent_run \(itemAfter.sentRun ?? "-"), in_flight_run \(itemAfter.inFlightRun ?? "-")"
                    ))
            }
            if let itemBefore, let itemAfter, !seen.sent, !observation.killed, itemBefore.status != "in_flight",
                itemBefore.inFlightRun == nil,
                itemAfter.updatedAt != itemBefore.updatedAt || itemAfter.sentRun != itemBefore.sentRun
                    || itemAfter.inFlightRun != itemBefore.inFlightRun
            {
                violations.append(
                    Violation(
                        nil,
                        "\(pair) was not sent but its in-flight marks changed: updated_at \(itemBefore.updatedAt ?? "-") -> \(itemAfter.updatedAt ?? "-"), sent_run \(itemBefore.sentRun ?? "-") -> \(itemAfter.sentRun ?? "-"), in_flight_run \(itemBefore.inFlightRun ?? "-") -> \(itemAfter.inFlightRun ?? "-")"
                    ))
            }
            if let violation = table.judge(
                pair: pair, before: itemBefore, after: itemAfter, traffic: seen, run: run, killed: observation.killed,
                selection: selection)
            {
                violations.append(violation)
            }
        }

        if run.mode.dryRun {
            violations += dryRunChecks(observation)
            return violations
        }
        // R1: an unstopped run in a world that answers sends all it must, and with no faults each
        // ends as the table says.
        let unstopped = run.world.answers && { if case .none = run.stop { return true } else { return false } }()
        if unstopped {
            for pair in selection.must.sorted(by: { $0.description < $1.description })
            where !traffic[pair, default: .init()].sent {
                let why = selection.reasons[pair] ?? "a new input row"
                violations.append(
                    Violation(
                        table.problemOfUnsent(pair, before: before, run: run),
                        "\(pair) (\(why)) was not sent by a run that was not stopped"))
            }
            if run.world.faultRate == 0 {
                for pair in selection.must {
                    let expected = ModelUniverse.answer(pair, generation: run.world.generation)
                    guard let item = after?.items[pair], item.status != expected.status || item.code != expected.code
                    else { continue }
                    violations.append(
                        Violation(
                            table.problemOfUnsent(pair, before: before, run: run),
                            "\(pair) ended \(item.stateDescription), the outcome table says \(expected)"))
                }
            }
        }
        violations += exitAndCountChecks(observation)
        return violations
    }

    private func trafficChecks(_ observation: RunObservation) -> [Violation] {
        var violations: [Violation] = []
        let stats = observation.stats
        if stats.maxInFlightPerProfile > 1 || stats.maxInFlightPerTransaction > 1 {
            violations.append(
                Violation(
                    nil,
                    "two requests were in flight at once for one profile (\(stats.maxInFlightPerProfile)) or one transaction (\(stats.maxInFlightPerTransaction))"
                ))
        }
        let universe = Set(ModelUniverse.pairs)
        let strangers = stats.pairs.map { Pair($0.profileId, $0.originalTransactionId) }.filter {
            !universe.contains($0)
        }
        if !strangers.isEmpty {
            violations.append(Violation(nil, "rows the input checks refuse were sent: \(strangers)"))
        }
        return violations
    }

    /// R5: a dry run writes nothing and lists what would be sent, owed rows included.
    private func dryRunChecks(_ observation: RunObservation) -> [Violation] {
        var violations: [Violation] = []
        let before = observation.before
        let after = observation.after
        if before?.sameContent(as: after) == false || (before == nil) != (after == nil) {
            violations.append(Violation(nil, "a --dry-run changed the journal (or created it)"))
        }
        if observation.finished.status != 0 || observation.finished.killedBySignal {
            violations.append(
                Violation(
                    nil, "a --dry-run exited \(observation.finished.status): \(tail(observation.finished.stderr))"))
        }
        if observation.run.jsonLog, let summary = Self.summary(observation.finished.stderr),
            let wouldSend = summary["wouldSend"] as? Int, wouldSend != observation.selection.may.count
        {
            let owedOutsideInput = !observation.selection.owed.subtracting(observation.run.inputPairs).isEmpty
            if !(owedOutsideInput && skip.contains(.strandedPending)) {
                violations.append(
                    Violation(
                        owedOutsideInput ? .strandedPending : nil,
                        "--dry-run says it would send \(wouldSend) rows; the journal owes \(observation.selection.owed.count) and the input adds \(observation.selection.new.count)"
                    ))
            }
        }
        return violations
    }

    /// The rows a run worked on (R4): the new input rows it recorded and the owed rows it took up.
    /// A run takes up its owed rows before it reads its input, but one that stops first (a signal
    /// during setup, a window that ends) leaves the rest owed, as its summary says.
    func worked(_ observation: RunObservation, runID: Int64?) -> Set<Pair> {
        let present = Set(observation.after?.items.keys ?? [:].keys)
        var owed = takenUp(observation, runID: runID)
        if skip.contains(.strandedPending) { owed.formIntersection(observation.run.inputPairs) }
        return owed.union(observation.selection.new).intersection(present)
    }

    /// The owed rows of the selection that run `runID` took up (or sent: a killed run's claims
    /// may not have been committed).
    func takenUp(_ observation: RunObservation, runID: Int64?) -> Set<Pair> {
        let sent = Set(observation.stats.pairs.map { Pair($0.profileId, $0.originalTransactionId) })
        return observation.selection.owed.filter { pair in
            sent.contains(pair) || (runID != nil && observation.after?.items[pair]?.lastRun == runID)
        }
    }

    /// R6 exit statuses, the run's record, R4 counts and R8 words.
    private func exitAndCountChecks(_ observation: RunObservation) -> [Violation] {
        let run = observation.run
        let finished = observation.finished
        var violations: [Violation] = []
        let newRun = (observation.after?.runs ?? []).last { run in
            !(observation.before?.runs ?? []).contains { $0.id == run.id }
        }
        let worked = worked(observation, runID: newRun?.id)
        let workedCounts = worked.reduce(into: [String: Int]()) { counts, pair in
            counts[observation.after?.items[pair]?.status ?? "?", default: 0] += 1
        }
        let allFinal = worked.allSatisfy {
            ModelTable.finalStatuses.contains(observation.after?.items[$0]?.status ?? "")
        }
        let notFinalPairs = worked.filter {
            !ModelTable.finalStatuses.contains(observation.after?.items[$0]?.status ?? "")
        }
        let notFinal = notFinalPairs.map { ModelUniverse.short($0) }.sorted()
        let noInputProblem: Problem? = run.input == nil ? .strandedPending : nil
        // Exit 0 while owed rows outside the input stay pending: the run never looked at them.
        let strandedOnly = !notFinalPairs.isEmpty && notFinalPairs.isDisjoint(with: run.inputPairs)
        let exitProblem = noInputProblem ?? (finished.status == 0 && strandedOnly ? .strandedPending : nil)
        if !observation.killed && !finished.killedBySignal {
            let allowed = ModelTable.allowedExits(
                run: run, journalExisted: observation.before != nil, allWorkedFinal: allFinal,
                sentAny: observation.stats.requests > 0)
            if !allowed.contains(finished.status) {
                violations.append(
                    Violation(
                        exitProblem,
                        "the run exited \(finished.status), allowed \(allowed.sorted()) (rows worked on: \(workedCounts); not final: \(notFinal)): \(tail(finished.stderr))"
                    ))
            }
        }
        let runsBefore = observation.before?.runs ?? []
        let runsAfter = observation.after?.runs ?? []
        let added = runsAfter.filter { run in !runsBefore.contains { $0.id == run.id } }
        if run.input == nil && observation.before == nil {
            if observation.after != nil {
                violations.append(Violation(.strandedPending, "a run with no input created the journal it was given"))
            }
            return violations
        }
        if added.count != 1 && !(observation.killed && added.isEmpty) {
            violations.append(Violation(noInputProblem, "the run added \(added.count) run records to the journal"))
        }
        guard let record = added.last, !observation.killed, !finished.killedBySignal else { return violations }
        if record.state == "running" || record.exitCode != Int64(finished.status) {
            violations.append(
                Violation(
                    nil,
                    "run \(record.id) is recorded as \(record.state), exit \(record.exitCode.map(String.init) ?? "none"), but exited \(finished.status)"
                ))
        }
        // R4: the summary and `runs` show the rows the run worked on, from the journal.
        if !skip.contains(.counts) {
            let line = runsLines().first { ($0["run"] as? Int).map(Int64.init) == record.id }
            let recorded = (line?["statuses"] as? [String: Int])?.filter { $0.value != 0 }
            if recorded != workedCounts {
                violations.append(
                    Violation(
                        .counts,
                        "`runs` counts run \(record.id) as \(recorded ?? [:]); the journal holds \(workedCounts) for the rows it worked on"
                    ))
            }
            if run.jsonLog {
                let object = Self.summary(finished.stderr)
                let summary = (object?["statuses"] as? [String: Int])?.filter { $0.value != 0 }
                if summary != recorded {
                    violations.append(
                        Violation(
                            .counts, "the run's summary counts \(summary ?? [:]), its `runs` line \(recorded ?? [:])"))
                }
                // Owed rows it did not take up (it stopped first) are said, and stay owed.
                let left = observation.selection.owed.subtracting(takenUp(observation, runID: record.id))
                let said = object?["owedNotTakenUp"] as? Int ?? 0
                if said != left.count {
                    violations.append(
                        Violation(
                            .counts,
                            "the run's summary says \(said) owed rows were not taken up; the journal shows \(left.count) (\(left.map { ModelUniverse.short($0) }.sorted()))"
                        ))
                }
            }
        }
        if !skip.contains(.words) { violations += wordChecks(finished, jsonLog: run.jsonLog) }
        return violations
    }

    /// R8: a stop names the journal; after 77 and 78 it does not say to run the same command again.
    private func wordChecks(_ finished: Finished, jsonLog: Bool) -> [Violation] {
        guard [75, 77, 78, 69, 130, 143].contains(finished.status) else { return [] }
        // In JSON the path may sit in a field of its own, with its slashes escaped.
        let text = jsonLog ? finished.stderr.replacingOccurrences(of: "\\/", with: "/") : finished.stderr
        var violations: [Violation] = []
        if !text.contains(journal) {
            violations.append(
                Violation(.words, "the exit \(finished.status) message does not name the journal: \(tail(text))"))
        }
        if [77, 78].contains(finished.status) && text.contains("same command again") {
            violations.append(
                Violation(
                    .words, "after exit \(finished.status) the advice is to run the same command again: \(tail(text))"))
        }
        return violations
    }
}

extension JournalTables {
    /// The same rows, runs and rejections (integrity aside).
    func sameContent(as other: JournalTables?) -> Bool {
        guard let other else { return false }
        return items == other.items && runs == other.runs && rejections == other.rejections
    }
}

/// The last lines of a child's output, for messages.
func tail(_ text: String, lines: Int = 6) -> String {
    text.split(separator: "\n").suffix(lines).joined(separator: " | ")
}
