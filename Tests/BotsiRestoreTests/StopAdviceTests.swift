import BotsiBasics
import BotsiJournal
import Testing

@testable import BotsiRestore

/// A stop names the journal (the lifecycle model's rule R8), also when it leaves nothing owed:
/// a window that ended once every row was final, a signal after the last reply, a refused key.
@Suite struct StopAdviceTests {
    @Test(arguments: StopCause.allCases)
    func aStopThatLeavesNothingOwedStillNamesTheJournal(_ cause: StopCause) {
        var summary = RunSummary()
        summary.stopCause = cause
        summary.stopMessage = "the run stopped"
        summary.inputComplete = true
        summary.nextCommand = "botsi-restore run --journal '/data/night 1.sqlite'"
        let rendered = summary.render(journalPath: "/data/night 1.sqlite")
        #expect(
            rendered.contains("botsi-restore status --journal '/data/night 1.sqlite'"),
            "a stop by \(cause) with nothing owed: \(rendered)")
    }

    /// An operator review: "1 requests", "send the 1 pending rows".
    @Test func oneOfAnythingIsSaidInTheSingular() {
        var summary = RunSummary()
        summary.durationSeconds = 2
        (summary.rowsRead, summary.requests, summary.retries) = (1, 1, 1)
        summary.statuses = [.pending: 1]
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        let rendered = summary.render(journalPath: "j.sqlite")
        #expect(rendered.hasPrefix("run finished in 2.0s: 1 row read, 1 request (0/s), 1 retry\n"), "\(rendered)")
        #expect(rendered.contains("send the 1 pending row with: "), "\(rendered)")
        (summary.rowsRead, summary.requests, summary.retries) = (2, 0, 0)
        #expect(
            summary.render(journalPath: "j.sqlite").hasPrefix(
                "run finished in 2.0s: 2 rows read, 0 requests, 0 retries"))
    }

    /// The same review, later: "throttled 1 times", "held 1 rows", "send the 1 rows the journal
    /// still owes", "it holds 1 rows for review".
    @Test func oneThrottleOneHeldRowAndOneOwedRowAreSaidInTheSingular() {
        var summary = RunSummary()
        summary.durationSeconds = 2
        (summary.throttleEvents, summary.lowestThrottledRate) = (1, 4)
        summary.statuses = [.held: 1]
        (summary.owedUnanswered, summary.kept) = (1, 1)
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        summary.releaseCommand = "botsi-restore run --journal j.sqlite --release-held"
        let rendered = summary.render(journalPath: "j.sqlite")
        #expect(rendered.contains("throttled 1 time by 429/503 replies"), "\(rendered)")
        #expect(rendered.contains("held 1 row whose transaction"), "\(rendered)")
        #expect(rendered.contains("review it, then send it with: "), "\(rendered)")
        #expect(rendered.contains("send the 1 row the journal still owes"), "\(rendered)")
        var quiet = RunSummary()
        (quiet.inputComplete, quiet.heldInJournal) = (true, 1)
        quiet.releaseCommand = summary.releaseCommand
        let nothing = quiet.render(journalPath: "j.sqlite")
        #expect(nothing.contains("it holds 1 row for review"), "\(nothing)")
        #expect(nothing.contains("see it with ") && nothing.contains("then send it with: "), "\(nothing)")
    }

    /// Each outcome's line gives its code when the code says more than the status, and only then.
    @Test func anOutcomesCodeIsGivenWhenItSaysMore() {
        var summary = RunSummary()
        summary.durationSeconds = 2
        summary.codes = [
            StatusCode(.nothingToRestore, "nothing_to_restore"): 20, StatusCode(.pending, "http_503"): 6,
            StatusCode(.restored, nil): 3,
        ]
        let lines = summary.render(journalPath: "j.sqlite").split(separator: "\n").map(String.init)
        #expect(lines.contains("  nothing_to_restore: 20"), "\(lines)")
        #expect(lines.contains("  pending (http_503): 6"), "\(lines)")
        #expect(lines.contains("  restored: 3"), "\(lines)")
    }

    /// A chaos review: a drained stop's summary opened with "run finished in", then said "stopped:".
    @Test(arguments: StopCause.allCases)
    func aStoppedRunsFirstLineSaysItStopped(_ cause: StopCause) {
        var summary = RunSummary()
        summary.durationSeconds = 12
        summary.stopCause = cause
        let first = summary.render(journalPath: "j.sqlite").split(separator: "\n").first ?? ""
        #expect(first.hasPrefix("run stopped after 12"), "a stop by \(cause): \(first)")
        summary.stopCause = nil
        #expect(summary.render(journalPath: "j.sqlite").hasPrefix("run finished in 12"))
        summary.dryRun = true
        #expect(summary.render(journalPath: "j.sqlite").hasPrefix("dry run (nothing sent) finished in 12"))
        summary.stopCause = cause
        #expect(summary.render(journalPath: "j.sqlite").hasPrefix("dry run (nothing sent) stopped after 12"))
    }

    /// A chaos review: after a truncated `.gz` (65) the next command read the same truncated file,
    /// offered as if it would finish the input.
    @Test func aDamagedInputIsReplacedBeforeTheNextCommand() {
        var summary = RunSummary()
        summary.stopCause = .inputDamaged
        summary.stopMessage = "Input 'in.csv.gz' ends in the middle of the compressed data"
        summary.statuses = [.pending: 3]
        summary.nextCommand = "botsi-restore run in.csv.gz --journal j.sqlite"
        let rendered = summary.render(journalPath: "j.sqlite")
        #expect(
            rendered.contains(
                "replace the damaged input with an intact copy first (download or export it again);\n"
                    + "then send the 3 pending rows and read the input the run did not finish with: "
                    + "botsi-restore run in.csv.gz --journal j.sqlite"), "\(rendered)")
    }

    @Test func aRunThatEndsOfItselfWithNothingOwedSaysNothingMore() {
        var summary = RunSummary()
        summary.inputComplete = true
        summary.rowsRead = 3
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        #expect(!summary.render(journalPath: "j.sqlite").contains("status --journal"))
    }
}
