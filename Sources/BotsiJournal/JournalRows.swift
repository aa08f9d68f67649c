import BotsiFiles
internal import CSQLite
import Foundation

// The row writes of a run: admission, the in-flight mark, attempts and outcomes, rejections.

/// The columns an in-flight mark replaces, as they were (kept verbatim, never interpreted).
public struct InFlightMark: Sendable, Equatable {
    let itemID: Int64
    /// The status's number, as stored.
    let status: Int64
    /// Milliseconds since 1970.
    let updatedAt: Int64
    let sentRun: Int64?
    let inFlightRun: Int64?

    /// What `admit` writes for a new pair at `now`: a row taken up from the input is marked with
    /// this known, and the mark need not read it back.
    public static func admitted(itemID: Int64, at now: Int64) -> InFlightMark {
        InFlightMark(
            itemID: itemID, status: ItemStatus.pending.journalCode, updatedAt: now, sentRun: nil, inFlightRun: nil)
    }
}

/// Where a pair was read: an input of the journal (`Journal.inputID(path:)`) and its line.
public struct RowSource: Sendable, Hashable {
    public var input: Int64
    public var line: Int

    public init(input: Int64, line: Int) {
        self.input = input
        self.line = line
    }
}

/// An attempt whose INSERT waits (`Journal.recordReply(_:outcome:deferringAttempt:)`), with its
/// snapshot's id already found.
struct PendingAttempt {
    let attempt: AttemptRecord
    let snapshot: Int64?
}

/// One request to a row's pair, as `recordReply` journals it.
public struct AttemptRecord: Sendable, Equatable {
    public var itemID: Int64
    public var runID: Int64
    /// The row's attempts, this one included, over every run.
    public var number: Int
    /// When the run handed the request to the client.
    public var startedAt: Date
    public var durationMilliseconds: Double
    public var httpStatus: Int?
    public var code: String?
    /// The status the row took, `retry`, or `kept`.
    public var outcome: AttemptOutcome
    /// A 200's profile, kept with the attempt for audits.
    public var profile: ProfileRecord?

    public init(
        itemID: Int64, runID: Int64, number: Int, startedAt: Date, durationMilliseconds: Double, httpStatus: Int?,
        code: String?, outcome: AttemptOutcome, profile: ProfileRecord?
    ) {
        self.itemID = itemID
        self.runID = runID
        self.number = number
        self.startedAt = startedAt
        self.durationMilliseconds = durationMilliseconds
        self.httpStatus = httpStatus
        self.code = code
        self.outcome = outcome
        self.profile = profile
    }
}

/// Where a row stands after a reply (or a stop), as the journal writes it to the row.
public struct OutcomeRecord: Sendable, Equatable {
    public var status: ItemStatus
    public var code: String?
    public var httpStatus: Int?
    public var message: String?
    /// The row's `updated_at` (and `answered_at` for a final status, `restored_at` with a profile),
    /// in milliseconds since 1970.
    public var now: Int64
    /// A 200's profile: replaces the row's snapshot.
    public var profile: ProfileRecord?

    public init(
        status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: Int64, profile: ProfileRecord?
    ) {
        self.status = status
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
        self.now = now
        self.profile = profile
    }
}

extension Journal {
    /// The journal's number for the input at `path` (as a run names it in messages), recorded the
    /// first time a run reads it.
    public func inputID(path: String) throws(JournalError) -> Int64 {
        if let id = inputIDs[path] { return id }
        let id = try wrap { () throws(SQLiteError) -> Int64 in
            try statement("INSERT INTO inputs (path) VALUES (?) ON CONFLICT (path) DO NOTHING")
                .reset(.text(path)).run()
            let find = try statement("SELECT id FROM inputs WHERE path = ?")
            try find.reset(.text(path))
            defer { find.rewind() }
            guard try find.step() else {
                throw SQLiteError(code: SQLITE_NOTFOUND, message: "the input \(path) was not recorded", sql: nil)
            }
            return find.int(0)
        }
        inputIDs[path] = id
        return id
    }

    /// Marks a row in flight before its request goes out, so a crash leaves a trace of it. A
    /// pending row turns `in_flight`; a final row being resent (`keepsStatus`) keeps its status
    /// and gets the mark in `in_flight_run`, so that nothing but a definitive answer changes it.
    /// Returns what the mark replaced (`known`, when the caller knows it, else read first): a row
    /// marked ahead of need and then not sent (a stop, a throttle) is put back with
    /// `unmarkInFlight` exactly as it was.
    @discardableResult
    public func markInFlight(
        itemID: Int64, runID: Int64, now: Int64, keepsStatus: Bool = false, known: InFlightMark? = nil
    ) throws(JournalError) -> InFlightMark {
        try wrap { () throws(SQLiteError) in
            let mark: InFlightMark
            if let known { mark = known } else { mark = try readMark(itemID) }
            if keepsStatus {
                try statement("UPDATE items SET in_flight_run = ?, sent_run = ? WHERE id = ?")
                    .reset(.int(runID), .int(runID), .int(itemID)).run()
            } else {
                try markPending(itemID: itemID, runID: runID, now: now)
            }
            return mark
        }
    }

    private func markPending(itemID: Int64, runID: Int64, now: Int64) throws(SQLiteError) {
        try statement("UPDATE items SET status = 1, sent_run = ?, updated_at = ? WHERE id = ?")
            .reset(.int(runID), .int(now), .int(itemID)).run()
    }

    /// Rows marked by one statement of `markInFlight(itemIDs:runID:now:)`.
    static let markBatchSize = 32

    static let markBatchSQL =
        "UPDATE items SET status = 1, sent_run = ?1, updated_at = ?2 WHERE id IN ("
        + (3..<(3 + markBatchSize)).map { "?\($0)" }.joined(separator: ", ") + ")"

    /// Marks rows in flight as `markInFlight(itemID:runID:now:)` does one at a time (not keeping
    /// their status), up to `markBatchSize` rows a statement: each statement costs SQLite a
    /// statement transaction and the count trigger's frame (~7,000 instructions), whatever its
    /// number of rows. The caller knows what the marks replace.
    public func markInFlight(itemIDs: [Int64], runID: Int64, now: Int64) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            // One row: the plain statement, which needs no IN list.
            guard itemIDs.count > 1 else {
                if let itemID = itemIDs.first { try markPending(itemID: itemID, runID: runID, now: now) }
                return
            }
            let update = try statement(built: Self.markBatchSQL)
            for start in stride(from: 0, to: itemIDs.count, by: Self.markBatchSize) {
                let end = min(start + Self.markBatchSize, itemIDs.count)
                update.rewind()
                try update.bind(.int(runID), at: 1)
                try update.bind(.int(now), at: 2)
                // A short batch repeats its first row: `IN` is a set, so it is marked once.
                for slot in 0..<Self.markBatchSize {
                    try update.bind(.int(itemIDs[start + slot < end ? start + slot : start]), at: Int32(slot + 3))
                }
                try update.run()
            }
        }
    }

    private func readMark(_ itemID: Int64) throws(SQLiteError) -> InFlightMark {
        let read = try statement("SELECT status, updated_at, sent_run, in_flight_run FROM items WHERE id = ?")
        try read.reset(.int(itemID))
        // A statement left on its row holds a read that keeps every later commit in the WAL.
        defer { read.rewind() }
        guard try read.step() else {
            throw SQLiteError(
                code: SQLITE_NOTFOUND, message: "items row \(itemID) is gone: another program changed the journal",
                sql: nil)
        }
        return InFlightMark(
            itemID: itemID, status: read.int(0), updatedAt: read.int(1), sentRun: read.optionalInt(2),
            inFlightRun: read.optionalInt(3))
    }

    /// Puts a row marked in flight but never sent back as `markInFlight` found it: status,
    /// `updated_at`, `sent_run` and `in_flight_run`. Nothing was sent, so nothing else changed.
    public func unmarkInFlight(_ mark: InFlightMark) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement("UPDATE items SET status = ?, updated_at = ?, sent_run = ?, in_flight_run = ? WHERE id = ?")
                .reset(
                    .int(mark.status), .int(mark.updatedAt), mark.sentRun.map { .int($0) } ?? .null,
                    mark.inFlightRun.map { .int($0) } ?? .null, .int(mark.itemID)
                ).run()
        }
    }

    /// One request and what came of it: the attempt, counted on its row (whose in-flight mark it
    /// clears), and, when `outcome` is given, where the row stands after it — in one INSERT and one
    /// UPDATE, the run's two statements per reply. Without an outcome the row keeps its status
    /// (a final row's resend that got no definitive answer).
    public func recordReply(_ attempt: AttemptRecord, outcome: OutcomeRecord?) throws(JournalError) {
        try recordReply(attempt, outcome: outcome, deferringAttempt: false)
    }

    /// `recordReply(_:outcome:)`; with `deferringAttempt`, the attempt's INSERT waits in order
    /// with the others recorded so, until `insertPendingAttempts` or the commit inserts them, up to
    /// 32 rows a statement: each INSERT statement costs SQLite a statement transaction and the
    /// count trigger's frame whatever its number of rows (~7,000 instructions). The row's UPDATE
    /// is made at once, so nothing but the attempts table waits, and nothing a run reads.
    public func recordReply(
        _ attempt: AttemptRecord, outcome: OutcomeRecord?, deferringAttempt: Bool
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            let snapshot = try attempt.profile.map { profile throws(SQLiteError) in try snapshotID(profile) }
            let pending = PendingAttempt(attempt: attempt, snapshot: snapshot)
            if deferringAttempt {
                pendingAttempts.append(pending)
            } else {
                try insertAttempts(pending)
            }
            if let outcome {
                try writeOutcome(outcome, itemID: attempt.itemID, countsAttempt: true, snapshot: snapshot)
            } else {
                try statement("UPDATE items SET attempts = attempts + 1, in_flight_run = NULL WHERE id = ?")
                    .reset(.int(attempt.itemID)).run()
            }
        }
    }

    /// Inserts the attempts waiting for their INSERT, in order.
    public func insertPendingAttempts() throws(JournalError) {
        guard !pendingAttempts.isEmpty else { return }
        try wrap { () throws(SQLiteError) in
            try insertAttempts(pendingAttempts[...])
            pendingAttempts.removeAll(keepingCapacity: true)
        }
    }

    private func insertAttempts(_ attempt: PendingAttempt) throws(SQLiteError) {
        try insertAttempts([attempt][...])
    }

    private func insertAttempts(_ attempts: ArraySlice<PendingAttempt>) throws(SQLiteError) {
        try insert(attempts, as: .attempts) { pending in
            let attempt = pending.attempt
            return [
                .int(attempt.itemID), .int(attempt.runID), .int(Int64(attempt.number)),
                .int(Timestamp.milliseconds(attempt.startedAt)),
                .int(Int64((attempt.durationMilliseconds * 1000).rounded())), .optionalInt(attempt.httpStatus),
                .optionalText(attempt.code), .int(attempt.outcome.journalCode),
                pending.snapshot.map { .int($0) } ?? .null,
            ]
        }
    }

    /// An attempt alone, counted on its row at once; `recordOutcome` may follow.
    public func recordAttempt(
        itemID: Int64, runID: Int64, number: Int, startedAt: Date, durationMilliseconds: Double,
        httpStatus: Int?, code: String?, outcome: AttemptOutcome, profile: ProfileRecord?
    ) throws(JournalError) {
        try recordReply(
            AttemptRecord(
                itemID: itemID, runID: runID, number: number, startedAt: startedAt,
                durationMilliseconds: durationMilliseconds, httpStatus: httpStatus, code: code, outcome: outcome,
                profile: profile),
            outcome: nil)
    }

    /// `recordOutcome(_:itemID:)` with the record's fields spelled out.
    public func recordOutcome(
        itemID: Int64, status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: Int64,
        profile: ProfileRecord?
    ) throws(JournalError) {
        try recordOutcome(
            OutcomeRecord(
                status: status, code: code, httpStatus: httpStatus, message: message, now: now, profile: profile),
            itemID: itemID)
    }

    /// Records where a row stands without a new attempt (what a stop writes to a row waiting out
    /// a backoff). A final status is a definitive answer (its time is `answered_at`, what
    /// `--refresh-older-than` ages rows by); `pending` with a code means the run gave up on a
    /// pending row for now.
    public func recordOutcome(_ outcome: OutcomeRecord, itemID: Int64) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            let snapshot = try outcome.profile.map { profile throws(SQLiteError) in try snapshotID(profile) }
            try writeOutcome(outcome, itemID: itemID, countsAttempt: false, snapshot: snapshot)
        }
    }

    private func writeOutcome(
        _ outcome: OutcomeRecord, itemID: Int64, countsAttempt: Bool, snapshot: Int64?
    ) throws(SQLiteError) {
        let update = try outcomeStatement(withProfile: snapshot != nil, countsAttempt: countsAttempt)
        // Bound one by one, not through an array of values: a row's array cost an allocation and
        // its copies (~1,400 instructions a reply). Every parameter is bound again: 1-7, and 8,
        // which only the statements with a profile have.
        update.rewind()
        try update.bind(.int(outcome.status.journalCode), at: 1)
        try update.bind(.optionalText(outcome.code), at: 2)
        try update.bind(.optionalInt(outcome.httpStatus), at: 3)
        try update.bind(.optionalText(outcome.message), at: 4)
        try update.bind(.int(outcome.now), at: 5)
        try update.bind(.optionalInt(outcome.status.isFinal ? Int(outcome.now) : nil), at: 6)
        try update.bind(.int(itemID), at: 7)
        if let snapshot { try update.bind(.int(snapshot), at: 8) }
        try update.run()
    }

    /// The UPDATE of `recordOutcome`: parameters 1-7 are status, code, HTTP status, message, now,
    /// answered-at and the row id; 8, with a profile, is its snapshot (and now is `restored_at`).
    private func outcomeStatement(withProfile: Bool, countsAttempt: Bool) throws(SQLiteError) -> SQLiteStatement {
        switch (withProfile, countsAttempt) {
        case (true, true):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    restored_at = ?5, snapshot_id = ?8, answered_at = coalesce(?6, answered_at),
                    attempts = attempts + 1, in_flight_run = NULL
                WHERE id = ?7
                """)
        case (true, false):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    restored_at = ?5, snapshot_id = ?8, answered_at = coalesce(?6, answered_at)
                WHERE id = ?7
                """)
        case (false, true):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    answered_at = coalesce(?6, answered_at), attempts = attempts + 1, in_flight_run = NULL
                WHERE id = ?7
                """)
        case (false, false):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    answered_at = coalesce(?6, answered_at)
                WHERE id = ?7
                """)
        }
    }

    /// The `snapshots` row of a profile as a 200 returned it: each distinct snapshot is stored once,
    /// and rows and attempts name it. Found by a hash of its two texts (then compared), through a
    /// bounded cache of the latest ones, since replies of one run mostly repeat a few.
    func snapshotID(_ profile: ProfileRecord) throws(SQLiteError) -> Int64 {
        // FNV-1a over the state's UTF-8, a byte saying whether it is absent, then the same for the
        // access levels; over the contiguous bytes (iterating `String.utf8` cost ~3,800 instructions
        // a reply).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var state = profile.state ?? ""
        state.withUTF8 { hash = Self.fnv1a(hash, $0) }
        hash = (hash ^ (profile.state == nil ? 1 : 0)) &* 0x100_0000_01b3
        var accessLevels = profile.accessLevelsJSON ?? ""
        accessLevels.withUTF8 { hash = Self.fnv1a(hash, $0) }
        hash = (hash ^ (profile.accessLevelsJSON == nil ? 1 : 0)) &* 0x100_0000_01b3
        let key = Int64(bitPattern: hash)
        if let cached = snapshotIDs[key], cached.profile == profile { return cached.id }
        let find = try statement(
            """
            SELECT id FROM snapshots WHERE hash = ?1 AND profile_state IS ?2 AND access_levels IS ?3
            ORDER BY id LIMIT 1
            """)
        try find.reset(.int(key), .optionalText(profile.state), .optionalText(profile.accessLevelsJSON))
        var id: Int64?
        if try find.step() { id = find.int(0) }
        find.rewind()
        if id == nil {
            try statement("INSERT INTO snapshots (hash, profile_state, access_levels) VALUES (?, ?, ?)")
                .reset(.int(key), .optionalText(profile.state), .optionalText(profile.accessLevelsJSON)).run()
            id = connection.lastInsertRowID
        }
        if snapshotIDs.count >= 4096 { snapshotIDs.removeAll(keepingCapacity: true) }
        snapshotIDs[key] = (id!, profile)
        return id!
    }

    /// A row the input checks refused. The same row seen again by a later run updates its record.
    public func recordRejection(
        source: RowSource, reason: String, message: String, profileId: String?, originalTransactionId: String?,
        runID: Int64, now: Int64
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                """
                INSERT INTO rejections (input_id, line, reason, message, profile_id, original_transaction_id,
                    first_run, last_run, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (input_id, line, reason, profile_id, original_transaction_id)
                DO UPDATE SET last_run = excluded.last_run, message = excluded.message, updated_at = excluded.updated_at
                """
            ).reset(
                .int(source.input), .int(Int64(source.line)), .text(reason), .text(message), .text(profileId ?? ""),
                .text(originalTransactionId ?? ""), .int(runID), .int(runID), .int(now), .int(now)
            ).run()
        }
    }
}
