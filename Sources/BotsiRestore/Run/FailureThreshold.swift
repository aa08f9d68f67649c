import BotsiJournal
import Foundation

/// S3 Batch Operations style: never keep going (or report success) when most rows fail. Counts
/// the rows a run sent and settled, and how many of them failed or ran out of attempts; once
/// `minSample` rows are in, a share above `maxFailureRate` percent stops the run.
struct FailureThreshold {
    let maxFailureRate: Double
    let minSample: Int
    private(set) var settled = 0
    private(set) var bad = 0

    init(maxFailureRate: Double, minSample: Int) {
        self.maxFailureRate = maxFailureRate
        self.minSample = minSample
    }

    /// Counts a row whose sending ended with `status` (a row that got no answer counts as
    /// `pending`). Returns the stop when the share of bad rows crosses the threshold.
    mutating func record(_ status: ItemStatus) -> RunStop? {
        settled += 1
        if status == .failed || status == .pending { bad += 1 }
        guard settled >= minSample else { return nil }
        let percent = Double(bad) * 100 / Double(settled)
        guard percent > maxFailureRate else { return nil }
        let share = String(format: "%.0f%%", percent)
        let threshold = String(format: "%.0f%%", maxFailureRate)
        return .failureThreshold(
            message:
                "\(share) of the \(settled) rows sent failed or ran out of attempts (threshold \(threshold) after \(minSample) rows); the rows not sent are left as they were"
        )
    }
}
