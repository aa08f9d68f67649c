import BotsiBasics
import BotsiInput
import BotsiJournal
import Testing

@testable import BotsiRestore

/// The summary's counts, its journal record and its lines, from hand-made summaries: the
/// end-to-end tests see whole runs; here each rule says what it must, one branch at a time.
@Suite struct RunSummaryLinesTests {
    private func summary(_ edit: (inout RunSummary) -> Void) -> RunSummary {
        var summary = RunSummary()
        summary.durationSeconds = 2
        summary.inputComplete = true
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        edit(&summary)
        return summary
    }

    private func lines(_ summary: RunSummary) -> [String] {
        summary.render(journalPath: "j.sqlite").split(separator: "\n").map(String.init)
    }

    /// A broken export is one whose every row of this shard failed the checks a good export
    /// passes; rows another shard owns, filters asked for and receipts without purchases are not
    /// broken, and no row read is no broken export.
    @Test func everyRowRejectedCountsOnlyTheRowsThisShardOwnsAndTheChecksThatMeanBroken() {
        #expect(summary { ($0.rowsRead, $0.rejectedByReason) = (3, [.invalidProfileId: 3]) }.everyRowRejected)
        #expect(!summary { $0.rowsRead = 0 }.everyRowRejected, "no row read is not every row rejected")
        #expect(
            summary { ($0.rowsRead, $0.otherShards, $0.rejectedByReason) = (5, 2, [.scientificNotation: 3]) }
                .everyRowRejected)
        #expect(
            summary { ($0.rowsRead, $0.rejectedByReason) = (4, [.wrongEnvironment: 1, .invalidTransactionId: 3]) }
                .everyRowRejected, "a filtered row is neither owned nor broken")
        #expect(!summary { ($0.rowsRead, $0.rejectedByReason) = (3, [.receiptWithoutPurchases: 3]) }.everyRowRejected)
        #expect(!summary { ($0.rowsRead, $0.rejectedByReason) = (3, [.wrongBundleId: 3]) }.everyRowRejected)
        #expect(!summary { ($0.rowsRead, $0.rejectedByReason) = (3, [.invalidProfileId: 2]) }.everyRowRejected)
    }

    /// One input whose every row was refused, beside good inputs, exits 65 and is named.
    @Test func aBrokenInputBesideGoodOnesIsNamedAndRejectsTheRun() {
        let one = summary {
            ($0.rowsRead, $0.rejectedByReason, $0.rejectedInputs) = (4, [.invalidProfileId: 2], ["a.csv"])
        }
        #expect(one.inputRejected && !one.everyRowRejected)
        #expect(one.brokenInputsLine?.hasPrefix("every row of a.csv was rejected by the input checks") == true)
        #expect(one.record.rejectedInputs == ["a.csv"])
        var two = one
        two.rejectedInputs = ["a.csv", "b.csv"]
        #expect(two.brokenInputsLine?.hasPrefix("every row of each of a.csv, b.csv was rejected") == true)
        // Every row read rejected says so on its own line: the inputs are not named again.
        let all = summary {
            ($0.rowsRead, $0.rejectedByReason, $0.rejectedInputs) = (2, [.invalidProfileId: 2], ["a.csv"])
        }
        #expect(all.inputRejected && all.brokenInputsLine == nil && all.record.rejectedInputs == nil)
        #expect(lines(all).contains { $0.hasPrefix("every row read was rejected by the input checks") })
        #expect(!summary { $0.rowsRead = 2 }.inputRejected)
    }

    /// The input side's counts add up slice by slice; an input named twice is named once.
    @Test func theInputSidesCountsAddUpAndNameEachBrokenInputOnce() {
        var counts = InputCounts()
        (counts.rowsRead, counts.owedRows, counts.duplicates, counts.owedMetAgain) = (10, 2, 1, 1)
        (counts.newRows, counts.wouldHold, counts.otherShards) = (6, 1, 3)
        counts.rejectedByReason = [.invalidProfileId: 1]
        counts.inputNotes = ["a note"]
        counts.rejectedInputs = ["a.csv"]
        var total = RunSummary()
        total.add(counts)
        total.add(counts)
        #expect(total.rowsRead == 20 && total.owedRows == 4 && total.duplicates == 2 && total.owedMetAgain == 2)
        #expect(total.newRows == 12 && total.wouldHold == 2 && total.otherShards == 6)
        #expect(total.rejectedByReason == [.invalidProfileId: 2])
        #expect(total.inputNotes == ["a note", "a note"])
        #expect(total.rejectedInputs == ["a.csv"])
    }

    /// The journal's counts replace the running ones, and the record carries every figure
    /// `runs` and `status` read back (the optional ones only when there are any).
    @Test func theJournalsCountsAndTheRecordCarryEveryFigure() {
        var ended = RunSummary()
        var rows = RowCounts()
        rows.statuses = [.restored: 3, .pending: 1]
        rows.notSent = 1
        rows.conflicts = ConflictCounts(groups: 1, rows: 2)
        ended.take(rows)
        #expect(ended.notSent == 1 && ended.conflicts == ConflictCounts(groups: 1, rows: 2))
        (ended.owedNotTakenUp, ended.owedUnanswered, ended.kept, ended.unrecordedRequests) = (4, 5, 6, 7)
        (ended.otherShardsOwed, ended.throttleEvents, ended.inputComplete) = (8, 9, true)
        ended.stoppedAt = "2026-12-07T10:00:00.000Z"
        let record = ended.record
        #expect(record.notSent == 1 && record.owedNotTakenUp == 4 && record.owedUnanswered == 5 && record.kept == 6)
        #expect(record.unrecordedRequests == 7 && record.otherShardsOwed == 8 && record.throttleEvents == 9)
        #expect(record.inputComplete == true && record.stoppedAt == "2026-12-07T10:00:00.000Z")
        let quiet = RunSummary().record
        #expect(quiet.owedUnanswered == nil && quiet.unrecordedRequests == nil && quiet.otherShardsOwed == nil)
    }

    @Test func theFirstLineSaysHowTheRunEndedAndWhatItSent() {
        #expect(lines(summary { _ in }).first == "run finished in 2.0s: 0 rows read, 0 requests, 0 retries")
        #expect(
            lines(summary { ($0.stopCause, $0.requests) = (.signal, 4) }).first
                == "run stopped after 2.0s: 0 rows read, 4 requests (2/s), 0 retries")
        #expect(
            lines(summary { ($0.durationSeconds, $0.requests) = (0, 4) }).first
                == "run finished in 0.0s: 0 rows read, 4 requests, 0 retries", "no rate without time")
        #expect(
            lines(summary { ($0.requests, $0.unrecordedRequests) = (4, 1) }).first?.contains(
                "4 requests (2/s), 1 of them sent but not recorded") == true)
        #expect(lines(summary { $0.dryRun = true }).first?.hasPrefix("dry run (nothing sent) finished in") == true)
    }

    /// A dry run says what a run would send and hold, and the command that would.
    @Test func aDryRunSaysWhatARunWouldSendAndHold() {
        let dry = lines(
            summary {
                ($0.dryRun, $0.wouldSend, $0.newRows, $0.wouldHold, $0.owedRows) = (true, 7, 6, 1, 2)
            })
        #expect(dry.contains("  would send: 7 (5 new, 2 from the journal)"))
        #expect(dry.contains("  would hold (transaction claimed by another profile): 1"))
        #expect(dry.contains("send them with: botsi-restore run --journal j.sqlite"))
        let nothing = lines(summary { ($0.dryRun, $0.rowsRead) = (true, 3) })
        #expect(!nothing.contains { $0.contains("would hold") || $0.hasPrefix("send them with") }, "\(nothing)")
    }

    /// Each count has its line when there is one to tell, and none when it is zero.
    @Test func eachCountHasItsLineOnlyWhenItIsNotZero() {
        let told = lines(
            summary {
                $0.codes = [
                    StatusCode(.pending, "http_503"): 2, StatusCode(.nothingToRestore, "nothing_to_restore"): 1,
                ]
                ($0.notSent, $0.owedNotTakenUp, $0.kept, $0.owedUnanswered) = (1, 2, 3, 4)
                ($0.duplicates, $0.owedMetAgain, $0.recoveredInFlight, $0.recoveredMarks) = (5, 6, 7, 8)
                ($0.retryBudgetExhausted, $0.otherShards, $0.otherShardsOwed) = (9, 10, 11)
            })
        let expected = [
            "  nothing_to_restore: 1", "  pending (http_503): 2",
            "  of the pending rows, not sent before the run stopped: 1",
            "  owed by the journal, not sent before the run stopped: 2",
            "  resent without a definitive answer, kept their earlier status: 3",
            "  of those, stopped before an answer and still owed to the selection: 4",
            "  duplicates (same pair again, sent once): 5",
            "  rows the journal owed, met again in the input (one row each, never sent twice): 6",
            "  rows left in flight by an earlier run, pending again: 7",
            "  final rows an earlier run was resending when it died, kept as they were: 8",
            "  retries refused because the retry budget ran out: 9 (the service was failing most requests)",
            "  rows of other shards, skipped: 10", "  owed by the journal to other shards, not sent: 11",
        ]
        for line in expected { #expect(told.contains(line), "\(line)") }
        let none = lines(summary { _ in })
        for line in expected {
            let label = String(line.prefix { $0 != ":" })
            #expect(!none.contains { $0.hasPrefix(label + ":") }, "\(label) with nothing to count")
        }
    }

    @Test func throttlingSaysHowLowItWentAndWhereItEnded() {
        let ended = lines(summary { ($0.throttleEvents, $0.lowestThrottledRate, $0.finalThrottledRate) = (2, 3.5, 7) })
        #expect(
            ended.contains(
                "  throttled 2 times by 429/503 replies: slowed to 3.5 requests/s at the lowest, 7.0/s at the end"))
        let free = lines(summary { ($0.throttleEvents, $0.lowestThrottledRate) = (1, 3.5) })
        #expect(free.contains { $0.hasSuffix("3.5 requests/s at the lowest, unthrottled at the end") })
    }

    /// "Nothing owed" only when the run read everything there was and an earlier run left no input unread.
    @Test func nothingOwedIsSaidOnlyWhenNothingIsLeftToRead() {
        let nothing = "nothing owed: journal j.sqlite holds no row to send; name input files to send new pairs"
        #expect(lines(summary { _ in }).contains(nothing))
        #expect(!lines(summary { $0.inputComplete = false }).contains(nothing))
        #expect(!lines(summary { $0.earlierUnreadInputs = ["a.csv"] }).contains(nothing))
        #expect(
            lines(summary { $0.inputNotes = ["a"] }).contains(
                "nothing to send: the input held no row, and journal j.sqlite owes none"))
        #expect(
            lines(summary { $0.inputNotes = ["a", "b"] }).contains(
                "nothing to send: the inputs held no row, and journal j.sqlite owes none"))
        // Held rows are told of only when there are some.
        let noneHeld = lines(summary { $0.releaseCommand = "botsi-restore run --journal j.sqlite --release-held" })
        #expect(!noneHeld.contains { $0.hasPrefix("it holds") }, "\(noneHeld)")
    }

    /// A failed journal: the counts are what it holds, unless it was taken away (then none are given).
    @Test func aFailedJournalsCountsAreQualifiedUnlessTheJournalWasTaken() {
        let qualifier =
            "the counts above are what the journal holds: the outcomes of the last unfinished batch were not committed"
        #expect(lines(summary { $0.stopCause = .journalFailure }).contains(qualifier))
        let taken = lines(summary { ($0.stopCause, $0.journalTaken) = (.journalFailure, true) })
        #expect(!taken.contains(qualifier))
        #expect(taken.contains { $0.hasPrefix("if it was moved, put it back and run again;") })
    }

    /// The other shards' rows, forgotten inputs and rejected rows: a dry run says what a run would do.
    @Test func aDryRunNeitherSendsOtherShardsRowsNorForgetsNorRecordsRejections() {
        let run = lines(
            summary {
                ($0.otherShardsOwed, $0.otherShardsCommand) = (2, "botsi-restore run --journal j.sqlite --rate 10")
                $0.forgottenInputs = ["a.csv"]
                ($0.rowsRead, $0.rejectedByReason) = (3, [.invalidProfileId: 1])
            })
        #expect(run.contains { $0.hasSuffix(": botsi-restore run --journal j.sqlite --rate 10") })
        #expect(run.contains { $0.hasPrefix("forgot a.csv:") })
        #expect(run.contains("see rejected rows with: botsi-restore report --journal j.sqlite --status rejected"))
        let dry = lines(
            summary {
                $0.dryRun = true
                ($0.otherShardsOwed, $0.otherShardsCommand) = (2, "botsi-restore run --journal j.sqlite --rate 10")
                $0.forgottenInputs = ["a.csv"]
                ($0.rowsRead, $0.rejectedByReason) = (3, [.invalidProfileId: 1])
            })
        #expect(!dry.contains { $0.hasSuffix(": botsi-restore run --journal j.sqlite --rate 10") })
        #expect(dry.contains { $0.hasPrefix("would forget a.csv:") })
        #expect(dry.contains { $0.hasPrefix("a run records the rejected rows; see them then with:") })
        // Every row rejected is said only of a run that ended on its own.
        let stopped = lines(
            summary { ($0.rowsRead, $0.rejectedByReason, $0.stopCause) = (2, [.invalidProfileId: 2], .signal) })
        #expect(!stopped.contains { $0.hasPrefix("every row read was rejected") })
    }

    /// A dry run holds nothing: the held rows' way out is a real run's line.
    @Test func heldRowsAreToldOfByARealRun() {
        let real = lines(summary { $0.statuses = [.held: 2] })
        #expect(real.contains { $0.hasPrefix("held 2 rows whose transaction another profile claimed first") })
        #expect(
            real.contains {
                $0.hasSuffix("review them, then send them with: botsi-restore run --journal j.sqlite --release-held")
            })
        let dry = lines(summary { ($0.statuses, $0.dryRun) = ([.held: 2], true) })
        #expect(!dry.contains { $0.hasPrefix("held ") })
    }

    /// What to do next after a failure threshold, a wrong base URL and a stop with rows owed.
    @Test func theAdviceFollowsWhatStoppedTheRunAndWhatIsOwed() {
        let failing = lines(summary { ($0.stopCause, $0.statuses) = (.failureThreshold, [.pending: 1]) })
        #expect(
            failing.contains {
                $0.hasPrefix("look at the failures with: botsi-restore report --journal j.sqlite --run latest")
            })
        #expect(failing.contains("then send the 1 pending row with: botsi-restore run --journal j.sqlite"))
        let kept = lines(summary { ($0.stopCause, $0.kept, $0.statuses) = (.failureThreshold, 1, [.restored: 1]) })
        #expect(kept.contains { $0.hasPrefix("look at the failures on the page (resent rows that failed kept") })
        // Every row failed a bare 404, or the route-not-found reply: the base URL is wrong.
        for code in ["http_404", "route_not_found"] {
            let routeless = lines(
                summary {
                    $0.statuses = [.failed: 2]
                    $0.codes = [StatusCode(.failed, code): 2]
                })
            #expect(routeless.contains { $0.hasPrefix("every row failed with 404 and no Botsi code") }, "\(code)")
        }
        let some = lines(
            summary {
                $0.statuses = [.failed: 2, .restored: 1]
                $0.codes = [StatusCode(.failed, "http_404"): 2, StatusCode(.restored, nil): 1]
            })
        #expect(!some.contains { $0.hasPrefix("every row failed with 404") }, "a row restored: the route is there")
        // A stopped selection owes its rows to the next one, pending or not; a finished run without owed rows says nothing.
        let selection = lines(
            summary {
                ($0.stopCause, $0.stopMessage, $0.owedNotTakenUp, $0.kept, $0.owedUnanswered) = (
                    .signal, "stopped", 2, 1, 1
                )
            })
        #expect(selection.contains("send the 3 rows the journal still owes with: botsi-restore run --journal j.sqlite"))
        #expect(!selection.contains { $0.hasPrefix("see the pending rows") })
        let finished = lines(summary { $0.statuses = [.restored: 3] })
        #expect(!finished.contains { $0.contains("botsi-restore status") || $0.contains(" with: ") }, "\(finished)")
        // The journal could not be read back: what it owes is unknown, so the command is given.
        let unreadable = lines(summary { ($0.stopCause, $0.countsUnreadable) = (.journalFailure, true) })
        #expect(
            unreadable.contains { $0.hasSuffix("go on with: botsi-restore run --journal j.sqlite") }, "\(unreadable)")
        // An input not read to its end by a run that ended on its own is not "the input the run did not finish".
        let unstopped = lines(summary { ($0.inputComplete, $0.statuses) = (false, [.pending: 1]) })
        #expect(!unstopped.contains { $0.contains("read the input the run did not finish") })
        #expect(
            unstopped.contains("see the pending rows with: botsi-restore report --journal j.sqlite --status pending"))
    }
}
