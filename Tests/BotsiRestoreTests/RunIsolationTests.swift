import BotsiJournal
import BotsiTestSupport
import Dispatch
import Foundation
import Testing

@testable import BotsiRestore

/// The run's state is confined to its executor, and the runtime checks it: touching it off the
/// run's queue traps (`RunExecutor.checkIsolated`), on the queue it is fine.
@Suite struct RunIsolationTests {
    /// A dry run's parts on a throw-away journal: enough for a real `ActiveRun`.
    static func makeLoop(_ workspace: Workspace) throws -> ActiveRun {
        var options = RunOptions()
        options.journalPath = workspace.journal
        options.inputs = [workspace.write("in.csv", "profileId,originalTransactionId\n")]
        options.dryRun = true
        let journal = try RunSetup.openJournal(options, startedAt: Date(), toolVersion: "test")
        let pump = InputPump(paths: options.inputs, format: nil, options: options.inputOptions) {}
        let feeder = InputFeeder(
            pump: pump, names: options.inputs, options: options, mode: OutcomePolicy.RunMode(options),
            runID: journal.writer.runID, startedAt: Date())
        let parts = RunParts(
            writer: journal.writer, feeder: feeder, pump: pump, sender: .dryRun, totalBytes: 0,
            recovered: journal.recovered, continuingFrom: journal.continuingFrom)
        return ActiveRun(
            parts: parts, options: options, startedAt: Date(), executor: RunExecutor(label: "test.run"),
            progressInterval: 1, onProgress: nil, onFinish: { _ in })
    }

    @Test func runStateTouchedOnItsQueueIsFine() throws {
        let loop = try Self.makeLoop(Workspace())
        let done = DispatchSemaphore(value: 0)
        loop.enter { loop in
            #expect(loop.phase == .running)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    @Test func runStateTouchedOffItsQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent, \.exitStatus]) {
            let run = try RunIsolationTests.makeLoop(Workspace())
            FileHandle.standardError.write(Data("made the run\n".utf8))
            RunIsolationTests.touchOffItsQueue(run)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        // The run was made, and what ended the process was a trap at the touch (the same touch on
        // the queue is fine, above), not a thrown error or an exit.
        #expect(stderr.contains("made the run") && !stderr.contains("went through"), "\(stderr)")
        guard case .signal = result?.exitStatus else {
            Issue.record("the off-queue touch did not trap: \(String(describing: result?.exitStatus))")
            return
        }
    }

    /// Off the run's queue: the runtime asks the executor, whose dispatchPrecondition traps.
    static func touchOffItsQueue(_ run: ActiveRun) {
        _ = run.assumeIsolated { $0.phase }
        FileHandle.standardError.write(Data("the touch went through\n".utf8))
    }
}
