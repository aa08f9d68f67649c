import BotsiFiles
internal import CSQLite
import Foundation

// The row writes of a run: admission, the in-flight mark, attempts and outcomes, rejections.

/// The columns an in-flight mark replaces, as they were (kept verbatim, never interpreted).
public struct InFlightMark: Sendable, Equatable {
    let itemID: Int64
    let status: String
    let updatedAt: String
    let sentRun: Int64?
    let inFlightRun: Int64?

    /// What `admit` writes for a new pair at `now`: a row taken up from the input is marked with
    /// this known, and the mark need not read it back.
    public static func admitted(itemID: Int64, at now: String) -> InFlightMark {
        InFlightMark(
            itemID: itemID, status: ItemStatus.pending.rawValue, updatedAt: now, sentRun: nil, inFlightRun: nil)
    }
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
    /// The row's `updated_at` (and `answered_at` for a final status, `restored_at` with a profile).
    public var now: String
    /// A 200's profile: replaces the row's snapshot.
    public var profile: ProfileRecord?

    public init(
        status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: String, profile: ProfileRecord?
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
    /// Records that this run read the pair at `source` and says whether to send it. Call it after
    /// the run has claimed every row it owes (`claim`): a pair the journal holds is then either
    /// this run's already or not to be sent. With `holdConflicts`, a new pair whose transaction
    /// the journal already pairs with another profile is recorded `held` instead of `pending`.
    public func admit(
        profileId: String, originalTransactionId: String, source: String, runID: Int64, now: String,
        holdConflicts: Bool = false
    ) throws(JournalError) -> Admission {
        let found = try wrap { () throws(SQLiteError) -> AdmitLookup in
            let lookup = try statement(
                "SELECT id, status, last_run FROM items WHERE profile_id = ? AND original_transaction_id = ?"
            )
            try lookup.reset(.text(profileId), .text(originalTransactionId))
            guard try lookup.step() else {
                var held = false
                if holdConflicts { held = try isClaimedByAnotherProfile(originalTransactionId, profileId: profileId) }
                try statement(
                    """
                    INSERT INTO items (profile_id, original_transaction_id, status, code, first_source, last_source,
                        first_run, last_run, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
                ).reset(
                    .text(profileId), .text(originalTransactionId),
                    .text(held ? ItemStatus.held.rawValue : ItemStatus.pending.rawValue),
                    .optionalText(held ? ItemStatus.heldCode : nil), .text(source), .text(source), .int(runID),
                    .int(runID), .text(now), .text(now)
                ).run()
                let itemID = connection.lastInsertRowID
                return .admitted(
                    held ? .held(itemID: itemID) : .send(itemID: itemID, mark: .admitted(itemID: itemID, at: now)))
            }
            return .known(itemID: lookup.int(0), status: lookup.text(1), lastRun: lookup.int(2))
        }
        switch found {
        case .admitted(let admission):
            return admission
        case .known(let itemID, let text, let lastRun):
            // A known row costs no write: a rerun over a journal of finished rows only reads,
            // which is what makes it fast. A status this version does not know is refused, not guessed.
            let status = try decodeEnum(ItemStatus.self, text, table: "items", column: "status", row: itemID)
            return lastRun == runID ? .duplicate : .finished(status)
        }
    }

    /// What `admit` found: a pair it has just inserted, or one the journal held.
    private enum AdmitLookup {
        case admitted(Admission)
        case known(itemID: Int64, status: String?, lastRun: Int64)
    }

    /// Marks a row in flight before its request goes out, so a crash leaves a trace of it. A
    /// pending row turns `in_flight`; a final row being resent (`keepsStatus`) keeps its status
    /// and gets the mark in `in_flight_run`, so that nothing but a definitive answer changes it.
    /// Returns what the mark replaced (`known`, when the caller knows it, else read first): a row
    /// marked ahead of need and then not sent (a stop, a throttle) is put back with
    /// `unmarkInFlight` exactly as it was.
    @discardableResult
    public func markInFlight(
        itemID: Int64, runID: Int64, now: String, keepsStatus: Bool = false, known: InFlightMark? = nil
    ) throws(JournalError) -> InFlightMark {
        try wrap { () throws(SQLiteError) in
            let mark: InFlightMark
            if let known { mark = known } else { mark = try readMark(itemID) }
            if keepsStatus {
                try statement("UPDATE items SET in_flight_run = ?, sent_run = ? WHERE id = ?")
                    .reset(.int(runID), .int(runID), .int(itemID)).run()
            } else {
                try statement("UPDATE items SET status = 'in_flight', sent_run = ?, updated_at = ? WHERE id = ?")
                    .reset(.int(runID), .text(now), .int(itemID)).run()
            }
            return mark
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
            itemID: itemID, status: read.text(0) ?? "", updatedAt: read.text(1) ?? "", sentRun: read.optionalInt(2),
            inFlightRun: read.optionalInt(3))
    }

    /// Puts a row marked in flight but never sent back as `markInFlight` found it: status,
    /// `updated_at`, `sent_run` and `in_flight_run`. Nothing was sent, so nothing else changed.
    public func unmarkInFlight(_ mark: InFlightMark) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement("UPDATE items SET status = ?, updated_at = ?, sent_run = ?, in_flight_run = ? WHERE id = ?")
                .reset(
                    .text(mark.status), .text(mark.updatedAt), mark.sentRun.map { .int($0) } ?? .null,
                    mark.inFlightRun.map { .int($0) } ?? .null, .int(mark.itemID)
                ).run()
        }
    }

    /// One request and what came of it: the attempt, counted on its row (whose in-flight mark it
    /// clears), and, when `outcome` is given, where the row stands after it — in one INSERT and one
    /// UPDATE, the run's two statements per reply. Without an outcome the row keeps its status
    /// (a final row's resend that got no definitive answer).
    public func recordReply(_ attempt: AttemptRecord, outcome: OutcomeRecord?) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                """
                INSERT INTO attempts (item_id, run_id, number, started_at, duration_ms, http_status, code, outcome,
                    profile_state, access_levels)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).reset(
                .int(attempt.itemID), .int(attempt.runID), .int(Int64(attempt.number)),
                .text(Timestamp.string(attempt.startedAt)), .double(attempt.durationMilliseconds),
                .optionalInt(attempt.httpStatus), .optionalText(attempt.code), .text(attempt.outcome.rawValue),
                .optionalText(attempt.profile?.state), .optionalText(attempt.profile?.accessLevelsJSON)
            ).run()
            if let outcome {
                try writeOutcome(outcome, itemID: attempt.itemID, countsAttempt: true)
            } else {
                try statement("UPDATE items SET attempts = attempts + 1, in_flight_run = NULL WHERE id = ?")
                    .reset(.int(attempt.itemID)).run()
            }
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
        itemID: Int64, status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: String,
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
        try wrap { () throws(SQLiteError) in try writeOutcome(outcome, itemID: itemID, countsAttempt: false) }
    }

    private func writeOutcome(_ outcome: OutcomeRecord, itemID: Int64, countsAttempt: Bool) throws(SQLiteError) {
        let update = try outcomeStatement(withProfile: outcome.profile != nil, countsAttempt: countsAttempt)
        let finalAt = SQLiteValue.optionalText(outcome.status.isFinal ? outcome.now : nil)
        if let profile = outcome.profile {
            try update.reset(
                .text(outcome.status.rawValue), .optionalText(outcome.code), .optionalInt(outcome.httpStatus),
                .optionalText(outcome.message), .text(outcome.now), finalAt, .int(itemID), .text(outcome.now),
                .optionalText(profile.state), .optionalText(profile.accessLevelsJSON))
        } else {
            try update.reset(
                .text(outcome.status.rawValue), .optionalText(outcome.code), .optionalInt(outcome.httpStatus),
                .optionalText(outcome.message), .text(outcome.now), finalAt, .int(itemID))
        }
        try update.run()
    }

    /// The UPDATE of `recordOutcome`: parameters 1-7 are status, code, HTTP status, message, now,
    /// answered-at and the row id; 8-10, with a profile, are restored-at, profile state and levels.
    private func outcomeStatement(withProfile: Bool, countsAttempt: Bool) throws(SQLiteError) -> SQLiteStatement {
        switch (withProfile, countsAttempt) {
        case (true, true):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    restored_at = ?8, profile_state = ?9, access_levels = ?10, answered_at = coalesce(?6, answered_at),
                    attempts = attempts + 1, in_flight_run = NULL
                WHERE id = ?7
                """)
        case (true, false):
            try statement(
                """
                UPDATE items SET status = ?1, code = ?2, http_status = ?3, message = ?4, updated_at = ?5,
                    restored_at = ?8, profile_state = ?9, access_levels = ?10, answered_at = coalesce(?6, answered_at)
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

    /// A row the input checks refused. The same row seen again by a later run updates its record.
    public func recordRejection(
        file: String, line: Int, reason: String, message: String, profileId: String?, originalTransactionId: String?,
        runID: Int64, now: String
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                """
                INSERT INTO rejections (file, line, reason, message, profile_id, original_transaction_id,
                    first_run, last_run, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (file, line, reason, profile_id, original_transaction_id)
                DO UPDATE SET last_run = excluded.last_run, message = excluded.message, updated_at = excluded.updated_at
                """
            ).reset(
                .text(file), .int(Int64(line)), .text(reason), .text(message), .text(profileId ?? ""),
                .text(originalTransactionId ?? ""), .int(runID), .int(runID), .text(now), .text(now)
            ).run()
        }
    }
}
