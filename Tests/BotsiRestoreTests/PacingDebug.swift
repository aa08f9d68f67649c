import Foundation
import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

@Suite struct PacingDebug {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BOTSI_PACING_DEBUG"] != nil))
    func pacerAlone() {
        var s = PacingScenario()
        s.kind = .bucket
        s.rowsPerProcess = 6000
        s.pacing.tuning.backoff = 0.97
        let outcome = PacingModel.run(s)
        for step in 8..<20 {
            let from = Double(step) / 4
            let record = outcome.processes[0]
            let samples = record.timeline.filter { $0.time >= from && $0.time < from + 0.25 }
            print(from, record.accepted.filter { $0 >= from && $0 < from + 0.25 }.count, samples.map { "\($0.time) \($0.rate) \($0.concurrency)" })
        }
    }
}
