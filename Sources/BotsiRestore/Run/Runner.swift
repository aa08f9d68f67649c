import BotsiAPI
import BotsiBasics
import BotsiFiles
import BotsiInput
import BotsiJournal
import Dispatch
import Foundation
import Synchronization

/// A run that could not start: bad options, unusable input, or a journal that cannot be used.
public struct RunSetupError: Error, CustomStringConvertible, Sendable {
    public let exitCode: Int32
    public let message: String
    public var description: String { message }
}

/// Exit statuses (sysexits), documented in docs/exit-codes.md.
public enum ExitCode {
    public static let success: Int32 = 0
    public static let usage: Int32 = 64
    public static let dataError: Int32 = 65
    public static let noInput: Int32 = 66
    public static let unavailable: Int32 = 69
    public static let software: Int32 = 70
    public static let cannotCreate: Int32 = 73
    public static let temporaryFailure: Int32 = 75
    public static let permission: Int32 = 77
    public static let configuration: Int32 = 78
    public static let interrupted: Int32 = 130
    public static let terminated: Int32 = 143
}

/// Runs one job: reads the inputs, asks the journal what is left, sends it with bounded
/// concurrency, retries what is transient and journals every outcome. The one place that ties
/// Input, API and Journal together.
///
/// All mutable state below is touched only on `queue` (a serial queue), which is what makes the
/// `@unchecked Sendable` true; the curl driver and signal handlers talk to it by `queue.async`.
public final class Runner: @unchecked Sendable {
    private struct Row {
        let itemID: Int64
        let source: String
        let attemptsBefore: Int
        /// The row's status when the run took it up: the lifecycle table tells pending rows from
        /// final ones (a final row keeps its status without a definitive answer).
        let status: ItemStatus
        /// The input it was read from (its index in `readers`); nil for a row the journal owed.
        let readerIndex: Int?
        var attemptsThisRun = 0
        var startedAt = Date()
        var lastWasTimeout = false
        /// The code of the last retryable error, journaled with the row while it waits.
        var lastCode: String?
        var waitingToRetry = false
    }

    private let options: RunOptions
    private let apiKey: String
    private let toolVersion: String
    private let onProgress: (@Sendable (RunProgress) -> Void)?
    private let progressInterval: Double
    private let queue = DispatchQueue(label: "botsi-restore.runner")
    private let done = DispatchSemaphore(value: 0)
    private let arrivals = Mutex<[RestoreResult]>([])

    private var readers: [InputReader] = []
    private var readerIndex = 0
    /// Rows read from each input and, of those, rows sent: what a damaged file's message tells.
    private var rowsReadByReader: [Int] = []
    private var rowsSentByReader: [Int] = []
    private var owedFeeder: OwedRowFeeder?
    /// Whether the run took up a final row (`--retry-failed`, `--refresh-older-than`): only then
    /// can a resend have been kept without an answer.
    private var tookUpFinalRows = false
    private var bytesOfFinishedReaders: Int64 = 0
    private var inputsRecord: [RunInput] = []
    private var inputDone = false
    private var journal: Journal?
    private var runID: Int64 = 0
    private var temporaryJournalDirectory: String?
    private var client: RestoreClient?

    private var window = OrderingWindow<Row>()
    private var nextSequence: Int64 = 0
    private var inFlight = 0
    private var waitingToRetry = 0
    private var pendingSends: [RestoreRequest] = []
    private var pumpScheduled = false
    private var stopReason: StopReason?
    private var isFinished = false
    private var budget = RetryBudget()
    private let policy: OutcomePolicy
    private let runMode: OutcomePolicy.RunMode
    /// The table's rule for a final row whose resend a kill cuts short: keep its status (mark it
    /// apart) or return to pending (mark it `in_flight`).
    private let finalRowsKeepStatusThroughAKill =
        OutcomePolicy.action(for: .killed, row: .final).write == .clearMark
    private var random: SplitMix64
    private var summary = RunSummary()
    private let startedAt = Date()
    private var rateSamples: [(time: Double, requests: Int)] = []
    private var housekeepingTimer: DispatchSourceTimer?
    private var lastProgressAt = 0.0
    private var lastJournaledProgressAt = 0.0
    private static let journalProgressInterval = 5.0
    private var pacer = Pacer()
    private var sendMeter = SendMeter()
    /// Replies that were not throttling ones, per second: where the upstream limit lies.
    private var acceptedMeter = SendMeter()
    /// Typical request duration (exponentially weighted), for sizing concurrency to a rate.
    private var latencyAverage = 0.05
    private var throttle: AdaptiveThrottle
    private var paceWakeScheduled = false
    /// Rows sent and settled this run, and how many of them failed or ran out of attempts.
    private var settledSent = 0
    private var settledBad = 0
    private let snapshotEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    private var windowLimit: Int { max(options.concurrency * 16, 1024) }

    public init(
        options: RunOptions, apiKey: String, toolVersion: String, progressInterval: Double = 1,
        onProgress: (@Sendable (RunProgress) -> Void)? = nil
    ) {
        self.options = options
        self.apiKey = apiKey
        self.toolVersion = toolVersion
        self.onProgress = onProgress
        self.progressInterval = progressInterval
        policy = OutcomePolicy(
            maxAttempts: options.maxAttempts, adaptive: options.adaptive,
            backoff: BackoffPolicy(
                base: options.backoffBase, cap: options.backoffCap, retryAfterCap: options.retryAfterCap))
        runMode = OutcomePolicy.RunMode(options)
        random = SplitMix64(seed: options.seed ?? UInt64.random(in: 1...UInt64.max))
        summary.dryRun = options.dryRun
        throttle = AdaptiveThrottle(
            enabled: options.adaptive, rateCap: options.rate, concurrencyCap: options.concurrency)
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
        // The same checks, in the same order, for a dry run: it exits as the real run would.
        try RunPreflight.checkClient(options, apiKey: apiKey, toolVersion: toolVersion)
        try openInputs()
        try RunPreflight.checkJournalForRunWithoutInput(options)
        try openJournal()
        defer {
            journal?.close()
            if let temporaryJournalDirectory { Files.removePrivateDirectory(temporaryJournalDirectory) }
        }
        if !options.dryRun {
            try startClient()
        }
        startHousekeeping()
        queue.async { [self] in pump() }
        done.wait()
        return summary
    }

    // MARK: Setting up

    private func openInputs() throws(RunSetupError) {
        let format = options.format.flatMap(InputFormat.init(rawValue:))
        for path in options.inputs {
            do {
                readers.append(try InputReader(path: path, format: format, options: options.inputOptions))
                rowsReadByReader.append(0)
                rowsSentByReader.append(0)
            } catch {
                let code: Int32
                switch error.kind {
                case .fileMissing, .unreadable: code = ExitCode.noInput
                case .unknownFormat: code = ExitCode.usage
                case .notTabular, .missingColumns: code = ExitCode.dataError
                }
                throw RunSetupError(exitCode: code, message: error.message)
            }
        }
    }

    private func openJournal() throws(RunSetupError) {
        var path = options.journalPath
        do {
            if options.dryRun, try !Journal.preflight(path: path) {
                // A dry run must not leave a journal behind: check against an empty throw-away one.
                let directory = try Files.makePrivateDirectory(prefix: "botsi-restore-dry-run")
                temporaryJournalDirectory = directory
                path = directory + "/journal.sqlite"
            }
        } catch {
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: "\(error)")
        }
        do {
            // The run lock is the journal file's own: taken before SQLite touches the file.
            // Everything a dry run writes, a migration included, is rolled back at the end.
            let journal = try Journal.openForRun(path: path, migrationUncommitted: options.dryRun)
            self.journal = journal
            if options.dryRun && !journal.isInTransaction { try journal.begin() }
            try journal.transaction { () throws(JournalError) in
                let recovery = try journal.recoverInFlight()
                summary.recoveredInFlight = recovery.pending
                summary.recoveredMarks = recovery.final
                runID = try journal.startRun(
                    startedAt: startedAt, toolVersion: toolVersion, host: ProcessInfo.processInfo.hostName,
                    pid: getpid(), optionsJSON: optionsJSON())
            }
            owedFeeder = OwedRowFeeder(mode: runMode, runID: runID, startedAt: startedAt)
        } catch {
            if case .locked = error {
                throw RunSetupError(exitCode: ExitCode.temporaryFailure, message: error.description)
            }
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: error.description)
        }
    }

    private func startClient() throws(RunSetupError) {
        let configuration = RunPreflight.clientConfiguration(options, apiKey: apiKey, toolVersion: toolVersion)
        do {
            client = try RestoreClient(configuration: configuration) { [self] result in
                deliver(result)
            }
        } catch {
            throw RunSetupError(exitCode: ExitCode.usage, message: error.message)
        }
    }

    private func optionsJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(options)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: The loop (all on `queue`)

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
            if !options.dryRun { try dispatchReady() }
            try flush()
        } catch {
            failJournal(error)
            return
        }
        finishIfDone()
    }

    /// Reads a bounded slice of work so that results queued meanwhile are not kept waiting: the
    /// rows the journal owes first, oldest first, then the input in its order.
    private func readSlice() throws(JournalError) {
        guard let journal else { return }
        let now = Timestamp.string(Date())
        var budgetForSlice = 2048
        while budgetForSlice > 0 && window.count < windowLimit && stopReason == nil {
            if var feeder = owedFeeder, !feeder.isDone {
                if !journal.isInTransaction { try journal.begin() }
                let owed = try feeder.next(from: journal)
                owedFeeder = feeder
                guard let owed else { continue }
                budgetForSlice -= 1
                try journal.claim(itemID: owed.itemID, runID: runID)
                summary.owedRows += 1
                if owed.status.isFinal { tookUpFinalRows = true }
                take(
                    profileId: owed.profileId, transactionId: owed.originalTransactionId,
                    row: Row(
                        itemID: owed.itemID, source: owed.source, attemptsBefore: owed.attempts, status: owed.status,
                        readerIndex: nil))
                continue
            }
            guard readerIndex < readers.count else {
                inputDone = true
                return
            }
            let reader = readers[readerIndex]
            let record: InputRecord?
            do {
                record = try reader.next()
            } catch {
                let message = RunAdvice.damagedInput(
                    error.message, file: reader.displayName, rowsRead: rowsReadByReader[readerIndex],
                    rowsSent: rowsSentByReader[readerIndex])
                stop(.inputFailure(message: message))
                return
            }
            guard let record else {
                finishReader(reader, complete: true)
                continue
            }
            budgetForSlice -= 1
            if !journal.isInTransaction { try journal.begin() }
            summary.rowsRead += 1
            rowsReadByReader[readerIndex] += 1
            switch record {
            case .rejected(let rejected) where !isMine(rejected.profileId ?? ""):
                summary.otherShards += 1
            case .rejected(let rejected):
                summary.rejectedByReason[rejected.reason.rawValue, default: 0] += 1
                try journal.recordRejection(
                    file: reader.displayName, line: rejected.line, reason: rejected.reason.rawValue,
                    message: rejected.message, profileId: rejected.profileId,
                    originalTransactionId: rejected.originalTransactionId, runID: runID, now: now)
            case .row(let row) where !isMine(row.profileId):
                summary.otherShards += 1
            case .row(let row):
                let source = "\(reader.displayName):\(row.line)"
                let admission = try journal.admit(
                    profileId: row.profileId, originalTransactionId: row.originalTransactionId, source: source,
                    runID: runID, now: now, holdConflicts: options.onConflict == .hold)
                switch admission {
                case .held:
                    // Recorded `held`, never sent; the journal's counts show it at the end.
                    summary.newRows += 1
                    if options.dryRun { summary.wouldHold += 1 }
                case .duplicate:
                    summary.duplicates += 1
                case .finished(let status):
                    summary.alreadyFinished[status.rawValue, default: 0] += 1
                case .send(let itemID, let attempts, _):
                    summary.newRows += 1
                    take(
                        profileId: row.profileId, transactionId: row.originalTransactionId,
                        row: Row(
                            itemID: itemID, source: source, attemptsBefore: attempts, status: .pending,
                            readerIndex: readerIndex))
                }
            }
        }
        if budgetForSlice == 0 { schedulePump() }
    }

    /// A row this run works on: queued to be sent, or, in a dry run, counted.
    private func take(profileId: String, transactionId: String, row: Row) {
        if options.dryRun {
            summary.wouldSend += 1
            return
        }
        window.add(sequence: nextSequence, profileId: profileId, transactionId: transactionId, payload: row)
        nextSequence += 1
    }

    /// Sharding: each row belongs to the shard its profileId hashes to (rejected rows without a
    /// profileId to shard 0), so one profile's rows stay in order on one machine.
    private func isMine(_ profileId: String) -> Bool {
        runMode.owns(profileId: profileId)
    }

    private func finishReader(_ reader: InputReader, complete: Bool) {
        inputsRecord.append(
            RunInput(path: reader.displayName, sha256: reader.sha256Hex, bytes: reader.bytesRead, complete: complete))
        bytesOfFinishedReaders += reader.bytesRead
        if complete, let empty = reader.noRows {
            summary.inputNotes.append((empty.isWarning ? "warning: " : "") + empty.message(input: reader.displayName))
        }
        reader.close()
        readerIndex += 1
    }

    private func dispatchReady() throws(JournalError) {
        guard let journal, stopReason == nil else { return }
        var now: String?
        while inFlight < throttle.concurrency, window.readyCount > 0 {
            let clock = monotonicSeconds()
            guard pacer.take(now: clock, rate: throttle.effectiveRate) else {
                wakeForPacing()
                break
            }
            guard let sequence = window.takeReady(), var entry = window[sequence] else { continue }
            sendMeter.record(now: clock)
            if !journal.isInTransaction { try journal.begin() }
            let timestamp = now ?? Timestamp.string(Date())
            now = timestamp
            // How a row is marked decides what a kill does to it; the table says which rows keep
            // their status through one.
            let keepsStatus = entry.payload.status.isFinal && finalRowsKeepStatusThroughAKill
            try journal.markInFlight(
                itemID: entry.payload.itemID, runID: runID, now: timestamp, keepsStatus: keepsStatus)
            if entry.payload.attemptsThisRun == 0, let reader = entry.payload.readerIndex {
                rowsSentByReader[reader] += 1
            }
            entry.payload.waitingToRetry = false
            window[sequence] = entry
            pendingSends.append(
                RestoreRequest(
                    tag: sequence, profileId: entry.profileId, originalTransactionId: entry.transactionId))
            inFlight += 1
        }
    }

    /// Pumps again when the pacer allows the next send.
    private func wakeForPacing() {
        guard !paceWakeScheduled else { return }
        paceWakeScheduled = true
        let delay = max(0, pacer.nextSendAt - monotonicSeconds())
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            paceWakeScheduled = false
            pump()
        }
    }

    /// Commits the batch, then sends: a row is marked in flight on disk before its request leaves.
    private func flush() throws(JournalError) {
        guard let journal else { return }
        if journal.isInTransaction && !options.dryRun { try journal.commit() }
        guard !pendingSends.isEmpty, let client else { return }
        let now = Date()
        for request in pendingSends {
            window[request.tag]?.payload.startedAt = now
            client.submit(request)
        }
        pendingSends.removeAll(keepingCapacity: true)
    }

    /// Results arrive on the curl thread. They are handed over in batches: one hop to the
    /// runner's queue per batch instead of a thread wake-up per request.
    private func deliver(_ result: RestoreResult) {
        let first = arrivals.withLock { arrivals in
            arrivals.append(result)
            return arrivals.count == 1
        }
        guard first else { return }
        queue.async { [self] in
            let batch = arrivals.withLock { arrivals in
                let batch = arrivals
                arrivals.removeAll(keepingCapacity: true)
                return batch
            }
            for result in batch { handle(result) }
        }
    }

    private func handle(_ result: RestoreResult) {
        guard !isFinished, var entry = window[result.tag] else { return }
        inFlight -= 1
        summary.requests += 1
        entry.payload.attemptsThisRun += 1
        window[result.tag] = entry
        do {
            try journalResult(result, entry: entry)
        } catch {
            failJournal(error)
            return
        }
        schedulePump()
    }

    private func journalResult(_ result: RestoreResult, entry: OrderingWindow<Row>.Entry) throws(JournalError) {
        guard let journal else { return }
        if !journal.isInTransaction { try journal.begin() }
        let row = entry.payload
        if !result.reply.isThrottling {
            acceptedMeter.record(now: monotonicSeconds())
            latencyAverage = latencyAverage * 0.9 + result.duration * 0.1
        }
        if let rateLimit = result.rateLimit, throttle.advertised(rateLimit), let rate = throttle.effectiveRate {
            pacer.chargeUnpacedBurst(rate: rate)
        }
        if case .retryable(_, let httpStatus, let retryAfter, _) = result.reply {
            let clock = monotonicSeconds()
            let acceptedRate = acceptedMeter.ratePerSecond(now: clock)
            if httpStatus == 429 {
                throttle.tooManyRequests(
                    now: clock, acceptedRate: acceptedRate, latency: latencyAverage,
                    acceptedSpan: acceptedMeter.span(now: clock), retryAfter: retryAfter)
                pacer.hold(until: throttle.holdUntil)
            } else if httpStatus == 503 {
                throttle.unavailable(now: clock, acceptedRate: acceptedRate, latency: latencyAverage)
            }
        }
        let isTimeout = result.reply.code == "timeout"
        let facts = OutcomePolicy.Facts(
            attemptsThisRun: row.attemptsThisRun, isStopping: stopReason != nil,
            budgetCanPay: budget.canPay(isTimeout: isTimeout))
        let decision = policy.decide(result.reply, row: row.status, facts: facts, random: &random)
        if decision.spendsRetryBudget { _ = budget.spend(isTimeout: isTimeout) }
        if case .restored = result.reply {
            budget.succeeded(afterRetry: row.attemptsThisRun > 1, wasTimeout: row.lastWasTimeout)
        }
        if decision.action.stopsRun != nil, case .fatal(let reason, _, let message) = result.reply {
            stop(Self.stopReason(for: reason, message: message))
        }
        var message = result.reply.message
        if decision.reply == .budgetExhausted {
            summary.retryBudgetExhausted += 1
            message = "retry budget exhausted; last error: \(message ?? result.reply.code ?? "")"
        }
        try recordDecision(decision, result: result, entry: entry, message: message)
    }

    /// Journals a decision and carries it out: the row leaves the window, or waits to be retried.
    private func recordDecision(
        _ decision: OutcomePolicy.Decision, result: RestoreResult, entry: OrderingWindow<Row>.Entry, message: String?
    ) throws(JournalError) {
        guard let journal else { return }
        let row = entry.payload
        let code = result.reply.code
        let now = Timestamp.string(Date())
        var profile: ProfileRecord?
        if case .restored(let snapshot) = result.reply { profile = profileRecord(snapshot) }
        try journal.recordAttempt(
            itemID: row.itemID, runID: runID, number: row.attemptsBefore + row.attemptsThisRun,
            startedAt: result.startedAt, durationMilliseconds: result.duration * 1000, httpStatus: result.httpStatus,
            code: code, outcome: decision.action.attemptOutcome, profile: profile)
        // The row's status now, and whether it got an answer: a final row resent without one
        // keeps its status but counts, for the failure threshold, as a row that ran out of attempts.
        let status: ItemStatus
        var answered = true
        switch decision.action.write {
        case .settle(let settled):
            status = settled
            try journal.recordOutcome(
                itemID: row.itemID, status: settled, code: code, httpStatus: result.httpStatus, message: message,
                now: now, profile: profile)
        case .lastError:
            status = .pending
            try journal.recordOutcome(
                itemID: row.itemID, status: .pending, code: code, httpStatus: result.httpStatus, message: message,
                now: now, profile: nil)
        case .attemptOnly:
            status = row.status
            answered = false
        case .nothing, .recoverPending, .clearMark:
            preconditionFailure("a reply never leaves a row \(decision.action.write)")
        }
        switch decision.action.next {
        case .done:
            summary.count(status: status.rawValue, code: answered ? code : nil)
            if !answered { summary.kept += 1 }
            window.remove(entry.sequence)
            countTowardFailureThreshold(answered ? status : .pending)
        case .retry:
            summary.retries += 1
            var waiting = entry
            waiting.payload.lastWasTimeout = code == "timeout"
            waiting.payload.lastCode = code
            waiting.payload.waitingToRetry = true
            window[entry.sequence] = waiting
            waitingToRetry += 1
            let sequence = entry.sequence
            queue.asyncAfter(deadline: .now() + (decision.retryDelay ?? 0)) { [self] in retryDue(sequence) }
        }
    }

    /// S3 Batch Operations style: never keep going (or report success) when most rows fail.
    private func countTowardFailureThreshold(_ status: ItemStatus) {
        guard stopReason == nil else { return }
        settledSent += 1
        if status == .failed || status == .pending { settledBad += 1 }
        guard settledSent >= options.minSample else { return }
        let percent = Double(settledBad) * 100 / Double(settledSent)
        guard percent > options.maxFailureRate else { return }
        let share = String(format: "%.0f%%", percent)
        let threshold = String(format: "%.0f%%", options.maxFailureRate)
        stop(
            .failureThreshold(
                message:
                    "\(share) of the \(settledSent) rows sent failed or ran out of attempts (threshold \(threshold) after \(options.minSample) rows); the rows not sent stay pending"
            ))
    }

    private func retryDue(_ sequence: Int64) {
        guard !isFinished, let entry = window[sequence], entry.payload.waitingToRetry else { return }
        // stop() settles every waiting row itself, so a row still waiting here goes out again.
        waitingToRetry -= 1
        window[sequence]?.payload.waitingToRetry = false
        window.makeReadyAgain(sequence)
        schedulePump()
    }

    private func profileRecord(_ snapshot: ProfileSnapshot) -> ProfileRecord {
        ProfileRecord(state: snapshot.state, accessLevelsJSON: Self.accessLevelsJSON(snapshot.accessLevels))
    }

    /// Access levels as compact JSON with sorted keys and nulls left out (written by hand: an
    /// encoder per reply was a visible cost at thousands of replies per second).
    static func accessLevelsJSON(_ levels: [String: AccessLevelSnapshot]) -> String {
        let entries = levels.sorted { $0.key < $1.key }.map { name, level in
            var fields: [String] = []
            if let expiresAt = level.expiresAt { fields.append("\"expiresAt\":\(JSONString.quoted(expiresAt))") }
            if let isActive = level.isActive { fields.append("\"isActive\":\(isActive)") }
            if let product = level.sourceProductId {
                fields.append("\"sourceProductId\":\(JSONString.quoted(product))")
            }
            if let willRenew = level.willRenew { fields.append("\"willRenew\":\(willRenew)") }
            return "\(JSONString.quoted(name)):{\(fields.joined(separator: ","))}"
        }
        return "{\(entries.joined(separator: ","))}"
    }

    private static func stopReason(for reason: FatalReason, message: String) -> StopReason {
        switch reason {
        case .unauthorized: return .unauthorized(message: message)
        case .forbidden: return .forbidden(message: message)
        case .iosSettingsMissing: return .iosSettingsMissing(message: message)
        case .tlsFailure: return .tlsFailure(message: message)
        }
    }

    // MARK: Stopping and finishing

    private func stop(_ reason: StopReason) {
        guard stopReason == nil else { return }
        stopReason = reason
        summary.stopMessage = Self.describe(reason)
        summary.stopCause = reason.cause?.rawValue
        // Rows waiting out a backoff are done for this run; the table says what a stop writes to
        // them (nothing: their last error is on record, a final row keeps its status).
        for sequence in window.allSequences where window[sequence]?.payload.waitingToRetry == true {
            waitingToRetry -= 1
            if let row = window[sequence]?.payload, let cause = reason.cause {
                let action = OutcomePolicy.action(for: .stop(cause), row: OutcomePolicy.RowClass(row.status))
                applyStopRule(action.write, to: row)
            }
            window.remove(sequence)
        }
    }

    private func applyStopRule(_ write: OutcomePolicy.Write, to row: Row) {
        guard let journal, write != .nothing else { return }
        do {
            if !journal.isInTransaction { try journal.begin() }
            switch write {
            case .lastError:
                try journal.recordOutcome(
                    itemID: row.itemID, status: .pending, code: row.lastCode, httpStatus: nil, message: nil,
                    now: Timestamp.string(Date()), profile: nil)
            case .nothing, .attemptOnly:
                break
            case .settle, .recoverPending, .clearMark:
                preconditionFailure("a stop cannot \(write) a row")
            }
        } catch {
            failJournal(error)
        }
    }

    private static func describe(_ reason: StopReason) -> String {
        switch reason {
        case .unauthorized(let message), .forbidden(let message), .iosSettingsMissing(let message),
            .tlsFailure(let message), .journalFailure(let message), .inputFailure(let message),
            .deadline(let message), .failureThreshold(let message):
            return message
        case .signal(let number):
            return
                "\(number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)"); in-flight requests were allowed to finish"
        }
    }

    private func finishIfDone() {
        guard !isFinished, inFlight == 0, pendingSends.isEmpty else { return }
        if stopReason == nil && !(inputDone && window.isEmpty) { return }
        do {
            try countFromJournal()
        } catch {
            failJournal(error)
            return
        }
        finish(exitCode: exitCode())
    }

    /// The counts the summary, its `runs` line and the exit status rest on, from the journal.
    private func countFromJournal() throws(JournalError) {
        summary.nextCommand = RunAdvice.runCommand(options, inputs: inputDone ? [] : options.inputs)
        guard let journal else { return }
        // A dry run's admissions are in its open transaction: it counts the groups it would meet.
        summary.conflicts = try journal.conflictCounts(runID: runID)
        guard !options.dryRun else { return }
        try summary.countRows(of: runID, in: journal, keptPossible: tookUpFinalRows)
    }

    private func exitCode() -> Int32 {
        switch stopReason {
        case .unauthorized, .forbidden: return ExitCode.permission
        case .iosSettingsMissing: return ExitCode.configuration
        case .tlsFailure: return ExitCode.unavailable
        case .signal(let number): return number == SIGINT ? ExitCode.interrupted : ExitCode.terminated
        case .journalFailure: return ExitCode.cannotCreate
        case .inputFailure: return ExitCode.dataError
        case .deadline: return ExitCode.temporaryFailure
        case .failureThreshold: return ExitCode.unavailable
        case nil: return summary.pending > 0 ? ExitCode.temporaryFailure : ExitCode.success
        }
    }

    private func failJournal(_ error: JournalError) {
        guard !isFinished else { return }
        stopReason = .journalFailure(message: error.description)
        summary.stopMessage = error.description
        client?.shutdown()
        journal?.rollback()
        summary.notSent = window.count
        finish(exitCode: ExitCode.cannotCreate, recordRun: false)
    }

    private func finish(exitCode: Int32, recordRun: Bool = true) {
        isFinished = true
        housekeepingTimer?.cancel()
        summary.throttleEvents = throttle.events
        summary.lowestThrottledRate = throttle.lowestRate
        summary.finalThrottledRate = throttle.isThrottled ? throttle.effectiveRate : nil
        client?.shutdown()
        summary.durationSeconds = Date().timeIntervalSince(startedAt)
        summary.inputComplete = inputDone
        summary.exitCode = exitCode
        if let journal {
            if options.dryRun {
                journal.rollback()
            } else if recordRun {
                do {
                    try journal.transaction { () throws(JournalError) in
                        try journal.finishRun(
                            runID, endedAt: Date(), state: stopReason == nil ? .finished : .stopped,
                            exitCode: exitCode, inputs: inputRecords(), countsJSON: countsJSON())
                    }
                } catch {
                    summary.exitCode = ExitCode.cannotCreate
                    summary.stopMessage = error.description
                }
            }
            journal.close()
        }
        if readerIndex < readers.count {
            for reader in readers[readerIndex...] { reader.close() }
        }
        if let onProgress { onProgress(progress()) }
        done.signal()
    }

    private func inputRecords() -> [RunInput] {
        var records = inputsRecord
        if readerIndex < readers.count {
            for reader in readers[readerIndex...] {
                records.append(
                    RunInput(
                        path: reader.displayName, sha256: reader.sha256Hex, bytes: reader.bytesRead, complete: false))
            }
        }
        return records
    }

    private func countsJSON() -> String {
        (try? snapshotEncoder.encode(summary)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: Progress

    /// Four times a second: raise a throttled rate after quiet spells, enforce the deadline, and
    /// report progress when its interval has passed.
    private func startHousekeeping() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [self] in
            guard !isFinished else { return }
            let rateBefore = throttle.effectiveRate
            let clock = monotonicSeconds()
            throttle.tick(
                now: clock, acceptedRate: acceptedMeter.ratePerSecond(now: clock),
                acceptedSpan: acceptedMeter.span(now: clock))
            if throttle.effectiveRate != rateBefore { schedulePump() }
            if let deadline = options.deadline, Date() >= deadline, stopReason == nil {
                stop(
                    .deadline(
                        message:
                            "the time window ended (\(Timestamp.string(deadline))); in-flight requests were allowed to finish"
                    ))
                schedulePump()
            }
            let elapsed = Date().timeIntervalSince(startedAt)
            if elapsed - lastJournaledProgressAt >= Self.journalProgressInterval && !options.dryRun {
                lastJournaledProgressAt = elapsed
                journalProgress()
            }
            if let onProgress, elapsed - lastProgressAt >= progressInterval {
                lastProgressAt = elapsed
                onProgress(progress())
            }
        }
        housekeepingTimer = timer
        timer.resume()
    }

    /// Writes how far the run has read into its `runs` row; the next batch commit carries it.
    private func journalProgress() {
        guard let journal else { return }
        let current = progress()
        let record = RunProgressRecord(
            rowsRead: current.rowsRead, bytesRead: current.bytesRead, totalBytes: current.totalBytes,
            requests: current.requests, updatedAt: Timestamp.string(Date()))
        do {
            if !journal.isInTransaction { try journal.begin() }
            try journal.recordProgress(runID, record)
            schedulePump()
        } catch {
            failJournal(error)
        }
    }

    private func progress() -> RunProgress {
        let elapsed = Date().timeIntervalSince(startedAt)
        rateSamples.append((elapsed, summary.requests))
        while let first = rateSamples.first, elapsed - first.time > 5, rateSamples.count > 2 {
            rateSamples.removeFirst()
        }
        var recentRate = 0.0
        if let first = rateSamples.first, elapsed - first.time > 0 {
            recentRate = Double(summary.requests - first.requests) / (elapsed - first.time)
        }
        let current = readerIndex < readers.count ? readers[readerIndex] : nil
        var totalBytes: Int64? = 0
        for reader in readers {
            if let total = reader.totalBytes, let sum = totalBytes {
                totalBytes = sum + total
            } else {
                totalBytes = nil
            }
        }
        return RunProgress(
            elapsed: elapsed, rowsRead: summary.rowsRead,
            bytesRead: bytesOfFinishedReaders + (current?.bytesRead ?? 0), totalBytes: totalBytes,
            finished: summary.finished, inFlight: inFlight, waitingToRetry: waitingToRetry, requests: summary.requests,
            retries: summary.retries, statuses: summary.statuses, rejected: summary.rejectedRows,
            skipped: summary.alreadyFinished.values.reduce(0, +), duplicates: summary.duplicates,
            recentRate: recentRate, stopping: summary.stopMessage,
            throttledRate: throttle.isThrottled ? throttle.effectiveRate : nil, concurrencyLimit: throttle.concurrency,
            throttleEvents: throttle.events)
    }
}

extension RestoreReply {
    /// 429, or a 503 (which may be a burst of overload): replies that say "slow down".
    var isThrottling: Bool {
        if case .retryable(_, let status, _, _) = self { return status == 429 || status == 503 }
        return false
    }
}
