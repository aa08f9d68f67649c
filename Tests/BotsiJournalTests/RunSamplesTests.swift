import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

/// The pacer's samples (`run_samples`) read back as the HTML page draws them: per run, in time
/// order, a sample of one instant written again replaced rather than doubled.
@Suite struct RunSamplesTests {
    @Test func samplesReadBackPerRunInTimeOrder() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("j.sqlite"))
        defer { journal.close() }
        let (first, second) = try journal.transaction { () throws(JournalError) in
            (
                try journal.startRun(startedAt: Date(), toolVersion: "t", host: "h", pid: 1, optionsJSON: "{}"),
                try journal.startRun(startedAt: Date(), toolVersion: "t", host: "h", pid: 2, optionsJSON: "{}")
            )
        }
        func sample(_ run: Int64, at: Int64, rate: Double?, concurrency: Int) -> RunSample {
            RunSample(
                runID: run, at: at, rowsRead: 10, requests: 5, inFlight: 2, sendRateLimit: rate,
                concurrency: concurrency)
        }
        try journal.transaction { () throws(JournalError) in
            try journal.recordSample(sample(first, at: 2_000, rate: 40, concurrency: 8))
            try journal.recordSample(sample(first, at: 1_000, rate: nil, concurrency: 16))
            try journal.recordSample(sample(second, at: 1_500, rate: 10, concurrency: 4))
            try journal.recordSample(sample(first, at: 2_000, rate: 30, concurrency: 6))
        }
        #expect(
            try journal.pacerSamples(runID: first) == [
                PacerSample(atMilliseconds: 1_000, sendRateLimit: nil, concurrency: 16),
                PacerSample(atMilliseconds: 2_000, sendRateLimit: 30, concurrency: 6),
            ])
        #expect(try journal.pacerSamples(runID: second).map(\.concurrency) == [4])
    }
}
