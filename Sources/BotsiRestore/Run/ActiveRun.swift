import BotsiAPI
import BotsiBasics
import BotsiJournal
import Dispatch
import Foundation

/// One run, isolated: every piece of its mutable state lives here, on the run's own serial
/// executor, so the compiler refuses any touch from elsewhere and the runtime traps one that
/// slips past it (`RunExecutor.checkIsolated`). It ties Input, API and Journal together as wiring
/// only: `InputFeeder` hands it rows, `SendScheduler` says which to send when, `ReplyDecider` (the
/// lifecycle table) decides each reply, `FailureThreshold` and `RunStop` decide stopping,
/// `ProgressTracker` tells progress, and `RunJournalWriter` performs every write.
actor ActiveRun {
    nonisolated let executor: RunExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let options: RunOptions
    private let startedAt: Date
    private let onProgress: (@Sendable (RunProgress) -> Void)?
    /// A dry run's rows, as it decides it would send each.
    private let onWouldSend: (@Sendable (WouldSend) -> Void)?
    private let onFinish: @Sendable (RunSummary) -> Void
    private var writer: RunJournalWriter
    private let input: InputPump
    private let sender: RunParts.Sender
    private let totalBytes: Int64?
    private var feeder: InputFeeder
    private var scheduler: SendScheduler<RunRow>
    private var decider: ReplyDecider
    private var threshold: FailureThreshold
    private var progress: ProgressTracker
    private var waits = ReplyWaits()
    private var summary = RunSummary()
    /// Owed final rows a stop gave back unsent: still owed, to the next run of the selection.
    private var owedGivenBack = 0
    /// The journal's name was taken from it mid-run (`JournalError.removedWhileOpen`): nothing more
    /// is written to it.
    private var journalGone = false
    private(set) var phase: RunPhase = .running
    private var stepScheduled = false
    /// When the open batch was first found open (monotonic seconds): it commits by `batchAge`.
    private var batchOpenedAt: Double?
    /// The longest a batch stays open while replies come and the reserve covers the sends: what
    /// a kill can cost in replies to resend, and how far behind a reader of the journal may be.
    static let batchAge = 0.05
    private let housekeeping: DispatchSourceTimer
    private var wakeTimer: WakeTimer

    /// A run that starts stopping (`stop`: a stop that came while it was set up) sends nothing.
    init(
        parts: sending RunParts, options: RunOptions, startedAt: Date, executor: RunExecutor,
        progressInterval: Double, onProgress: (@Sendable (RunProgress) -> Void)?,
        onWouldSend: (@Sendable (WouldSend) -> Void)? = nil, onFinish: @escaping @Sendable (RunSummary) -> Void
    ) {
        self.onWouldSend = onWouldSend
        self.executor = executor
        self.options = options
        self.startedAt = startedAt
        self.onProgress = onProgress
        self.onFinish = onFinish
        writer = parts.writer
        input = parts.pump
        sender = parts.sender
        totalBytes = parts.totalBytes
        feeder = parts.feeder
        var pacing = PacingConfiguration(options)
        pacing.carried = parts.writer.carriedPace(now: startedAt)
        scheduler = SendScheduler(pacing: pacing)
        decider = ReplyDecider(options: options)
        threshold = FailureThreshold(maxFailureRate: options.maxFailureRate, minSample: options.minSample)
        progress = ProgressTracker(
            reportInterval: progressInterval, journals: !options.dryRun, reports: onProgress != nil)
        summary.dryRun = options.dryRun
        if let run = parts.continuingFrom {
            summary.continuedFrom = run
            summary.continuedAnsweredBefore = options.answeredBefore
        }
        summary.recoveredInFlight = parts.recovered.pending
        summary.recoveredMarks = parts.recovered.final
        // An input a stopped run left unread and this run does not name is still owed its rest.
        if !options.dryRun {
            summary.earlierUnreadInputs = parts.writer.earlierUnreadInputs.map(\.path)
            summary.earlierGoneInputs = parts.writer.earlierGoneInputs.map(\.path)
            summary.earlierGoneInputPaths = parts.writer.earlierGoneInputs.map(\.commandPath)
        }
        // A dry run forgets nothing (it records nothing) but says what the real run would forget.
        summary.forgottenInputs = parts.writer.forgottenInputs
        summary.forgetsMatchingNothing = parts.writer.forgetsMatchingNothing
        if options.adaptive, !options.dryRun, let carried = pacing.carried,
            let earlier = parts.writer.earlierLongWindow
        {
            summary.carriedLongWindow = CarriedLongWindow(
                run: earlier.run, rate: scheduler.counts.rateLimit ?? carried.rate, cycleSeconds: carried.cycle,
                seenAt: earlier.record.seenAt)
        }
        housekeeping = DispatchSource.makeTimerSource(queue: executor.queue)
        // Idle until the run starts; a source must be resumed before it may be released.
        housekeeping.schedule(deadline: .distantFuture)
        housekeeping.resume()
        wakeTimer = WakeTimer(queue: executor.queue)
    }

    /// Runs `body` on the run's executor, from any thread: how callbacks enter the run.
    nonisolated func enter(_ body: @escaping @Sendable (isolated ActiveRun) -> Void) {
        executor.queue.async { self.assumeIsolated(body) }
    }

    /// Connects the run to its input thread, its client and its timers, then sends; a stop that
    /// came during setup (`stop`) is in force before anything is read or sent.
    func start(stoppingFor stop: RunStop?) {
        if let stop { self.stop(stop) }
        input.attach { [weak self] in self?.enter { $0.scheduleStep() } }
        if case .client(_, let handOff) = sender {
            handOff.attach { [weak self, handOff] in self?.enter { $0.handle(handOff.takeBatch()) } }
        }
        startTimers()
        step()
    }

    /// Asks the run to stop dispatching, let in-flight requests end and journal (SIGINT/SIGTERM).
    func requestStop(signal: Int32) {
        stop(.signal(signal))
        scheduleStep()
    }

    // MARK: The loop

    private var isStopping: Bool { if case .stopping = phase { true } else { false } }

    private var isFinished: Bool { phase == .finished }

    private func scheduleStep() {
        guard !stepScheduled, !isFinished else { return }
        stepScheduled = true
        enter {
            $0.stepScheduled = false
            $0.step()
        }
    }

    private func step() {
        guard !isFinished else { return }
        do {
            if !isStopping && !feeder.isDone { try readSlice() }
            scheduler.releaseDueRetries(now: monotonicSeconds())
            if !options.dryRun { try dispatchReady() }
            try flush()
        } catch {
            failJournal(error)
            return
        }
        var wake = scheduler.nextWake(now: monotonicSeconds())
        if let openedAt = batchOpenedAt { wake = min(wake ?? .infinity, openedAt + Self.batchAge) }
        if let wake { wakeTimer.arm(at: wake) }
        finishIfDone()
    }

    private func readSlice() throws(JournalError) {
        let room = options.dryRun ? Int.max : scheduler.roomLeft
        let slice = try feeder.readSlice(room: room, writer: &writer)
        summary.add(slice.counts)
        for taken in slice.rows {
            if options.dryRun {
                summary.wouldSend += 1
                onWouldSend?(
                    WouldSend(
                        profileId: taken.profileId, originalTransactionId: taken.transactionId,
                        source: taken.row.owedSource
                            ?? "\(taken.row.readerIndex.map { feeder.names[$0] } ?? ""):\(taken.row.line)",
                        owed: taken.row.readerIndex == nil ? taken.row.status : nil))
            } else {
                scheduler.add(profileId: taken.profileId, transactionId: taken.transactionId, payload: taken.row)
            }
        }
        switch slice.end {
        case .sliceFull: scheduleStep()
        case .damaged(let input, let reason):
            stop(.inputDamaged(message: feeder.damagedMessage(input: input, reason: reason)))
        case .inputDone, .noRoom, .waitingForInput: break
        }
    }

    /// Marks in the open batch every row the scheduler lets go now or keeps in its reserve;
    /// `flush` sends them.
    private func dispatchReady() throws(JournalError) {
        guard !isStopping else { return }
        // Marked together: one statement for many rows costs SQLite less than one each.
        var rows: [RunRow] = []
        var timestamp: Int64?
        while let entry = scheduler.nextSend(now: monotonicSeconds()) {
            if timestamp == nil { timestamp = Timestamp.milliseconds(Date()) }
            rows.append(entry.payload)
        }
        if let timestamp { try writer.markInFlight(rows, now: timestamp) }
    }

    /// Commits the batch when the sends need its marks, it is `batchAge` old, nothing is on the
    /// wire or the run stops; then sends: a row is marked in flight on disk before its request leaves.
    private func flush() throws(JournalError) {
        if writer.hasOpenBatch {
            let now = monotonicSeconds()
            let openedAt = batchOpenedAt ?? now
            guard
                isStopping || options.dryRun || scheduler.inFlight == 0 || scheduler.wantsCommit(now: now)
                    || now - openedAt >= Self.batchAge
            else {
                batchOpenedAt = openedAt
                return sendCommitted()
            }
            try writer.commitBatch()
            batchOpenedAt = nil
        }
        scheduler.marksCommitted()
        sendCommitted()
    }

    /// Sends committed rows while the scheduler has free slots.
    private func sendCommitted() {
        guard case .client(let client, _) = sender else { return }
        let now = monotonicSeconds()
        while let entry = scheduler.nextLaunch(queueAt: now) {
            waits.sent(entry.sequence, at: now)
            feeder.noteFirstSend(of: entry.payload)
            // A retry counts when it leaves, not when it is planned: a stop ends the wait of one
            // that never went.
            if entry.payload.attemptsThisRun > 0 { summary.retries += 1 }
            client.submit(
                RestoreRequest(
                    tag: entry.sequence, profileId: entry.profileId, originalTransactionId: entry.transactionId))
        }
    }

    /// Rows marked in flight and not sent go back in the journal as they were.
    private func unmark(_ rows: [RunRow]) throws(JournalError) {
        for row in rows { try writer.unmark(row) }
    }

    // MARK: Replies

    /// A batch of replies from the curl thread. First every freed slot goes to a row whose mark is
    /// committed, so that the last reply of a batch does not wait for the others' journal writes;
    /// then each reply is decided and recorded.
    private func handle(_ results: [RestoreResult]) {
        guard !isFinished else { return }
        let now = monotonicSeconds()
        let replies = results.filter { scheduler.payload(of: $0.tag) != nil }
        // A reply that asked to slow down takes the reserve back; one that may stop the run sends
        // nothing more until it is decided.
        do {
            for result in replies {
                waits.replied(result.tag)
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
        scheduleStep()
    }

    /// The table decides, the writer records, then the row leaves the window or waits to be retried.
    private func record(_ result: RestoreResult) {
        guard var row = scheduler.payload(of: result.tag) else { return }
        // Its request left (the client may hold one back until a connection frees, and a stop
        // takes those back unsent): what its mark replaced is not needed any more.
        writer.sent(row)
        summary.requests += 1
        summary.note(result.reply, duration: result.duration, timeout: options.timeout)
        row.attemptsThisRun += 1
        let decision = decider.decide(result.reply, row: &row, isStopping: isStopping)
        if decision.action.stopsRun != nil, case .fatal(let reason, _, let message) = result.reply {
            stop(.fatal(reason, message: message))
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
                summary.count(status: status, code: answered ? code : nil)
                if !answered { summary.kept += 1 }
                // A final row the stop (or the refusal that stops the run) left without an answer:
                // owed to the selection. (Held rows are pending once the error is written.)
                let stopped = decision.reply == .retryableWhileStopping || decision.action.stopsRun != nil
                if !answered && stopped {
                    summary.owedUnanswered += 1
                }
                scheduler.settle(result.tag)
                // A final row resent without an answer counts as a row that ran out of attempts.
                if !isStopping, let crossed = threshold.record(answered ? status : .pending) { stop(crossed) }
            case .retry:
                row.lastCode = code
                scheduler.replacePayload(of: result.tag, with: row)
                // A failure is retried after its backoff; a refusal by the limit waits its turn again.
                let refused = result.httpStatus == 429 || result.httpStatus == 503
                scheduler.retry(result.tag, at: monotonicSeconds() + (decision.retryDelay ?? 0), ahead: !refused)
            }
        } catch {
            failJournal(error)
        }
    }

    // MARK: Stopping and finishing

    /// Requests the client queued behind busy connections have not left: they are unsent rows,
    /// returned for the journal to unmark.
    private func takeBackQueued() -> [RunRow] {
        guard case .client(let client, _) = sender else { return [] }
        let queued = client.withdrawQueued()
        for tag in queued { waits.replied(tag) }
        let withdrawn = scheduler.withdrawLaunched(queued)
        for row in withdrawn { feeder.noteWithdrawn(row) }
        // Handed to the client and taken back before they left: not sent.
        summary.retries -= withdrawn.filter { $0.attemptsThisRun > 0 }.count
        return withdrawn
    }

    /// The reason is made once the client's queue is taken back, so that what it counts as sent
    /// (a damaged input's message) was sent.
    private func stop(_ makeReason: @autoclosure () -> RunStop) {
        guard phase == .running else { return }
        let withdrawn = takeBackQueued()
        let reason = makeReason()
        phase = .stopping(reason)
        summary.stopMessage = reason.message
        summary.stopCause = reason.cause
        summary.stoppedAt = Timestamp.string(Date())
        // Nothing more is read: the input thread may be blocked in a read, and is not waited for.
        input.cancel()
        // Rows marked and not sent go back as they were. Rows waiting out a backoff, and those
        // of them that had been marked again, are done for this run; the table says what a stop
        // writes to them (nothing: their last error is on record, a final row keeps its status).
        var (unsent, waiting) = scheduler.stop()
        unsent += withdrawn
        // Owed rows taken up and never sent were not "sent first"; the final ones (a selection's)
        // go back to the run that had them and stay owed to the next run of that selection.
        let owedUnsent = scheduler.idlePayloads.filter { $0.readerIndex == nil && $0.attemptsThisRun == 0 }
        if !options.dryRun { summary.owedRows -= owedUnsent.count }
        do {
            try unmark(unsent)
            // Held rows a `--release-held` run took up too: they stay held, owed to the next one.
            for row in owedUnsent where row.status.isFinal || row.status == .held {
                try writer.giveBack(row)
                owedGivenBack += 1
            }
            // Resent rows: waiting out a backoff, marked again and taken back, or due again and not yet marked.
            let unsentIDs = Set(unsent.map(\.itemID))
            let due = scheduler.idlePayloads.filter { $0.attemptsThisRun > 0 && !unsentIDs.contains($0.itemID) }
            let resent = waiting + unsent.filter { $0.attemptsThisRun > 0 } + due
            // A selection's rows resent and not yet answered keep their status, as a resend without
            // a definitive answer does, and are still owed to it: the next run of it sends them.
            // A held row resent without an answer is pending now (its error written), owed as such.
            let unanswered = resent.filter { $0.status.isFinal }.count
            if !options.dryRun {
                summary.kept += unanswered
                summary.owedUnanswered += unanswered
            }
            for row in resent {
                let action = OutcomePolicy.action(for: .stop(reason.cause), row: OutcomePolicy.RowClass(row.status))
                try writer.applyStopRule(action.write, to: row)
            }
        } catch {
            failJournal(error)
        }
    }

    private var stopReason: RunStop? {
        if case .stopping(let reason) = phase { return reason }
        return nil
    }

    /// The command that goes on after this run: what the journal owes, the rest of its input, and
    /// the inputs earlier runs left unread — read as the run that named them read them when this
    /// run leaves none of its own unread.
    private func continuation(selection: Bool) -> String {
        let earlierUnread = writer.earlierUnreadInputs
        let earlier = summary.earlierUnreadInputs.isEmpty ? nil : earlierUnread.first
        let unreadOwn = !feeder.isDone && !options.inputs.isEmpty
        let options = selection ? RunAdvice.continuingSelection(options, startedAt: startedAt) : options
        let command = RunAdvice.runCommand(
            unreadOwn ? options : RunAdvice.readingAs(earlier, options),
            inputs: (unreadOwn ? options.inputs : [])
                + (summary.earlierUnreadInputs.isEmpty ? [] : earlierUnread.map(\.commandPath)),
            selection: selection)
        return RunAdvice.continuing(command, keyFile: options.keyFile)
    }

    private func finishIfDone() {
        guard !isFinished, scheduler.inFlight == 0 else { return }
        if !isStopping && !(feeder.isDone && scheduler.isEmpty) { return }
        // The counts the summary, its `runs` line and the exit status rest on, from the journal.
        do {
            summary.take(try writer.rowCounts())
            if isStopping && !options.dryRun {
                summary.owedNotTakenUp = owedGivenBack + (try feeder.owedNotTakenUp(writer: writer))
            }
            if !options.dryRun { summary.otherShardsOwed = feeder.owedOfOtherShards }
            // Nothing owed and nothing read: held rows still wait for a person, and a plain run leaves them.
            if !options.dryRun && summary.rowsRead == 0 && summary.owedRows == 0 {
                summary.heldInJournal = try writer.journal.heldRowCount()
            }
        } catch {
            failJournal(error)
            return
        }
        // After a dry run, the real run it rehearsed: its inputs and its selection.
        summary.nextCommand =
            options.dryRun
            ? RunAdvice.runCommand(options, inputs: options.inputs, selection: true)
            : continuation(selection: summary.selectionOwed > 0)
        if summary.otherShardsOwed > 0 {
            summary.otherShardsCommand = RunAdvice.otherShardsCommand(options)
        }
        if (summary.held > 0 || summary.heldInJournal > 0) && !options.dryRun {
            summary.releaseCommand = RunAdvice.releaseCommand(options)
        }
        let exitCode = ExitCode.forRun(stoppedBy: stopReason, pendingRows: summary.pending)
        finish(exitCode: exitCode == ExitCode.success && summary.inputRejected ? ExitCode.dataError : exitCode)
    }

    /// The journal refused a write: the open batch is rolled back, so the summary counts what was
    /// committed, read back from the journal (or says it could not be), and the run's end is
    /// recorded if the journal still takes that one write (or the summary says it is not).
    private func failJournal(_ error: JournalError) {
        guard !isFinished else { return }
        summary.stopMessage = error.description
        summary.stopCause = .journalFailure
        summary.stoppedAt = Timestamp.string(Date())
        if case .client(let client, _) = sender { client.shutdown() }
        writer.rollback()
        if case .removedWhileOpen = error {
            letGoOfATakenJournal()
        } else {
            do {
                summary.take(try writer.rowCounts())
                // Replies of the batch rolled back were sent: counted, and said to be unrecorded.
                summary.unrecordedRequests = max(0, summary.requests - (try writer.recordedRequests()))
            } catch {
                summary.statuses = [:]
                summary.codes = [:]
                summary.countsUnreadable = true
            }
        }
        // Once the journal takes writes again, the same run goes on: what it owes, the rest of
        // its input, its selection.
        if !journalGone { summary.nextCommand = continuation(selection: true) }
        finish(exitCode: ExitCode.cannotCreate, failedJournal: true)
    }

    /// The journal's name no longer leads to the file this run has open: what was committed goes
    /// into that file (`checkpointIntoOpenFile`), nothing more is written, no counts of it are
    /// given, and the command that goes on reads the inputs again (the file at the name, if any,
    /// may be a backup that lacks them).
    private func letGoOfATakenJournal() {
        journalGone = true
        summary.journalTaken = true
        writer.journal.checkpointIntoOpenFile()
        summary.statuses = [:]
        summary.codes = [:]
        summary.nextCommand = RunAdvice.continuing(
            RunAdvice.runCommand(options, inputs: options.inputs, selection: true), keyFile: options.keyFile)
    }

    private func finish(exitCode: Int32, failedJournal: Bool = false) {
        let stopped = stopReason != nil || failedJournal
        phase = .finished
        housekeeping.cancel()
        wakeTimer.cancel()
        input.cancel()
        let throttle = scheduler.throttle
        summary.throttleEvents = throttle.events
        summary.lowestThrottledRate = throttle.lowestRate
        summary.finalThrottledRate = throttle.isThrottled ? throttle.effectiveRate : nil
        if case .client(let client, _) = sender { client.shutdown() }
        summary.durationSeconds = Date().timeIntervalSince(startedAt)
        // A run without inputs has none left unread, however many owed rows it did not take up.
        summary.inputComplete = feeder.isDone || options.inputs.isEmpty
        summary.exitCode = exitCode
        if options.dryRun {
            writer.rollback()
        } else if journalGone {
            summary.exitCode = ExitCode.cannotCreate
        } else {
            do {
                try writer.commitBatch()
                try writer.finishRun(
                    stopped: stopped, exitCode: exitCode, inputs: feeder.inputsRecord, summary: summary)
            } catch {
                summary.exitCode = ExitCode.cannotCreate
                if !failedJournal {
                    summary.stopMessage = error.description
                    summary.stopCause = .journalFailure
                }
                if case .removedWhileOpen = error {
                    writer.rollback()
                    letGoOfATakenJournal()
                } else {
                    summary.endUnrecorded = true
                }
            }
        }
        writer.journal.close()
        if let onProgress { onProgress(snapshot()) }
        onFinish(summary)
    }

    // MARK: Timers and progress

    /// The wake-up timer, idle until armed; and housekeeping four times a second: raise a
    /// throttled rate after quiet spells, enforce the deadline, journal and report progress.
    private func startTimers() {
        wakeTimer.setHandler { [weak self] in
            self?.enter { loop in
                loop.wakeTimer.fired()
                loop.step()
            }
        }
        housekeeping.setEventHandler { [weak self] in self?.enter { $0.housekeep() } }
        housekeeping.schedule(deadline: .now() + 0.25, repeating: 0.25)
    }

    private func housekeep() {
        guard !isFinished else { return }
        if scheduler.tick(now: monotonicSeconds()) { scheduleStep() }
        if let deadline = options.deadline, Date() >= deadline, !isStopping {
            stop(.windowEnded(at: deadline))
            scheduleStep()
        }
        let due = progress.due(at: Date().timeIntervalSince(startedAt))
        if due.journal { journalProgress() }
        if due.report, let onProgress { onProgress(snapshot()) }
    }

    /// The next batch commit carries it.
    private func journalProgress() {
        do {
            try writer.recordProgress(snapshot(), longWindow: scheduler.longWindow, at: Date())
            scheduleStep()
        } catch {
            failJournal(error)
        }
    }

    private func snapshot() -> RunProgress {
        var snapshot = progress.snapshot(
            at: Date().timeIntervalSince(startedAt), summary: summary,
            input: InputPosition(bytesRead: input.bytesRead, totalBytes: totalBytes, complete: feeder.isDone),
            sending: scheduler.counts, waits: waits.report(now: monotonicSeconds(), timeout: options.timeout))
        snapshot.rateCap = options.rateCap
        return snapshot
    }
}
