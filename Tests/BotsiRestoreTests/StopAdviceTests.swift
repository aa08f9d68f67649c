import BotsiBasics
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

    @Test func aRunThatEndsOfItselfWithNothingOwedSaysNothingMore() {
        var summary = RunSummary()
        summary.inputComplete = true
        summary.rowsRead = 3
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        #expect(!summary.render(journalPath: "j.sqlite").contains("status --journal"))
    }
}
