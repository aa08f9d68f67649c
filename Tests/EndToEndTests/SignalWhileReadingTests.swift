import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A signal is honoured while the reader skips an over-long line (issue 20, item 2): the input is
/// read on a thread of its own, so a stop never waits behind it. Before, `cat /dev/zero | tr '\0' a`
/// held a run for 30 s and more after SIGTERM, and the row read before the long line was never
/// journaled.
@Suite("signals while reading")
struct SignalWhileReadingTests {
    @Test(arguments: zip([SIGTERM, SIGINT], [Int32(143), Int32(130)]))
    func aSignalStopsARunWhoseReaderIsInsideAnEndlessLine(stop: Int32, expectedStatus: Int32) throws {
        signal(SIGPIPE, SIG_IGN)
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let child = try Child(
            runArguments(["-"], workspace, simulator, ["--format", "csv"]), key: Simulator.defaultKey, in: workspace,
            holdStdin: true)
        // A good row, then a line that never ends, fed for as long as the child reads.
        child.writeStdin(Data("profileId,originalTransactionId\nbefore-the-long-line,2000000000000002\n".utf8))
        let filler = Data(repeating: UInt8(ascii: "a"), count: 16_384)
        let fed = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while child.isRunning, child.tryWriteStdin(filler) {}
            fed.signal()
        }
        defer { _ = fed.wait(timeout: .now() + 5) }
        // The row before the long line goes out and is answered while the reader is in the line.
        let sent = eventually(timeout: 30) { (JournalView.read(workspace.journal)?.finalPairs.count ?? 0) == 1 }
        child.send(stop)
        let stopped = Date()
        let ended = child.wait(timeout: 30)
        let seconds = Date().timeIntervalSince(stopped)
        try #require(sent, "the row before the long line was not journaled: \(ended.stderr)")
        #expect(!ended.timedOut, "still running 30 s after the signal: \(ended.stderr)")
        #expect(ended.status == expectedStatus && !ended.killedBySignal, "after \(seconds) s: \(ended.stderr)")
        let journal = try #require(JournalView.read(workspace.journal, integrity: true))
        #expect(journal.integrity == "ok")
        #expect(journal.finalPairs == [Pair("before-the-long-line", "2000000000000002")])
        let run = try SQLiteTool.execute(workspace.journal, "SELECT state, exit_code FROM runs")
        #expect(run.trimmingCharacters(in: .newlines) == "stopped|\(expectedStatus)", "the run's record: \(run)")
    }
}
