import BotsiBasics
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("runs the service stops")
struct StopTests {
    @Test func aRefusedKeyStopsTheRunWith77AfterAtMostConcurrencyRequests() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.keys = ["key-A-accepted"]
            options.latencyMilliseconds = 20
        }
        defer { simulator.stop() }
        let rows = Pair.generate(100)
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4"]), key: "key-B-refused",
            in: workspace)
        #expect(finished.status == 77, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("BOTSI_SECRET_KEY"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("Bearer"), "stderr: \(finished.stderr)")
        // 401s are not counted per pair, so count what reached the server at all.
        #expect(simulator.stats().statusCounts["401"] ?? 0 <= 4)
        #expect(simulator.stats().requests <= 4)
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.items.count == rows.count)
        #expect(journal.pairs { $0 == "pending" } == Set(rows), "rows not pending after a 401")
    }

    /// With nothing pacing the sends the client holds a few requests queued behind its busy
    /// connections (a sixteenth of the concurrency, at least one); a stop takes them back unsent, so
    /// a run stopped before any reply has sent no more than its concurrency, and the rows it queued
    /// go back to pending as they were.
    @Test func aStopTakesBackWhatTheClientQueuedUnsent() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 1500 }
        defer { simulator.stop() }
        let rows = Pair.generate(50)
        let child = try Child(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4", "--no-adaptive"]),
            key: Simulator.defaultKey, in: workspace)
        let deadline = Date().addingTimeInterval(10)
        while simulator.stats().inFlight < 4 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(simulator.stats().inFlight == 4, "the run never had 4 requests at the server")
        child.send(SIGTERM)
        let finished = child.wait(timeout: 30)
        #expect(finished.status == ExitCode.terminated, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 4, "a request went out after the stop")
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.pairs { $0 == "in_flight" }.isEmpty, "rows left in flight")
        #expect(journal.pairs { $0 == "pending" }.count == 46)
    }

    @Test func anAppWithoutIOSSettingsStopsTheRunWith78() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.mode = .noIOSSettings }
        defer { simulator.stop() }
        let rows = Pair.generate(40)
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 78, "stderr: \(finished.stderr)")
        #expect(finished.stderr.localizedCaseInsensitiveContains("App Store"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests <= 4)
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.pairs { $0 == "pending" } == Set(rows), "rows not pending after No ios settings found")
    }
}
