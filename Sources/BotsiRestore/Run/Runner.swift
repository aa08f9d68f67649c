import BotsiAPI
import BotsiFiles
import BotsiJournal
import Dispatch
import Foundation

/// Runs one job: reads the inputs, asks the journal what is left, sends it with bounded
/// concurrency, retries what is transient and journals every outcome. The one place that ties
/// Input, API and Journal together — as wiring only: `InputFeeder` hands it rows,
/// `SendScheduler` says which to send when, `ReplyDecider` (the lifecycle table) decides each
/// reply, `FailureThreshold` and `StopReason` decide stopping, `ProgressTracker` tells progress,
/// and `RunJournalWriter` performs every write.
///
/// All mutable state below is touched only on `queue` (a serial queue), which is what makes the
/// `@unchecked Sendable` true; the curl driver, timers and signal handlers talk to it by `queue.async`.
public final class Runner: @unchecked Sendable {
    private let options: RunOptions
    private let apiKey: String
    private let toolVersion: String
    private let onProgress: (@Sendable (RunProgress) -> Void)?
    private let queue = DispatchQueue(label: "botsi-restore.runner")
    private let done = DispatchSemaphore(value: 0)
    private let startedAt = Date()

    private var writer: RunJournalWriter?
    private var feeder: InputFeeder?
    private var client: RestoreClient?
    private var scheduler: SendScheduler<RunRow>
    private var decider: ReplyDecider
    private var threshold: FailureThreshold
    private var progress: ProgressTracker
    private var summary = RunSummary()
    private var stopReason: StopReason?
    private var isFinished = false
    private var pumpScheduled = false
    private var housekeepingTimer: DispatchSourceTimer?
    private var wakeTimer: WakeTimer?

    public init(
        options: RunOptions, apiKey: String, toolVersion: String, progressInterval: Double = 1,
        onProgress: (@Sendable (RunProgress) -> Void)? = nil
    ) {
        self.options = options
        self.apiKey = apiKey
        self.toolVersion = toolVersion
        self.onProgress = onProgress
        scheduler = SendScheduler(pacing: PacingConfiguration(options))
        decider = ReplyDecider(options: options)
        threshold = FailureThreshold(maxFailureRate: options.maxFailureRate, minSample: options.minSample)
        progress = ProgressTracker(
            reportInterval: progressInterval, journals: !options.dryRun, reports: onProgress != nil)
        summary.dryRun = options.dryRun
    }

    /// Asks the run to stop dispatching, let in-flight requests end and journal (SIGINT/SIGTERM).
    public func requestStop(signal: Int32) {
        queue.async { [self] in
            stop(.signal(signal))
            schedulePump()
        }
    }

    /// Runs to the end and returns what happened. Blocks the calling thread.
    public func run() throws(RunSetupError) -> RunSummary {
        let opened = try RunSetup.open(options, apiKey: apiKey, toolVersion: toolVersion, startedAt: startedAt)
        defer {
            opened.writer.journal.close()
            if let directory = opened.temporaryDirectory { Files.removePrivateDirectory(directory) }
        }
        writer = opened.writer
        summary.recoveredInFlight = opened.recovered.pending
        summary.recoveredMarks = opened.recovered.final
        feeder = InputFeeder(
            readers: opened.readers, options: options, mode: OutcomePolicy.RunMode(options),
            runID: opened.writer.runID, startedAt: startedAt)
        if !options.dryRun {
            do throws(RunSetupError) {
                let handOff = ResultHandOff(queue: queue) { [self] in handle($0) }
                client = try RunSetup.startClient(options, apiKey: apiKey, toolVersion: toolVersion) {
                    handOff.deliver($0)
                }
            } catch {
                feeder?.closeUnfinished()
                throw error
            }
        }
        startTimers()
        queue.async { [self] in pump() }
        done.wait()
        return summary
    }

    // MARK: The loop (all on `queue`)

    private var inputDone: Bool { feeder?.isDone ?? true }

    private func schedulePump() {
        guard !pumpScheduled else { return }
        pumpScheduled = true
        queue.async { [self] in
            pumpScheduled = false
            pump()
        }
    }

    private func pump() {
        guard !isFinished else { return }
        do {
            if stopReason == nil && !inputDone { try readSlice() }
            scheduler.releaseDueRetries(now: monotonicSeconds())
            if !options.dryRun { try dispatchReady() }
            try flush()
        } catch {
            failJournal(error)
            return
        }
        if let wake = scheduler.nextWake(now: monotonicSeconds()) { wakeTimer?.arm(at: wake) }
        finishIfDone()
    }

    private func readSlice() throws(JournalError) {
        guard let writer else { return }
        let room = options.dryRun ? Int.max : scheduler.roomLeft
        guard let slice = try feeder?.readSlice(room: room, writer: writer, summary: &summary) else { return }
        for taken in slice.rows {
            if options.dryRun {
                summary.wouldSend += 1
            } else {
                scheduler.add(profileId: taken.profileId, transactionId: taken.transactionId, payload: taken.row)
            }
        }
        switch slice.end {
        case .sliceFull: schedulePump()
        case .damaged(let message): stop(.inputFailure(message: message))
        case .inputDone, .noRoom: break
        }
    }

    /// Marks in the open batch every row the scheduler lets go now or keeps in its reserve;
    /// `flush` sends them.
    private func dispatchReady() throws(JournalError) {
        guard let writer, stopReason == nil else { return }
        var timestamp: String?
        while let entry = scheduler.nextSend(now: monotonicSeconds()) {
            let now = timestamp ?? Timestamp.string(Date())
            timestamp = now
            let mark = try writer.markInFlight(entry.payload, now: now)
            // A row admitted this run came with its columns known; one owed or retried had them read.
            if entry.payload.beforeMark == nil { scheduler[payloadOf: entry.sequence]?.beforeMark = mark }
        }
    }

    /// Commits the batch, then sends: a row is marked in flight on disk before its request leaves.
    private func flush() throws(JournalError) {
        try writer?.commitBatch()
        scheduler.marksCommitted()
        sendCommitted()
    }

    /// Sends committed rows while the scheduler has free slots.
    private func sendCommitted() {
        guard let client else { return }
        while let entry = scheduler.nextLaunch() {
            feeder?.noteFirstSend(of: entry.payload)
            client.submit(
                RestoreRequest(
                    tag: entry.sequence, profileId: entry.profileId, originalTransactionId: entry.transactionId))
        }
    }

    /// Rows marked in flight and not sent go back in the journal as they were.
    private func unmark(_ rows: [RunRow]) throws(JournalError) {
        for row in rows {
            if let mark = row.beforeMark { try writer?.unmark(mark) }
        }
    }

    // MARK: Replies

    /// A batch of replies from the curl thread. First every freed slot goes to a row whose mark is
    /// committed, so that the last reply of a batch does not wait for the others' journal writes;
    /// then each reply is decided and recorded.
    private func handle(_ results: [RestoreResult]) {
        guard !isFinished else { return }
        let now = monotonicSeconds()
        let replies = results.filter { scheduler[payloadOf: $0.tag] != nil }
        // A reply that asked to slow down takes the reserve back; one that may stop the run sends
        // nothing more until it is decided.
        do {
            for result in replies {
                try unmark(
                    scheduler.replied(result.reply, duration: result.duration, rateLimit: result.rateLimit, now: now))
            }
        } catch {
            failJournal(error)
            return
        }
        if !replies.contains(where: \.reply.isFatal) {
            sendCommitted()
        }
        for result in replies where !isFinished { record(result) }
        schedulePump()
    }

    /// The table decides, the writer records, then the row leaves the window or waits to be retried.
    private func record(_ result: RestoreResult) {
        guard let writer, var row = scheduler[payloadOf: result.tag] else { return }
        summary.requests += 1
        row.attemptsThisRun += 1
        // The reply's write changes the row: its next mark reads what stands then.
        row.beforeMark = nil
        let decision = decider.decide(result.reply, row: row, isStopping: stopReason != nil)
        if decision.action.stopsRun != nil, case .fatal(let reason, _, let message) = result.reply {
            stop(StopReason(fatal: reason, message: message))
            guard !isFinished else { return }
        }
        var message = result.reply.message
        if decision.reply == .budgetExhausted {
            summary.retryBudgetExhausted += 1
            message = "retry budget exhausted; last error: \(message ?? result.reply.code ?? "")"
        }
        let code = result.reply.code
        do {
            let (status, answered) = try writer.recordReply(result, decision: decision, row: row, message: message)
            switch decision.action.next {
            case .done:
                summary.count(status: status.rawValue, code: answered ? code : nil)
                if !answered { summary.kept += 1 }
                scheduler.settle(result.tag)
                // A final row resent without an answer counts as a row that ran out of attempts.
                if stopReason == nil, let crossed = threshold.record(answered ? status : .pending) { stop(crossed) }
            case .retry:
                summary.retries += 1
                row.lastWasTimeout = code == "timeout"
                row.lastCode = code
                scheduler[payloadOf: result.tag] = row
                scheduler.retry(result.tag, at: monotonicSeconds() + (decision.retryDelay ?? 0))
            }
        } catch {
            failJournal(error)
        }
    }

    // MARK: Stopping and finishing

    private func stop(_ reason: StopReason) {
        guard stopReason == nil else { return }
        stopReason = reason
        summary.stopMessage = reason.message
        summary.stopCause = reason.cause?.rawValue
        // Rows marked and not sent go back as they were. Rows waiting out a backoff, and those
        // of them that had been marked again, are done for this run; the table says what a stop
        // writes to them (nothing: their last error is on record, a final row keeps its status).
        let (unsent, waiting) = scheduler.stop()
        do {
            try unmark(unsent)
            guard let cause = reason.cause else { return }
            for row in waiting + unsent.filter({ $0.attemptsThisRun > 0 }) {
                let action = OutcomePolicy.action(for: .stop(cause), row: OutcomePolicy.RowClass(row.status))
                try writer?.applyStopRule(action.write, to: row)
            }
        } catch {
            failJournal(error)
        }
    }

    private func finishIfDone() {
        guard !isFinished, scheduler.inFlight == 0 else { return }
        if stopReason == nil && !(inputDone && scheduler.isEmpty) { return }
        // The counts the summary, its `runs` line and the exit status rest on, from the journal.
        summary.nextCommand = RunAdvice.runCommand(options, inputs: inputDone ? [] : options.inputs)
        do {
            try writer?.countRows(into: &summary, keptPossible: feeder?.tookUpFinalRows ?? false)
        } catch {
            failJournal(error)
            return
        }
        finish(exitCode: ExitCode.forRun(stoppedBy: stopReason, pendingRows: summary.pending))
    }

    private func failJournal(_ error: JournalError) {
        guard !isFinished else { return }
        stopReason = .journalFailure(message: error.description)
        summary.stopMessage = error.description
        client?.shutdown()
        writer?.rollback()
        summary.notSent = scheduler.count
        finish(exitCode: ExitCode.cannotCreate, recordRun: false)
    }

    private func finish(exitCode: Int32, recordRun: Bool = true) {
        isFinished = true
        housekeepingTimer?.cancel()
        wakeTimer?.cancel()
        let throttle = scheduler.throttle
        summary.throttleEvents = throttle.events
        summary.lowestThrottledRate = throttle.lowestRate
        summary.finalThrottledRate = throttle.isThrottled ? throttle.effectiveRate : nil
        client?.shutdown()
        summary.durationSeconds = Date().timeIntervalSince(startedAt)
        summary.inputComplete = inputDone
        summary.exitCode = exitCode
        if let writer {
            if options.dryRun {
                writer.rollback()
            } else if recordRun {
                do {
                    try writer.finishRun(
                        stopped: stopReason != nil, exitCode: exitCode, inputs: feeder?.inputsRecord ?? [],
                        summary: summary)
                } catch {
                    summary.exitCode = ExitCode.cannotCreate
                    summary.stopMessage = error.description
                }
            }
            writer.journal.close()
        }
        feeder?.closeUnfinished()
        if let onProgress { onProgress(snapshot()) }
        done.signal()
    }

    // MARK: Timers and progress

    /// The wake-up timer, idle until armed; and housekeeping four times a second: raise a
    /// throttled rate after quiet spells, enforce the deadline, journal and report progress.
    private func startTimers() {
        wakeTimer = WakeTimer(queue: queue) { [self] in pump() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [self] in
            guard !isFinished else { return }
            if scheduler.tick(now: monotonicSeconds()) { schedulePump() }
            if let deadline = options.deadline, Date() >= deadline, stopReason == nil {
                stop(.windowEnded(at: deadline))
                schedulePump()
            }
            let due = progress.due(at: Date().timeIntervalSince(startedAt))
            if due.journal { journalProgress() }
            if due.report, let onProgress { onProgress(snapshot()) }
        }
        housekeepingTimer = timer
        timer.resume()
    }

    /// The next batch commit carries it.
    private func journalProgress() {
        do {
            try writer?.recordProgress(snapshot(), at: Date())
            schedulePump()
        } catch {
            failJournal(error)
        }
    }

    private func snapshot() -> RunProgress {
        progress.snapshot(
            at: Date().timeIntervalSince(startedAt), summary: summary,
            input: feeder?.position ?? InputPosition(bytesRead: 0, totalBytes: 0), sending: scheduler.counts)
    }
}
