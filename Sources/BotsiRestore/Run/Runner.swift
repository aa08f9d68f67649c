import BotsiAPI
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
    private var bytesOfFinishedReaders: Int64 = 0
    private var inputsRecord: [[String: String]] = []
    private var inputDone = false
    private var journal: Journal?
    private var runID: Int64 = 0
    private var temporaryJournalPath: String?
    private var client: RestoreClient?
    private var lock: RunLock?

    private var window = OrderingWindow<Row>()
    private var nextSequence: Int64 = 0
    private var inFlight = 0
    private var waitingToRetry = 0
    private var pendingSends: [RestoreRequest] = []
    private var pumpScheduled = false
    private var stopReason: StopReason?
    private var isFinished = false
    private var budget = RetryBudget()
    private let backoff: BackoffPolicy
    private var random: SeededRandom
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
        backoff = BackoffPolicy(
            base: options.backoffBase, cap: options.backoffCap, retryAfterCap: options.retryAfterCap)
        random = SeededRandom(seed: options.seed ?? UInt64.random(in: 1...UInt64.max))
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
        if !options.dryRun {
            do {
                _ = try validateBaseURL(options.baseURL)
            } catch {
                throw RunSetupError(exitCode: ExitCode.usage, message: error.message)
            }
        }
        try openInputs()
        try openJournal()
        defer {
            lock?.release()
            if let temporaryJournalPath {
                for suffix in ["", "-wal", "-shm", ".lock"] { unlink(temporaryJournalPath + suffix) }
            }
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
        if options.dryRun && !FileManager.default.fileExists(atPath: path) {
            // A dry run must not leave a journal behind: check against an empty throw-away one.
            path = NSTemporaryDirectory() + "/botsi-restore-dry-run-\(getpid()).sqlite"
            temporaryJournalPath = path
        }
        do {
            let holder = LockHolder(
                pid: getpid(), host: ProcessInfo.processInfo.hostName, startedAt: Timestamp.string(startedAt))
            lock = try RunLock(journalPath: path, holder: holder)
            let journal = try Journal(path: path)
            self.journal = journal
            if options.dryRun {
                // Everything a dry run writes is rolled back at the end.
                try journal.begin()
            }
            try journal.transaction { () throws(JournalError) in
                summary.recoveredInFlight = try journal.recoverInFlight()
                runID = try journal.startRun(
                    startedAt: startedAt, toolVersion: toolVersion, host: ProcessInfo.processInfo.hostName,
                    pid: getpid(), optionsJSON: optionsJSON(), inputsJSON: "[]")
            }
        } catch {
            if case .locked = error {
                throw RunSetupError(exitCode: ExitCode.temporaryFailure, message: error.description)
            }
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: error.description)
        }
    }

    private func startClient() throws(RunSetupError) {
        var configuration = ClientConfiguration(
            baseURL: options.baseURL, apiKey: apiKey, userAgent: "botsi-restore/\(toolVersion)")
        configuration.requestTimeout = options.timeout
        configuration.connectTimeout = options.connectTimeout
        configuration.maxConnections = options.concurrency
        configuration.caCertificatePath = options.caCertificatePath
        configuration.insecureSkipTLSVerify = options.insecureSkipTLSVerify
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

    /// Reads a bounded slice of input so that results queued meanwhile are not kept waiting.
    private func readSlice() throws(JournalError) {
        guard let journal else { return }
        let now = Timestamp.string(Date())
        let policy = ResendPolicy(
            retryFailed: options.retryFailed,
            refreshRestoredBefore: options.refreshOlderThan.map { Date().addingTimeInterval(-$0) })
        var budgetForSlice = 2048
        while budgetForSlice > 0 && window.count < windowLimit && stopReason == nil {
            guard readerIndex < readers.count else {
                inputDone = true
                return
            }
            let reader = readers[readerIndex]
            let record: InputRecord?
            do {
                record = try reader.next()
            } catch {
                stop(.inputFailure(message: error.message))
                return
            }
            guard let record else {
                finishReader(reader, complete: true)
                continue
            }
            budgetForSlice -= 1
            if !journal.isInTransaction { try journal.begin() }
            summary.rowsRead += 1
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
                    runID: runID, now: now, policy: policy)
                switch admission {
                case .duplicate:
                    summary.duplicates += 1
                case .finished(let status):
                    summary.alreadyFinished[status.rawValue, default: 0] += 1
                case .send(let itemID, let attempts, let isNew):
                    if isNew { summary.newRows += 1 }
                    if options.dryRun {
                        summary.wouldSend += 1
                    } else {
                        window.add(
                            sequence: nextSequence, profileId: row.profileId,
                            transactionId: row.originalTransactionId,
                            payload: Row(itemID: itemID, source: source, attemptsBefore: attempts))
                        nextSequence += 1
                    }
                }
            }
        }
        if budgetForSlice == 0 { schedulePump() }
    }

    /// Sharding: each row belongs to the shard its profileId hashes to (rejected rows without a
    /// profileId to shard 0), so one profile's rows stay in order on one machine.
    private func isMine(_ profileId: String) -> Bool {
        options.shardCount <= 1
            || shardIndex(profileId: profileId, shardCount: options.shardCount) == options.shardIndex
    }

    private func finishReader(_ reader: InputReader, complete: Bool) {
        inputsRecord.append([
            "path": reader.displayName, "sha256": reader.sha256Hex, "bytes": String(reader.bytesRead),
            "complete": String(complete),
        ])
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
            try journal.markInFlight(itemID: entry.payload.itemID, runID: runID, now: timestamp)
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
        let number = row.attemptsBefore + row.attemptsThisRun
        if !result.reply.isThrottling {
            acceptedMeter.record(now: monotonicSeconds())
            latencyAverage = latencyAverage * 0.9 + result.duration * 0.1
        }
        let now = Timestamp.string(Date())
        func attempt(_ outcome: String, code: String?, profile: ProfileRecord? = nil) throws(JournalError) {
            try journal.recordAttempt(
                itemID: row.itemID, runID: runID, number: number, startedAt: result.startedAt,
                durationMilliseconds: result.duration * 1000, httpStatus: result.httpStatus, code: code,
                outcome: outcome, profile: profile)
        }
        func settle(
            _ status: ItemStatus, code: String?, message: String?, profile: ProfileRecord? = nil
        ) throws(JournalError) {
            try attempt(status.rawValue, code: code, profile: profile)
            try journal.recordOutcome(
                itemID: row.itemID, status: status, code: code, httpStatus: result.httpStatus, message: message,
                now: now, profile: profile)
            summary.count(status: status.rawValue, code: code)
            window.remove(entry.sequence)
            countTowardFailureThreshold(status)
        }
        switch result.reply {
        case .restored(let snapshot):
            budget.succeeded(afterRetry: row.attemptsThisRun > 1, wasTimeout: row.lastWasTimeout)
            try settle(.restored, code: nil, message: nil, profile: profileRecord(snapshot))
        case .nothingToRestore(let message):
            try settle(.nothingToRestore, code: "nothing_to_restore", message: message)
        case .profileNotFound(let message):
            try settle(.profileNotFound, code: "not_found", message: message)
        case .rejected(let code, let message):
            try settle(.rejected, code: code, message: message)
        case .failed(let code, _, let message):
            try settle(.failed, code: code, message: message)
        case .fatal(let reason, _, let message):
            stop(Self.stopReason(for: reason, message: message))
            try settle(.pending, code: reason.rawValue, message: message)
        case .retryable(let code, let httpStatus, let retryAfter, let message):
            let clock = monotonicSeconds()
            let acceptedRate = acceptedMeter.ratePerSecond(now: clock)
            if httpStatus == 429 {
                throttle.tooManyRequests(now: clock, acceptedRate: acceptedRate, latency: latencyAverage)
            } else if httpStatus == 503 {
                throttle.unavailable(now: clock, acceptedRate: acceptedRate, latency: latencyAverage)
            }
            let isTimeout = code == "timeout"
            guard stopReason == nil, row.attemptsThisRun < options.maxAttempts else {
                try settle(.pending, code: code, message: message)
                return
            }
            // With adaptive throttling on, a 429 is answered by slowing down, which already keeps the
            // service from being hammered; the budget guards against services that fail.
            let answeredBySlowingDown = httpStatus == 429 && options.adaptive
            guard answeredBySlowingDown || budget.spend(isTimeout: isTimeout) else {
                summary.retryBudgetExhausted += 1
                try settle(.pending, code: code, message: "retry budget exhausted; last error: \(message ?? code)")
                return
            }
            try attempt("retry", code: code)
            try journal.recordOutcome(
                itemID: row.itemID, status: .pending, code: code, httpStatus: result.httpStatus, message: message,
                now: now, profile: nil)
            summary.retries += 1
            var waiting = entry
            waiting.payload.lastWasTimeout = isTimeout
            waiting.payload.lastCode = code
            waiting.payload.waitingToRetry = true
            window[entry.sequence] = waiting
            waitingToRetry += 1
            let delay = backoff.delay(failedAttempts: row.attemptsThisRun, retryAfter: retryAfter, random: &random)
            let sequence = entry.sequence
            queue.asyncAfter(deadline: .now() + delay) { [self] in retryDue(sequence) }
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
                    "\(share) of the \(settledSent) rows sent failed or ran out of attempts (threshold \(threshold) after \(options.minSample) rows); the unsent rows stay pending — see the codes with 'botsi-restore report --status failed --status pending', fix the cause, then rerun"
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
            if let expiresAt = level.expiresAt { fields.append("\"expiresAt\":\(JSONText.quote(expiresAt))") }
            if let isActive = level.isActive { fields.append("\"isActive\":\(isActive)") }
            if let product = level.sourceProductId { fields.append("\"sourceProductId\":\(JSONText.quote(product))") }
            if let willRenew = level.willRenew { fields.append("\"willRenew\":\(willRenew)") }
            return "\(JSONText.quote(name)):{\(fields.joined(separator: ","))}"
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
        // Rows waiting out a backoff are done for this run: they stay pending with their last error.
        for sequence in window.allSequences where window[sequence]?.payload.waitingToRetry == true {
            waitingToRetry -= 1
            summary.count(status: ItemStatus.pending.rawValue, code: window[sequence]?.payload.lastCode)
            window.remove(sequence)
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
        summary.notSent = window.count
        finish(exitCode: exitCode())
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
                            runID, endedAt: Date(), state: stopReason == nil ? "finished" : "stopped",
                            exitCode: exitCode, inputsJSON: inputsJSON(), countsJSON: countsJSON())
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

    private func inputsJSON() -> String {
        var records = inputsRecord
        if readerIndex < readers.count {
            for reader in readers[readerIndex...] {
                records.append([
                    "path": reader.displayName, "sha256": reader.sha256Hex, "bytes": String(reader.bytesRead),
                    "complete": "false",
                ])
            }
        }
        let data = try? JSONSerialization.data(withJSONObject: records, options: [.sortedKeys])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "[]"
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
            throttle.tick(now: clock, acceptedRate: acceptedMeter.ratePerSecond(now: clock))
            if throttle.effectiveRate != rateBefore { schedulePump() }
            if let deadline = options.deadline, Date() >= deadline, stopReason == nil {
                stop(
                    .deadline(
                        message:
                            "the time window ended (\(Timestamp.string(deadline))); in-flight requests were allowed to finish — the next run continues with the rest"
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
        var fields = [
            "\"rowsRead\":\(current.rowsRead)", "\"bytesRead\":\(current.bytesRead)",
            "\"requests\":\(current.requests)",
            "\"updatedAt\":\(JSONText.quote(Timestamp.string(Date())))",
        ]
        if let total = current.totalBytes { fields.append("\"totalBytes\":\(total)") }
        do {
            if !journal.isInTransaction { try journal.begin() }
            try journal.recordProgress(runID, json: "{\(fields.joined(separator: ","))}")
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
            finished: summary.sent, inFlight: inFlight, waitingToRetry: waitingToRetry, requests: summary.requests,
            retries: summary.retries, statuses: summary.statuses, rejected: summary.rejectedRows,
            skipped: summary.alreadyFinished.values.reduce(0, +), duplicates: summary.duplicates,
            recentRate: recentRate, stopping: summary.stopMessage,
            throttledRate: throttle.isThrottled ? throttle.effectiveRate : nil, concurrencyLimit: throttle.concurrency)
    }
}

extension RestoreReply {
    /// 429, or a 503 (which may be a burst of overload): replies that say "slow down".
    var isThrottling: Bool {
        if case .retryable(_, let status, _, _) = self { return status == 429 || status == 503 }
        return false
    }
}

/// SplitMix64: small, fast and seedable, so a test can replay a run's jitter.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
