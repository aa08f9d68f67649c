import BotsiInput
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiRestore

/// Progress counts an input as read as far as the run took its records, not as far as the input
/// thread read ahead (a buffer of 4,096 records and a window of bytes): a first-day review saw
/// "45% read" at 1,120 rows of 20,000.
@Suite struct InputPumpProgressTests {
    @Test func bytesReadAreThoseBehindTheRecordsTaken() throws {
        let workspace = Workspace()
        let header = "profileId,originalTransactionId\n"
        let rows = (0..<20_000).map { "profile-\($0 + 100_000),\(2_000_000_000_000_000 + $0)\n" }
        let path = workspace.write("in.csv", header + rows.joined())
        let opened = DispatchSemaphore(value: 0)
        let pump = InputPump(paths: [path], format: nil, options: InputOptions()) { opened.signal() }
        #expect(opened.wait(timeout: .now() + 30) == .success)
        // Let the thread fill its buffer, as it does while the run waits on its first replies.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(pump.bytesRead == 0, "nothing taken, nothing read: \(pump.bytesRead)")

        var taken = 0
        while taken < 100 {
            let events = pump.take(limit: 100 - taken)
            taken += events.count
            if events.isEmpty { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(pump.bytesRead == Int64((header + rows.prefix(100).joined()).utf8.count))

        var finished = false
        while !finished {
            let events = pump.take(limit: 1_000)
            finished = events.contains { if case .finished = $0 { true } else { false } }
            if events.isEmpty { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(pump.bytesRead == Int64((header + rows.joined()).utf8.count))
        pump.cancel()
    }
}
