import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Testing

/// The runner arms one timer for the scheduler's next wake-up. These runs would take many times
/// longer if that timer fired late (or never: the run would not end), since between replies
/// nothing else wakes a paced run or a run whose rows all wait out a backoff.
@Suite struct RunnerWakeTests {
    @Test(.timingHolds) func aPacedRunSendsAtItsRate() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let rows = (0..<40).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.rate = 40
            options.concurrency = 1
        }
        #expect(summary.exitCode == 0)
        #expect(summary.requests == 40)
        // About a second at 40 a second; each late wake-up would add its lateness per row.
        #expect(summary.durationSeconds < 4, "\(summary.durationSeconds) s")
    }

    @Test(.timingHolds) func retriesGoAgainWhenTheirBackoffEnds() throws {
        let harness = try Harness { options in
            options.faultRate = 1
            options.faults = [.unavailable]
            options.retryAfterSeconds = 0
        }
        defer { harness.simulator.stop() }
        let rows = (0..<5).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.maxAttempts = 6
            options.backoffBase = 0.01
            options.backoffCap = 0.02
            options.adaptive = false
        }
        #expect(summary.exitCode == 75)
        #expect(summary.requests == 30)
        #expect(summary.retries == 25)
        // Five backoffs of at most 20 ms per row, the rows side by side.
        #expect(summary.durationSeconds < 2.5, "\(summary.durationSeconds) s")
    }
}
