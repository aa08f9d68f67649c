import Foundation
import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

@Suite struct PacingDebug {
    /// Unlimited server, the throughput benchmark's shape: how long the start costs.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BOTSI_PACING_DEBUG"] != nil))
    func unlimited() {
        for adaptive in [true, false] {
            var s = PacingScenario()
            s.limit = 1_000_000
            s.rowsPerProcess = 100_000
            s.latency = 0.05
            s.jitter = 0.001
            s.pacing = PacingConfiguration(concurrency: 256, adaptive: adaptive)
            let outcome = PacingModel.run(s)
            print(adaptive, outcome.end, Double(s.rowsPerProcess) / outcome.end)
        }
    }
}
