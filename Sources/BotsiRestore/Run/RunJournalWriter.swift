import BotsiAPI
import BotsiBasics
import BotsiInput
import BotsiJournal
import Foundation

/// The journal's counts of the rows a run worked on, at its end.
struct RowCounts {
    var statuses: [ItemStatus: Int] = [:]
    var codes: [StatusCode: Int] = [:]
    var notSent = 0
    var conflicts = ConflictCounts(groups: 0, rows: 0)
}

/// Every journal write a run makes, on the run's executor. Writes gather in one open batch
/// (`BEGIN IMMEDIATE`) that `commitBatch` ends; the run commits before it sends, so a row is
/// marked in flight on disk before its request leaves (docs/journal.md). The other roles decide;
/// this one performs.
///
/// It also keeps what an in-flight mark replaces, for the rows marked and not sent yet: a row
/// marked ahead of need and then not sent (a stop, a throttle) goes back exactly as it was.
struct RunJournalWriter {
    let journal: Journal
    let runID: Int64
    /// A dry run's writes stay in its open transaction and are rolled back at the end.
    let dryRun: Bool
    /// The long window the latest earlier run knew, and that run: what this run's pacing starts
    /// from, if it is recent enough (`carriedPace`).
    let earlierLongWindow: RecordedLongWindow?
    /// Inputs earlier runs named and none read to its end, whose file is there: still owed their
    /// rest. Those whose file is gone are named apart (asked of the file system once, here).
    let earlierUnreadInputs: [UnreadInput]
    let earlierGoneInputs: [UnreadInput]
    /// The unread inputs of earlier runs this run's `--forget-input` ended, as those runs named
    /// them; and each `--forget-input` that named none of them (a typo forgets nothing).
    var forgottenInputs: [String] = []
    var forgetsMatchingNothing: [String] = []
    /// For each of this run's inputs (by index) that earlier runs left unread in its shard: the
    /// most bytes of it they had read. Fewer bytes there now, read to the end, is a shorter file.
    var earlierBytesRead: [Int: Int64] = [:]
    /// `--shard I/N`'s N: a long window's pace is one shard's share, carried only to runs of as many.
    let shardCount: Int
    /// A long window last seen longer ago than this is not carried: the limit, or who shares it,
    /// may have changed, and a pace found anew costs one window spent early.
    static let longWindowKeptFor: TimeInterval = 7 * 86_400
    /// Rows whose columns as they stand without this run's mark are known without reading them:
    /// a row just admitted (what the INSERT wrote), a row marked and not sent yet (what the mark
    /// replaced), a row put back. A reply or a send ends it: the row is not as it was any more.
    private var unmarkedColumns: [Int64: InFlightMark] = [:]
    /// Transactions among the rows the run took up that another profile claims too.
    private var sharedTransactions: Set<String> = []
    /// The table's rule for a final row whose resend a kill cuts short: keep its status (mark it
    /// apart) or return to pending (mark it `in_flight`).
    private let finalRowsKeepStatusThroughAKill =
        OutcomePolicy.action(for: .killed, row: .final).write == .clearMark

    /// Puts right what a killed run left in flight and records this run.
    static func startRun(
        on journal: Journal, options: RunOptions, startedAt: Date, toolVersion: String
    ) throws(JournalError) -> (writer: RunJournalWriter, recovered: InFlightRecovery) {
        // Everything a dry run writes, a migration included, is rolled back at the end.
        if options.dryRun && !journal.isInTransaction { try journal.begin() }
        return try journal.transaction { () throws(JournalError) in
            let recovery = try journal.recoverInFlight()
            let runID = try journal.startRun(
                startedAt: startedAt, toolVersion: toolVersion, host: ProcessInfo.processInfo.hostName,
                pid: getpid(), optionsJSON: optionsJSON(options))
            let earlier = try journal.lastLongWindow(before: runID)
            var writer = RunJournalWriter(
                journal: journal, runID: runID, dryRun: options.dryRun, earlierLongWindow: earlier,
                // Through this run's own record, which names its inputs: those it reads drop out.
                earlierUnreadInputs: try journal.unreadInputs(before: runID + 1).filter { $0.run != runID },
                shardCount: options.shardCount)
            let history = try journal.inputHistory(before: runID)
            let before = history.unread
            let shard = options.shardCount > 1 ? "#\(options.shardIndex)/\(options.shardCount)" : ""
            for (index, input) in options.inputs.enumerated() {
                // The stream a run of this shard stopped in: another piped in is told by its rows too.
                if input == "-" {
                    if let bytes = history.standardInputBytesRead[shard], bytes > 0 {
                        writer.earlierBytesRead[index] = bytes
                    }
                    continue
                }
                let path = RunAdvice.inputIdentity(input)
                if let bytes = before.first(where: { $0.commandPath == path && $0.shard == shard })?.bytesRead,
                    bytes > 0
                {
                    writer.earlierBytesRead[index] = bytes
                }
            }
            if !options.forgetInputs.isEmpty {
                // The file PATH names from this run's directory, or PATH as the journal records the
                // input (what `status` advises): never the name another run typed in its own
                // directory (`a.csv` here is not another directory's `a.csv`). `Journal.inputHistory`
                // matches the same way.
                // Each PATH resolved once (a `realpath`), not once for every recorded input.
                let forget = options.forgetInputs.map { (typed: $0, identity: RunAdvice.inputIdentity($0)) }
                func names(_ unread: UnreadInput, _ path: (typed: String, identity: String)) -> Bool {
                    unread.commandPath == path.identity || unread.commandPath == path.typed
                }
                for unread in before where forget.contains(where: { names(unread, $0) }) {
                    if !writer.forgottenInputs.contains(unread.path) { writer.forgottenInputs.append(unread.path) }
                }
                let matchingNothing = forget.filter { path in !before.contains { names($0, path) } }
                writer.forgetsMatchingNothing = matchingNothing.map(\.typed)
            }
            return (writer, recovery)
        }
    }

    private init(
        journal: Journal, runID: Int64, dryRun: Bool, earlierLongWindow: RecordedLongWindow?,
        earlierUnreadInputs: [UnreadInput], shardCount: Int
    ) {
        self.journal = journal
        self.runID = runID
        self.dryRun = dryRun
        self.earlierLongWindow = earlierLongWindow
        var readable: [UnreadInput] = []
        var gone: [UnreadInput] = []
        for input in earlierUnreadInputs {
            if input.exists { readable.append(input) } else { gone.append(input) }
        }
        self.earlierUnreadInputs = readable
        earlierGoneInputs = gone
        self.shardCount = shardCount
    }

    /// The pace an earlier run found on a long window, for this run's pacing to start from: nil
    /// when none did, or when it was last seen more than `longWindowKeptFor` before `now`.
    func carriedPace(now: Date) -> LongWindowPace? {
        guard let record = earlierLongWindow?.record, Self.isCarried(record, now: now, shardCount: shardCount)
        else { return nil }
        return LongWindowPace(cycle: record.cycleSeconds, rate: record.rate)
    }

    /// Whether a run starting at `now` (with `shardCount` shards, when known) starts from `record`:
    /// one a run could have written (a window longer than `longClosed`, a finite rate), seen at
    /// most `longWindowKeptFor` before (and not a day after: another host's clock), by a run of
    /// as many shards (a share of the limit is a share of it).
    static func isCarried(_ record: LongWindowRecord, now: Date, shardCount: Int? = nil) -> Bool {
        guard record.cycleSeconds >= RateController.Tuning().longClosed, record.cycleSeconds.isFinite,
            record.rate > 0, record.rate.isFinite, let seen = Timestamp.date(record.seenAt)
        else { return false }
        if let shardCount, shardCount != record.shardCount { return false }
        let age = now.timeIntervalSince(seen)
        return age >= -86_400 && age <= longWindowKeptFor
    }

    // MARK: Batches

    func beginBatch() throws(JournalError) {
        if !journal.isInTransaction { try journal.begin() }
    }

    /// Ends the open batch (a dry run keeps it open, to roll it back).
    func commitBatch() throws(JournalError) {
        guard journal.isInTransaction && !dryRun else { return }
        try journal.checkStillNamed()
        try journal.commit()
    }

    func rollback() { journal.rollback() }

    var hasOpenBatch: Bool { journal.isInTransaction }

    // MARK: Taking rows up

    /// The next owed row `feeder` hands out, read inside the batch that claims it.
    func nextOwed(from feeder: inout OwedRowFeeder) throws(JournalError) -> OwedRow? {
        try beginBatch()
        return try feeder.next(from: journal)
    }

    mutating func claim(_ owed: OwedRow) throws(JournalError) {
        try beginBatch()
        try journal.claim(itemID: owed.itemID, runID: runID)
        try noteConflict(owed.originalTransactionID, profileId: owed.profileID)
    }

    /// An owed final row a stop left unsent goes back to the run that had it: this run's counts
    /// do not show it by a status it did not give, and the next selection takes it up again.
    func giveBack(_ row: RunRow) throws(JournalError) {
        guard let previous = row.claimedFrom else { return }
        try beginBatch()
        try journal.claim(itemID: row.itemID, runID: previous)
    }

    /// Admits a slice's rows of this shard in input order (`Journal.admit`, which finds them a
    /// batch at a time).
    mutating func admit(_ pairs: [PairToAdmit], now: Int64, holdConflicts: Bool) throws(JournalError) -> [Admission] {
        guard !pairs.isEmpty else { return [] }
        try beginBatch()
        let admissions = try journal.admit(
            pairs, runID: runID, now: now, holdConflicts: holdConflicts, sharedTransactions: &sharedTransactions)
        for case .send(let itemID, let mark) in admissions { unmarkedColumns[itemID] = mark }
        return admissions
    }

    /// A transaction among the run's rows that another profile claims too: counted as the run
    /// takes its rows up, so the end of a run of millions of rows reads only these groups.
    private mutating func noteConflict(_ transactionId: String, profileId: String) throws(JournalError) {
        if try journal.isShared(transactionId, byOtherThan: profileId) { sharedTransactions.insert(transactionId) }
    }

    func recordRejection(_ rejected: RejectedRow, source: RowSource, now: Int64) throws(JournalError) {
        try beginBatch()
        try journal.recordRejection(
            source: source, reason: rejected.reason.rawValue, message: rejected.message,
            profileId: rejected.profileId, originalTransactionId: rejected.originalTransactionId, runID: runID,
            now: now)
    }

    /// The journal's numbers for the inputs' names, recorded the first time a run reads each.
    func inputIDs(_ names: [String]) throws(JournalError) -> [Int64] {
        try beginBatch()
        var ids: [Int64] = []
        for name in names { ids.append(try journal.inputID(path: name)) }
        return ids
    }

    // MARK: Sending and replies

    /// How a row is marked decides what a kill does to it; the table says which rows keep their
    /// status through one.
    mutating func markInFlight(_ row: RunRow, now: Int64) throws(JournalError) {
        try markInFlight([row], now: now)
    }

    /// Marks `rows` at `now`, each as `markInFlight(_:now:)` would; the rows that do not keep
    /// their status and whose columns the writer knows (admitted or put back by this run) are
    /// marked together, a statement per 32 rows.
    mutating func markInFlight(_ rows: [RunRow], now: Int64) throws(JournalError) {
        guard !rows.isEmpty else { return }
        try beginBatch()
        var known: [Int64] = []
        for row in rows {
            let keepsStatus = row.status.isFinal && finalRowsKeepStatusThroughAKill
            if !keepsStatus, unmarkedColumns[row.itemID] != nil {
                known.append(row.itemID)
                continue
            }
            unmarkedColumns[row.itemID] = try journal.markInFlight(
                itemID: row.itemID, runID: runID, now: now, keepsStatus: keepsStatus,
                known: unmarkedColumns[row.itemID])
        }
        try journal.markInFlight(itemIDs: known, runID: runID, now: now)
    }

    /// The row's request left: what its mark replaced is not needed any more.
    mutating func sent(_ row: RunRow) {
        unmarkedColumns[row.itemID] = nil
    }

    /// A row marked in flight that will not be sent now goes back as it was.
    func unmark(_ row: RunRow) throws(JournalError) {
        guard let columns = unmarkedColumns[row.itemID] else {
            preconditionFailure("items row \(row.itemID) is put back but was not marked by this run")
        }
        try beginBatch()
        try journal.unmarkInFlight(columns)
    }

    /// Records a reply's attempt and what `decision` writes to its row. Returns the row's status
    /// now, and whether it got an answer: a final row resent without one keeps its status.
    /// Mutating though it changes nothing here: the run keeps its writer in a class property, and a
    /// non-mutating call on that copied the whole writer first (~1,000 instructions a reply).
    mutating func recordReply(
        _ result: RestoreResult, decision: OutcomePolicy.Decision, row: RunRow, message: String?
    ) throws(JournalError) -> (status: ItemStatus, answered: Bool) {
        try beginBatch()
        let code = result.reply.code
        let now = Timestamp.milliseconds(Date())
        var profile: ProfileRecord?
        if case .restored(let snapshot) = result.reply { profile = Self.profileRecord(snapshot) }
        let attempt = AttemptRecord(
            itemID: row.itemID, runID: runID, number: row.attemptsBefore + row.attemptsThisRun,
            startedAt: result.startedAt, durationMilliseconds: result.duration * 1000, httpStatus: result.httpStatus,
            code: code, outcome: decision.action.attemptOutcome, profile: profile)
        switch decision.action.write {
        case .settle(let settled):
            try journal.recordReply(
                attempt,
                outcome: OutcomeRecord(
                    status: settled, code: code, httpStatus: result.httpStatus, message: message, now: now,
                    profile: profile),
                deferringAttempt: true)
            return (settled, true)
        case .lastError:
            try journal.recordReply(
                attempt,
                outcome: OutcomeRecord(
                    status: .pending, code: code, httpStatus: result.httpStatus, message: message, now: now,
                    profile: nil),
                deferringAttempt: true)
            return (.pending, true)
        case .attemptOnly:
            try journal.recordReply(attempt, outcome: nil, deferringAttempt: true)
            return (row.status, false)
        case .nothing, .recoverPending, .clearMark:
            preconditionFailure("a reply never leaves a row \(decision.action.write)")
        }
    }

    /// What a stop writes to a row waiting out a backoff (the table says: nothing today).
    func applyStopRule(_ write: OutcomePolicy.Write, to row: RunRow) throws(JournalError) {
        guard write != .nothing else { return }
        try beginBatch()
        switch write {
        case .lastError:
            try journal.recordOutcome(
                OutcomeRecord(
                    status: .pending, code: row.lastCode, httpStatus: nil, message: nil,
                    now: Timestamp.milliseconds(Date()), profile: nil),
                itemID: row.itemID)
        case .nothing, .attemptOnly:
            break
        case .settle, .recoverPending, .clearMark:
            preconditionFailure("a stop cannot \(write) a row")
        }
    }

    // MARK: The run's record

    /// Writes how far the run has read into its `runs` row; the next batch commit carries it.
    /// `longWindow`: the one the pacing knows, for the next run; when this run has not seen it
    /// itself (only carried it), it keeps the time an earlier run saw it.
    func recordProgress(_ progress: RunProgress, longWindow: LongWindowPace?, at now: Date) throws(JournalError) {
        let window = longWindow.map { pace in
            LongWindowRecord(
                cycleSeconds: pace.cycle, rate: pace.rate,
                seenAt: pace.seen ? Timestamp.string(now) : earlierLongWindow?.record.seenAt ?? Timestamp.string(now),
                shardCount: shardCount)
        }
        let record = RunProgressRecord(
            rowsRead: progress.rowsRead, bytesRead: progress.bytesRead, totalBytes: progress.totalBytes,
            requests: progress.requests, updatedAt: Timestamp.string(now), longWindow: window)
        try beginBatch()
        try journal.recordProgress(runID, record)
        // And a sample of the pacing, a few rows per interval: what the HTML report draws over time.
        try journal.recordSample(
            RunSample(
                runID: runID, at: Timestamp.milliseconds(now), rowsRead: progress.rowsRead,
                requests: progress.requests, inFlight: progress.inFlight, sendRateLimit: progress.sendRateLimit,
                concurrency: progress.concurrencyLimit))
    }

    /// The counts the summary, its `runs` line and the exit status rest on, from the journal: the
    /// rows run `runID` worked on (its new input rows and the owed rows it took up), by their
    /// status now. `keptPossible`: the run took up final rows, so some resends may have been kept
    /// without an answer.
    func rowCounts() throws(JournalError) -> RowCounts {
        var counts = RowCounts()
        // A dry run's admissions are in its open transaction: it counts the groups it would meet.
        counts.conflicts = try journal.conflictCounts(transactions: sharedTransactions)
        guard !dryRun else { return counts }
        for count in try journal.rowCounts(runID: runID) {
            let status = count.status
            counts.statuses[status, default: 0] += count.count
            counts.codes[StatusCode(status, count.code), default: 0] += count.count
            if status == .pending || status == .inFlight { counts.notSent += count.notSent }
        }
        return counts
    }

    /// The run's requests whose attempt the journal holds (committed).
    func recordedRequests() throws(JournalError) -> Int {
        try journal.recordedRequests(runID: runID)
    }

    /// Ends the run's record: how it ended, its inputs and its counts.
    func finishRun(
        stopped: Bool, exitCode: Int32, inputs: [RunInput], summary: RunSummary
    ) throws(JournalError) {
        try journal.transaction { () throws(JournalError) in
            try journal.finishRun(
                runID, endedAt: Date(), state: stopped ? .stopped : .finished, exitCode: exitCode, inputs: inputs,
                counts: summary.record)
        }
    }

    /// A run whose record was started but that could not begin sending (its client did not
    /// start): recorded as stopped with that exit status and message, and the journal closed.
    func endBeforeSending(exitCode: Int32, message: String) {
        var summary = RunSummary()
        summary.exitCode = exitCode
        summary.stopMessage = message
        if dryRun {
            rollback()
        } else {
            try? finishRun(stopped: true, exitCode: exitCode, inputs: [], summary: summary)
        }
        journal.close()
    }

    // MARK: JSON columns

    private static func optionsJSON(_ options: RunOptions) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(options),
            var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return "{}" }
        // Each input's real path too (- as itself): `a.csv`, `/data/a.csv` and a link to it are one
        // input to `Journal.unreadInputs`, whatever directory each run started in.
        object["inputPaths"] = options.inputs.map(RunAdvice.inputIdentity)
        // And each input to forget's, as the inputs' are, for the same match.
        if !options.forgetInputs.isEmpty {
            object["forgetInputPaths"] = options.forgetInputs.map(RunAdvice.inputIdentity)
        }
        // The key file's too, for the command `status` advises from another directory.
        if let keyFile = options.keyFile { object["keyFilePath"] = RunAdvice.absolutePath(keyFile) }
        if let caFile = options.caCertificatePath { object["caCertificateFilePath"] = RunAdvice.absolutePath(caFile) }
        // The concurrency asked for, not the one the descriptor limit allowed this time: what
        // `status` shows as typed and the next command asks for again.
        if let asked = options.concurrencyAsked { object["concurrency"] = asked }
        object["concurrencyAsked"] = nil
        object["advisesAbsolutePaths"] = nil
        let written = try? JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return written.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func profileRecord(_ snapshot: ProfileSnapshot) -> ProfileRecord {
        ProfileRecord(state: snapshot.state, accessLevelsJSON: accessLevelsJSON(snapshot.accessLevels))
    }

    /// Access levels as compact JSON with sorted keys and nulls left out, built in one byte buffer
    /// (written by hand: an encoder, or a string per field, per reply was a visible cost at
    /// thousands of replies per second; so were nested helpers capturing the buffer and appending
    /// two-byte strings through `String.utf8`, ~5,600 instructions a reply).
    static func accessLevelsJSON(_ levels: [String: AccessLevelSnapshot]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(96 * levels.count + 2)
        out.append(UInt8(ascii: "{"))
        if levels.count == 1, let (name, level) = levels.first {
            appendLevel(name, level, to: &out)
        } else {
            for name in levels.keys.sorted() {
                guard let level = levels[name] else { continue }
                if out.count > 1 { out.append(UInt8(ascii: ",")) }
                appendLevel(name, level, to: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `"name":{...}`, the level's fields in key order, nulls left out.
    private static func appendLevel(_ name: String, _ level: AccessLevelSnapshot, to out: inout [UInt8]) {
        JSONString.append(name, to: &out)
        out.append(UInt8(ascii: ":"))
        out.append(UInt8(ascii: "{"))
        var first = true
        if let value = level.expiresAt {
            appendKey(#""expiresAt":"#, first: &first, to: &out)
            JSONString.append(value, to: &out)
        }
        if let value = level.isActive {
            appendKey(#""isActive":"#, first: &first, to: &out)
            appendBool(value, to: &out)
        }
        if let value = level.sourceProductId {
            appendKey(#""sourceProductId":"#, first: &first, to: &out)
            JSONString.append(value, to: &out)
        }
        if let value = level.willRenew {
            appendKey(#""willRenew":"#, first: &first, to: &out)
            appendBool(value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A field's quoted key and colon, after a comma unless it is the object's first field.
    private static func appendKey(_ key: StaticString, first: inout Bool, to out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        key.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func appendBool(_ value: Bool, to out: inout [UInt8]) {
        let literal: StaticString = value ? "true" : "false"
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }
}
