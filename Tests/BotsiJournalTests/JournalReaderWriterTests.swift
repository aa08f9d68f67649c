import BotsiTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BotsiJournal

/// `report` and `status` read the journal while a run writes it. WAL gives each reader a
/// snapshot, so a reader never sees half a batch, and neither side waits for the other.
@Suite struct JournalReaderWriterTests {
    /// What the reader saw, shared between the two threads.
    private struct Observations {
        var counts: [Int] = []
        var longestRead: Double = 0
        var readerError: String?
        var writerError: String?
        var longestCommit: Double = 0
        var writerDone = false
    }

    @Test func readerSeesOnlyWholeBatchesAndNeitherSideWaitsForTheOther() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let batches = 200
        let batchSize = 100
        let setup = try Journal(path: path)
        let run = try StressFixture.startRun(setup)
        setup.close()

        let shared = Mutex(Observations())
        let readerStarted = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            // Start writing only once the reader is in its loop, so the two really overlap.
            readerStarted.wait()
            do {
                let writer = try Journal(path: path)
                defer { writer.close() }
                for batch in 0..<batches {
                    _ = try StressFixture.commitRestoredBatch(
                        writer, run: run, prefix: "batch\(batch)", count: batchSize)
                }
            } catch {
                shared.withLock { $0.writerError = "\(error)" }
            }
            shared.withLock { $0.writerDone = true }
        }
        DispatchQueue.global().async(group: group) {
            do {
                let reader = try Journal(path: path, create: false, readOnly: true)
                defer { reader.close() }
                readerStarted.signal()
                var finalPass = false
                while !finalPass {
                    // One more pass after the writer is done, so the last batch is seen too.
                    finalPass = shared.withLock { $0.writerDone }
                    var count = 0
                    try reader.forEachReportRecord(ReportFilter()) { _ in count += 1 }
                    shared.withLock { $0.counts.append(count) }
                }
            } catch {
                shared.withLock { $0.readerError = "\(error)" }
                readerStarted.signal()
            }
        }
        // A generous bound: a reader blocking the writer (or the reverse) would hit SQLite's
        // 5-second busy timeout and fail with an error long before this.
        #expect(group.wait(timeout: .now() + 300) == .success, "reader or writer hung")

        let observed = shared.withLock { $0 }
        #expect(observed.writerError == nil, "\(observed.writerError ?? "")")
        #expect(observed.readerError == nil, "\(observed.readerError ?? "")")
        let torn = observed.counts.filter { $0 % batchSize != 0 }
        #expect(torn.isEmpty, "reads saw half-written batches: \(torn.prefix(10))")
        #expect(observed.counts.last == batches * batchSize)
        #expect(
            observed.counts.contains { $0 > 0 && $0 < batches * batchSize },
            "the reader must have read while the writer wrote: \(observed.counts.count) reads")
        #expect(zip(observed.counts, observed.counts.dropFirst()).allSatisfy { $0 <= $1 }, "a snapshot went back")
        // How long a read or a commit took is not asserted: one side waiting for the other would
        // end in SQLITE_BUSY after the 5-second busy timeout, an error the checks above report,
        // while a slow machine only makes both slow (under the thread sanitizer on a busy 2-core
        // machine a whole read took 4.7 s).
    }
}
