import BotsiBasics
import BotsiInput
import BotsiJournal
import Foundation

/// What a run did, for the summary on stderr, the journal's record of the run (`RunCounts`)
/// and the exit status. The run (`ActiveRun`) owns it: the input side reports to it (`InputCounts`),
/// the journal gives the counts of the rows the run worked on (`RowCounts`), and the run adds what
/// it sent and how it ended.
public struct RunSummary: Sendable, Codable, Equatable {
    /// Rows this run worked on (its new input rows and the owed rows it took up), by their status
    /// at its end, read from the journal.
    public var statuses: [ItemStatus: Int] = [:]
    /// The same rows by status and code (`pending/http_503`, `restored/` in JSON).
    public var codes: [StatusCode: Int] = [:]
    /// Rows the journal owed from earlier runs that this run took up (sent first).
    public var owedRows = 0
    /// Rows the journal owed that this run did not take up because it stopped first: still owed.
    public var owedNotTakenUp = 0
    /// Rows the journal holds for review, told of when the run found nothing owed (a plain run
    /// leaves them; `--release-held` sends them).
    public var heldInJournal = 0
    /// The stopped (or killed) selection run this one went on from (`RunSetup.continuedSelection`),
    /// and the cutoff it took from it: the rows answered since were left out.
    public var continuedFrom: Int64?
    public var continuedAnsweredBefore: String?
    /// Final rows a stopped selection resent without an answer yet: kept, and still owed to it.
    public var owedUnanswered = 0
    /// Final rows this run resent without getting a definitive answer: they kept their status.
    public var kept = 0
    /// Rows refused by the input checks, by reason.
    public var rejectedByReason: [RejectionReason: Int] = [:]
    /// Rows whose final outcome was already on record, by status.
    public var alreadyFinished: [ItemStatus: Int] = [:]
    public var rowsRead = 0
    public var duplicates = 0
    /// Rows the run took up as owed and then met in its input: sent once, as owed.
    public var owedMetAgain = 0
    public var newRows = 0
    /// Dry run only: rows a real run would send, and new pairs it would hold (`--on-conflict hold`).
    public var wouldSend = 0
    public var wouldHold = 0
    /// Of the pending rows, those this run did not send because it stopped first.
    public var notSent = 0
    /// Rows a killed run had left in flight, returned to pending at start.
    public var recoveredInFlight = 0
    /// Final rows a killed run was resending, unmarked at start and otherwise as they were.
    public var recoveredMarks = 0
    public var requests = 0
    /// Of `requests`, those whose outcome the journal could not record when it failed (the
    /// outcomes of its last, rolled-back batch): sent, with no attempt on record.
    public var unrecordedRequests = 0
    public var retries = 0
    public var retryBudgetExhausted = 0
    public var durationSeconds: Double = 0
    public var exitCode: Int32 = 0
    public var stopMessage: String?
    /// What stopped the run, and when it was decided (ISO 8601, UTC): no request was handed to
    /// the client after that instant.
    public var stopCause: StopCause?
    public var stoppedAt: String?
    /// The journal failed, and then also refused to be read back: the row counts are unknown.
    public var countsUnreadable = false
    /// The journal refused to record the run's end: `status` shows it as ended without a record
    /// until the next run puts it right.
    public var endUnrecorded = false
    /// The command that sends what the journal owes after this run, reading the input again
    /// when the run did not read it all.
    public var nextCommand: String?
    /// The command that sends the held rows after review: the run's service, key and pace, with
    /// `--release-held`.
    public var releaseCommand: String?
    public var dryRun = false
    /// Whether the run read all of its input before it ended.
    public var inputComplete = false
    /// Inputs an earlier run left unread that this run did not name: it read nothing of them.
    public var earlierUnreadInputs: [String] = []
    /// Inputs earlier runs left unread whose files are gone: named, not read again.
    public var earlierGoneInputs: [String] = []
    /// The same by the paths their runs recorded (real, from `/`): what `--forget-input` is given.
    public var earlierGoneInputPaths: [String] = []
    /// Unread inputs of earlier runs that `--forget-input` ended: no longer named as unfinished
    /// (a dry run's: those the run would end; it ends none).
    public var forgottenInputs: [String] = []
    /// Each `--forget-input` that named no input an earlier run left unfinished: it forgot nothing.
    public var forgetsMatchingNothing: [String] = []
    /// The journal was moved, removed or replaced mid-run: the run wrote nothing more to it, and
    /// gives no counts of it.
    public var journalTaken = false
    /// Rows skipped because they belong to another shard.
    public var otherShards = 0
    /// Rows the journal owes that belong to other shards than this run's (an earlier run split
    /// the job another way, or not at all): no run with this `--shard` sends them.
    public var otherShardsOwed = 0
    /// The command that sends them: this run's, without `--shard` and without inputs.
    public var otherShardsCommand: String?
    /// One sentence per input that held no row (empty, blank, header only); a 0-byte one
    /// starts with "warning: ", since a failed export looks the same. Printed before the summary,
    /// as messages of their own, not in `render`.
    public var inputNotes: [String] = []
    /// Inputs whose every row of this shard failed the checks, beside inputs that did not: the
    /// run exits 65 as when every row read was rejected.
    public var rejectedInputs: [String] = []
    /// Transactions among this run's rows that several profiles claim, and their rows in the journal.
    public var conflicts = ConflictCounts(groups: 0, rows: 0)
    /// Adaptive throttling: how many times the run slowed down, how low it went, where it ended.
    public var throttleEvents = 0
    public var lowestThrottledRate: Double?
    public var finalThrottledRate: Double?
    /// The pace the run started at, found by an earlier run on a limit counted over a long window.
    public var carriedLongWindow: CarriedLongWindow?
    /// Replies that came without HTTP (refused, reset, timed out, DNS), counted by message.
    public var transportErrors = TransportErrorTally()
    /// Requests that hit `--timeout` (`requestTimeout` seconds), and the seconds the slots spent on
    /// them and on every request: the share that says when timeouts held the run back.
    public var timeouts = 0
    public var timeoutSeconds: Double = 0
    public var requestSeconds: Double = 0
    public var requestTimeout: Double = 30

    public init() {}

    /// Rows worked on that hold a final status.
    public var finished: Int { statuses.filter(\.key.isFinal).values.reduce(0, +) }
    public var pending: Int { (statuses[.pending] ?? 0) + (statuses[.inFlight] ?? 0) }
    /// Rows held for review (`--on-conflict hold`): not owed, so they leave the exit status 0.
    public var held: Int { statuses[.held] ?? 0 }
    public var rejectedRows: Int { rejectedByReason.values.reduce(0, +) }

    /// Every row of this run's shard failed the checks that a well-formed export passes: the
    /// export is wrong (ids in scientific notation, the wrong columns), not a few rows of it. Such
    /// a run exits 65, not 0: a nightly job whose export broke must not look fine. Rows refused by
    /// a filter asked for (`--environment`, `--bundle-id`) or that hold no purchase are not broken.
    public var everyRowRejected: Bool {
        let filtered = rejectedByReason.filter { Self.notBroken.contains($0.key) }.values.reduce(0, +)
        let owned = rowsRead - otherShards - filtered
        return owned > 0 && rejectedRows - filtered == owned
    }

    /// Rows a stopped run owes its selection's next run: taken up and not sent, or resent and not answered.
    public var selectionOwed: Int { record.selectionOwed }

    /// Names the inputs whose every row was rejected beside good ones, whatever else ended the run
    /// (rows left pending, a time window: those set its exit status instead of 65).
    var brokenInputsLine: String? {
        guard !rejectedInputs.isEmpty, !everyRowRejected else { return nil }
        let names = rejectedInputs.map(RunAdvice.shellQuoted).joined(separator: ", ")
        return "every row of \(rejectedInputs.count == 1 ? "" : "each of ")\(names) was rejected by the input checks "
            + "(reasons above), though the other inputs' were not: that export is probably wrong; fix or re-export it, "
            + "then run again with it"
    }

    /// Every row read was rejected, or every row of one input: the exit status is 65.
    public var inputRejected: Bool { everyRowRejected || !rejectedInputs.isEmpty }

    static let notBroken: Set<RejectionReason> = [.wrongBundleId, .wrongEnvironment, .receiptWithoutPurchases]
    public var requestsPerSecond: Double { durationSeconds > 0 ? Double(requests) / durationSeconds : 0 }

    /// What the input side counted so far (each slice's counts are added as it is admitted).
    mutating func add(_ input: InputCounts) {
        rowsRead += input.rowsRead
        owedRows += input.owedRows
        duplicates += input.duplicates
        owedMetAgain += input.owedMetAgain
        newRows += input.newRows
        wouldHold += input.wouldHold
        otherShards += input.otherShards
        rejectedByReason.merge(input.rejectedByReason, uniquingKeysWith: +)
        alreadyFinished.merge(input.alreadyFinished, uniquingKeysWith: +)
        inputNotes += input.inputNotes
        // Once each: an input named twice is read twice.
        for name in input.rejectedInputs where !rejectedInputs.contains(name) { rejectedInputs.append(name) }
    }

    /// The journal's counts of the rows the run worked on: whatever stopped the run, the
    /// summary, its `runs` line and the exit status rest on these numbers.
    mutating func take(_ rows: RowCounts) {
        statuses = rows.statuses
        codes = rows.codes
        notSent = rows.notSent
        conflicts = rows.conflicts
    }

    /// A reply's row settled for this run (the running counts, until the journal's at the end).
    mutating func count(status: ItemStatus, code: String?) {
        statuses[status, default: 0] += 1
        codes[StatusCode(status, code), default: 0] += 1
    }

    /// The run's record in the journal.
    var record: RunCounts {
        var record = RunCounts()
        record.statuses = statuses
        record.codes = codes
        record.rejectedByReason = Dictionary(uniqueKeysWithValues: rejectedByReason.map { ($0.key.rawValue, $0.value) })
        record.rowsRead = rowsRead
        record.newRows = newRows
        record.duplicates = duplicates
        record.alreadyFinished = alreadyFinished
        record.otherShards = otherShards
        record.otherShardsOwed = otherShardsOwed > 0 ? otherShardsOwed : nil
        record.owedRows = owedRows
        record.owedNotTakenUp = owedNotTakenUp
        record.owedUnanswered = owedUnanswered > 0 ? owedUnanswered : nil
        record.notSent = notSent
        record.kept = kept
        record.requests = requests
        record.unrecordedRequests = unrecordedRequests > 0 ? unrecordedRequests : nil
        record.retries = retries
        record.durationSeconds = durationSeconds
        record.inputComplete = inputComplete
        record.stopCause = stopCause
        record.stopMessage = stopMessage
        record.stoppedAt = stoppedAt
        record.throttleEvents = throttleEvents
        record.rejectedInputs = everyRowRejected || rejectedInputs.isEmpty ? nil : rejectedInputs
        return record
    }

    /// Several lines for a person: what happened and, when rows remain, what to do.
    public func render(journalPath: String) -> String {
        var lines: [String] = []
        // A stopped run did not finish: its first line must not say so before "stopped:" does.
        let head = (dryRun ? "dry run (nothing sent)" : "run") + (stopCause == nil ? " finished in" : " stopped after")
        lines.append(
            "\(head) \(Basics.duration(durationSeconds)): \(Basics.count(rowsRead, "row", "rows")) read, "
                + Basics.count(requests, "request", "requests")
                + (durationSeconds > 0 && requests > 0 ? String(format: " (%.0f/s)", requestsPerSecond) : "")
                + (unrecordedRequests > 0 ? ", \(Self.unrecordedWords(unrecordedRequests))" : "")
                + ", \(Basics.count(retries, "retry", "retries"))")
        if let run = continuedFrom, let cutoff = continuedAnsweredBefore {
            lines.append(
                "  went on with the selection run \(run) stopped in: rows answered since its start were left out "
                    + "(--answered-before \(cutoff); give --answered-before to choose otherwise)")
        }
        if dryRun {
            lines.append("  would send: \(wouldSend) (\(newRows - wouldHold) new, \(owedRows) from the journal)")
            if wouldHold > 0 {
                lines.append("  would hold (transaction claimed by another profile): \(wouldHold)")
            }
        } else if owedRows > 0 {
            lines.append(
                "  from the journal (left pending, or chosen by --retry-failed / --refresh-older-than / --release-held), sent first: \(owedRows)"
            )
        }
        for (key, value) in codes.sorted(by: { $0.key < $1.key }) {
            // A code that only repeats the status ("nothing_to_restore") is not said twice.
            let code = key.code.flatMap { $0 == key.status.rawValue ? nil : " (\($0))" } ?? ""
            lines.append("  \(key.status)\(code): \(value)")
        }
        if notSent > 0 { lines.append("  of the pending rows, not sent before the run stopped: \(notSent)") }
        if owedNotTakenUp > 0 {
            lines.append("  owed by the journal, not sent before the run stopped: \(owedNotTakenUp)")
        }
        if kept > 0 {
            lines.append("  resent without a definitive answer, kept their earlier status: \(kept)")
        }
        if owedUnanswered > 0 {
            lines.append("  of those, stopped before an answer and still owed to the selection: \(owedUnanswered)")
        }
        for (reason, value) in rejectedByReason.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            lines.append("  rejected by input checks (\(reason.rawValue)): \(value)")
        }
        for (status, value) in alreadyFinished.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            lines.append("  already \(status) in the journal, skipped: \(value)")
        }
        if duplicates > 0 { lines.append("  duplicates (same pair again, sent once): \(duplicates)") }
        if owedMetAgain > 0 {
            lines.append(
                "  rows the journal owed, met again in the input (one row each, never sent twice): \(owedMetAgain)")
        }
        if recoveredInFlight > 0 {
            lines.append("  rows left in flight by an earlier run, pending again: \(recoveredInFlight)")
        }
        if recoveredMarks > 0 {
            lines.append("  final rows an earlier run was resending when it died, kept as they were: \(recoveredMarks)")
        }
        if retryBudgetExhausted > 0 {
            lines.append(
                "  retries refused because the retry budget ran out: \(retryBudgetExhausted) (the service was failing most requests)"
            )
        }
        if otherShards > 0 { lines.append("  rows of other shards, skipped: \(otherShards)") }
        if otherShardsOwed > 0 { lines.append("  owed by the journal to other shards, not sent: \(otherShardsOwed)") }
        lines += conflictLines(journalPath: journalPath)
        lines += replyLines()
        if throttleEvents > 0 {
            let lowest = String(format: "%.1f", lowestThrottledRate ?? 0)
            let final = finalThrottledRate.map { String(format: "%.1f/s", $0) } ?? "unthrottled"
            lines.append(
                "  throttled \(Basics.count(throttleEvents, "time", "times")) by 429/503 replies: slowed to \(lowest) requests/s at the lowest, \(final) at the end"
            )
        }
        if let carried = carriedLongWindow {
            lines.append(
                String(format: "  pacing started at %.1f requests/s", carried.rate)
                    + ", from the pace a limit counted over \(Int(carried.cycleSeconds.rounded())) s gave run"
                    + " \(carried.run) (seen \(carried.seenAt))")
        }
        if !dryRun && stopMessage == nil && rowsRead == 0 && owedRows == 0 && inputComplete
            && earlierUnreadInputs.isEmpty
        {
            // Only an input that held no row leaves a note: with one, the inputs were named.
            lines.append(
                inputNotes.isEmpty
                    ? "nothing owed: journal \(journalPath) holds no row to send; name input files to send new pairs"
                    : "nothing to send: the input\(inputNotes.count > 1 ? "s" : "") held no row, and journal \(journalPath) owes none"
            )
            if heldInJournal > 0, let releaseCommand {
                lines.append(
                    "it holds \(Basics.count(heldInJournal, "row", "rows")) for review (claimed by another profile; not owed): see \(heldInJournal == 1 ? "it" : "them") with "
                        + RunAdvice.reportCommand(journalPath: journalPath, ["--conflicts"])
                        + ", then send \(heldInJournal == 1 ? "it" : "them") with: \(releaseCommand)")
            }
        }
        if let stopMessage { lines.append("stopped: \(stopMessage)") }
        if countsUnreadable {
            lines.append(
                "the row counts above are missing: the journal could not be read back; what was committed is safe, "
                    + "and botsi-restore status shows it once the journal can be read")
        } else if stopCause == .journalFailure && !journalTaken {
            lines.append(
                "the counts above are what the journal holds: the outcomes of the last unfinished batch were not committed"
            )
        }
        if endUnrecorded {
            lines.append(
                "the run's end could not be recorded: botsi-restore status shows it as ended without a record, "
                    + "and the next run puts it right")
        }
        if !dryRun {
            lines += advice(journalPath: journalPath)
        } else if wouldSend > 0, let nextCommand {
            lines.append("send them with: \(nextCommand)")
        }
        if let line = brokenInputsLine { lines.append(line) }
        if otherShardsOwed > 0, let otherShardsCommand, !dryRun {
            lines.append(RunAdvice.otherShardsOwed(otherShardsOwed) + ": " + otherShardsCommand)
        }
        if !earlierGoneInputs.isEmpty {
            lines.append(RunAdvice.goneInputs(earlierGoneInputs, paths: earlierGoneInputPaths))
        }
        if !forgottenInputs.isEmpty { lines.append(RunAdvice.forgotten(forgottenInputs, dryRun: dryRun)) }
        if !forgetsMatchingNothing.isEmpty {
            lines.append(RunAdvice.forgetMatchingNothing(forgetsMatchingNothing, dryRun: dryRun))
        }
        if rejectedRows > 0 && dryRun {
            // A dry run records nothing: the journal does not hold them.
            lines.append(
                "a run records the rejected rows; see them then with: botsi-restore report --journal \(journalPath) --status rejected"
            )
        } else if rejectedRows > 0 {
            if everyRowRejected && stopCause == nil {
                lines.append(
                    "every row read was rejected by the input checks (reasons above): the export is probably wrong; "
                        + "fix or re-export it, then run again")
            }
            lines.append(
                "see rejected rows with: botsi-restore report --journal \(journalPath) --status rejected")
        }
        return VisibleText.joinedLines(lines)
    }

    /// Requests sent whose outcome the journal could not record, as the summary and `status` say it.
    static func unrecordedWords(_ count: Int) -> String {
        "\(count) of them sent but not recorded (the journal failed before "
            + (count == 1 ? "its outcome was" : "their outcomes were") + " written)"
    }

    /// Transactions claimed by several profiles, and the held rows' way out (issue 10).
    private func conflictLines(journalPath: String) -> [String] {
        guard conflicts.groups > 0 || held > 0 else { return [] }
        var lines: [String] = []
        if conflicts.groups > 0 {
            lines.append(
                "  transactions claimed by several profiles: \(conflicts.groups) (\(conflicts.rows) rows in the journal); "
                    + "each restore links the profiles of its transaction")
        }
        if held > 0 && !dryRun {
            lines.append(
                "held \(Basics.count(held, "row", "rows")) whose transaction another profile claimed first (not sent, not owed); "
                    + (held == 1 ? "review it, then send it with: " : "review them, then send them with: ")
                    + (releaseCommand
                        ?? ["botsi-restore", "run", "--journal", journalPath, "--release-held"].map(
                            RunAdvice.shellQuoted
                        ).joined(separator: " ")))
        }
        let report = RunAdvice.reportCommand(journalPath: journalPath, ["--conflicts"])
        lines.append("see the groups with: \(report)")
        return lines
    }

    /// What to do next, with a command that does it: first what must be fixed, when something
    /// must, then how to send what the journal owes (and read the input left unread).
    private func advice(journalPath: String) -> [String] {
        if journalTaken, let nextCommand {
            return [
                "if it was moved, put it back and run again; if it was removed, send the rows again with: \(nextCommand)"
            ]
        }
        let cause = stopCause
        var lines: [String] = []
        if cause == .failureThreshold && kept > 0 {
            // Resent final rows that failed kept their status: a report by status does not list them.
            lines.append(
                "look at the failures on the page (resent rows that failed kept their earlier status): "
                    + "\(HTMLReportAdvice.command(journalPath: journalPath)) — and fix their cause first")
        } else if cause == .failureThreshold {
            let report = RunAdvice.reportCommand(
                journalPath: journalPath, ["--run", "latest", "--status", "failed", "--status", "pending"])
            lines.append("look at the failures with: \(report) — and fix their cause first")
        }
        // Every row failed 404 without Botsi's codes: the route is not there, the base URL is wrong
        // (a row's own 404 says `nothing_to_restore` or `not_found`). Resending needs --retry-failed.
        let failed = statuses[.failed] ?? 0
        let routeless = codes.filter {
            $0.key.status == .failed && ["http_404", "route_not_found"].contains($0.key.code)
        }
        if failed > 0, routeless.values.reduce(0, +) == failed, failed == statuses.values.reduce(0, +) {
            lines.append(
                "every row failed with 404 and no Botsi code: the base URL is probably wrong (give the API's root, "
                    + "like https://api.botsi.com); resend them with: botsi-restore run --journal "
                    + "\(RunAdvice.shellQuoted(journalPath)) --retry-failed --base-url URL")
        }
        let fix = cause.flatMap(RunAdvice.fixFirst)
        let unreadOwn = stopMessage != nil && !inputComplete
        let unread = unreadOwn || !earlierUnreadInputs.isEmpty
        let owed = pending + selectionOwed
        // Counts the journal could not give back say nothing of what it owes.
        guard owed > 0 || unread || countsUnreadable, let nextCommand else {
            if let fix { lines.append(fix) }
            // A stop with nothing left owed still says where its record is.
            if cause != nil {
                let status = RunAdvice.statusCommand(journalPath: journalPath)
                lines.append("the journal owes no row; its record: \(status)")
            }
            return lines
        }
        var what: [String] = []
        if selectionOwed > 0 {
            // The continuation chooses again the resent rows that kept their status for want of an
            // answer (`kept`, which holds `owedUnanswered`): it sends them too.
            what.append(
                "send the \(Basics.count(pending + owedNotTakenUp + kept, "row", "rows")) the journal still owes")
        } else if pending > 0 {
            what.append("send the \(Basics.count(pending, "pending row", "pending rows"))")
        }
        if unreadOwn { what.append("read the input the run did not finish") }
        if !earlierUnreadInputs.isEmpty { what.append(RunAdvice.readAgain(earlierUnreadInputs, by: "an earlier run")) }
        if what.isEmpty { what.append("go on") }
        if let fix { lines.append(fix + ";") }
        let then = fix != nil || cause == .failureThreshold ? "then " : ""
        lines.append("\(then)\(what.joined(separator: " and ")) with: \(nextCommand)")
        // A stopped selection's rows keep their final statuses: they are not pending.
        if pending > 0 {
            lines.append(
                "see the pending rows with: \(RunAdvice.reportCommand(journalPath: journalPath, ["--status", "pending"]))"
            )
        }
        return lines
    }
}

/// An earlier run's long-window pace that a run started from (docs/pacing.md).
public struct CarriedLongWindow: Sendable, Codable, Equatable {
    /// The run that found it (or carried it last).
    public var run: Int64
    /// The send rate the run started at, from the pace the window gave (`plateau` of it, less the
    /// headroom, capped by `--rate` and `--job-rate`).
    public var rate: Double
    public var cycleSeconds: Double
    /// When a run last saw the window stay closed for long and open again (UTC ISO-8601).
    public var seenAt: String
}
