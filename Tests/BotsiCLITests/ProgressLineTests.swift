import BotsiJournal
import Foundation
import Testing

@testable import BotsiCLI
@testable import BotsiRestore

/// The live progress line (issue 19 items 6, 10, 11): what its ETA covers, how it fits a
/// terminal's width, and what the slots wait on.
@Suite struct ProgressLineTests {
    /// A busy moment of a run: every field shown.
    static func busy(inputComplete: Bool = false, stopping: Bool = false, slow: Int = 0) -> RunProgress {
        var progress = RunProgress(
            elapsed: 42, rowsRead: 12_345, bytesRead: 190_000, totalBytes: 1_000_000, finished: 11_000,
            inFlight: 16, waitingToRetry: 3, requests: 11_400, retries: 57,
            statuses: [.restored: 10_500, .nothingToRestore: 480, .pending: 20], rejected: 4, skipped: 2,
            duplicates: 0, recentRate: 100, stopping: stopping ? "interrupted (SIGINT)" : nil,
            throttledRate: 80.5, concurrencyLimit: 16)
        progress.inputComplete = inputComplete
        progress.outstanding = 1_000
        progress.slowReplies = slow
        progress.longestWait = 25
        return progress
    }

    @Test func theETASaysItCoversOnlyTheRowsReadUntilTheInputIsReadToItsEnd() {
        let reading = ProgressPrinter.line(Self.busy())
        #expect(reading.contains("| ETA 10s for the rows read so far |"), "\(reading)")
        let read = ProgressPrinter.line(Self.busy(inputComplete: true))
        #expect(read.contains("| ETA 10s |"), "\(read)")
        #expect(!read.contains("so far") && !read.contains(">"), "\(read)")
        // Narrow, the marker stays: '>' says the rows not read yet are not in it.
        #expect(ProgressPrinter.line(Self.busy(), width: 60).contains("ETA >10s"))
        #expect(!ProgressPrinter.line(Self.busy(stopping: true)).contains("ETA"), "a stopping run sends no more")
    }

    @Test(arguments: [200, 120, 80, 60, 40, 20])
    func theLineFitsTheWidthLeavingTheLastColumnFree(width: Int) {
        for progress in [Self.busy(), Self.busy(inputComplete: true), Self.busy(stopping: true, slow: 12)] {
            let line = ProgressPrinter.line(progress, width: width)
            #expect(line.count <= width - 1, "\(line.count) columns at \(width): \(line)")
            if width >= 40 { #expect(line.contains("11000 done"), "\(line)") }
            if width >= 60, progress.stopping != nil { #expect(line.contains("stopping"), "\(line)") }
        }
    }

    @Test func oneRowAndOneRetryAreSaidInTheSingular() {
        var progress = Self.busy()
        (progress.rowsRead, progress.retries) = (1, 1)
        let line = ProgressPrinter.line(progress, width: 400)
        #expect(line.contains("| 1 row |") && line.contains("| 1 retry |"), "\(line)")
    }

    @Test func fieldsGoLeastImportantFirstAndTheWideLineKeepsThemAll() {
        let wide = ProgressPrinter.line(Self.busy(), width: 400)
        #expect(wide == ProgressPrinter.line(Self.busy()), "a wide terminal gets the whole line")
        for field in [
            "19% read", "12345 rows", "100 req/s", "16 in flight", "3 waiting to retry", "57 retries",
            "4 rejected", "2 already done", "throttled to 80.5/s, concurrency 16",
        ] {
            #expect(wide.contains(field), "\(field): \(wide)")
        }
        let eighty = ProgressPrinter.line(Self.busy(), width: 80)
        #expect(eighty.hasPrefix("19% read | ETA >10s | 11000 done | 100 req/s | 16 in flight"), "\(eighty)")
        #expect(!eighty.contains("rows |") && !eighty.contains("restored"), "\(eighty)")
        let sixty = ProgressPrinter.line(Self.busy(), width: 60)
        #expect(sixty == "19% read | ETA >10s | 11000 done | 100 req/s | 16 in flight", "\(sixty)")
    }

    @Test func theLineSaysHowManySlotsWaitOnSlowRepliesAndTheDrainKeepsIt() {
        let wide = ProgressPrinter.line(Self.busy(slow: 12))
        #expect(
            wide.contains("12 of 16 slots waiting on replies slower than 10s (longest 25s, --timeout 30s)"), "\(wide)")
        let eighty = ProgressPrinter.line(Self.busy(slow: 12), width: 80)
        #expect(eighty.contains("12/16 slots wait >10s"), "\(eighty)")
        // Stopping, what the drain waits on outranks the rate and the read position.
        let draining = ProgressPrinter.line(Self.busy(stopping: true, slow: 1), width: 60)
        #expect(draining.contains("16 in flight") && draining.contains("1/16 slots wait >10s"), "\(draining)")
        #expect(draining.contains("stopping"), "\(draining)")
        #expect(!ProgressPrinter.line(Self.busy()).contains("slots"), "no slow reply, no field")
    }

    @Test func theJSONLogLineCarriesTheSameFacts() {
        let fields = ProgressPrinter.fields(Self.busy(slow: 2))
        #expect(fields["inputComplete"] as? Bool == false)
        #expect(fields["etaSeconds"] as? Double == 10)
        #expect(fields["slowReplies"] as? Int == 2 && fields["slowAfterSeconds"] as? Double == 10)
    }

    @Test func theWidthComesFromColumnsWhenStderrIsNoTerminal() {
        // Under `swift test` stderr is a pipe or a file: the window size is not there to ask.
        guard isatty(STDERR_FILENO) == 0 else { return }
        #expect(TerminalWidth.current(environment: ["COLUMNS": "57"]) == 57)
        #expect(TerminalWidth.current(environment: ["COLUMNS": "x"]) == nil)
        #expect(TerminalWidth.current(environment: [:]) == nil)
    }
}
