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
                return .admitted(held ? .held(itemID: itemID) : .send(itemID: itemID, attempts: 0, isNew: true))
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

    /// One request and what came of it. `outcome` is the row's status after it, `retry`, or `kept`
    /// (a final row's resend ended without a definitive answer). Clears a final row's in-flight mark.
    public func recordAttempt(
        itemID: Int64, runID: Int64, number: Int, startedAt: Date, durationMilliseconds: Double,
        httpStatus: Int?, code: String?, outcome: AttemptOutcome, profile: ProfileRecord?
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                """
                INSERT INTO attempts (item_id, run_id, number, started_at, duration_ms, http_status, code, outcome,
                    profile_state, access_levels)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).reset(
                .int(itemID), .int(runID), .int(Int64(number)), .text(Timestamp.string(startedAt)),
                .double(durationMilliseconds), .optionalInt(httpStatus), .optionalText(code), .text(outcome.rawValue),
                .optionalText(profile?.state), .optionalText(profile?.accessLevelsJSON)
            ).run()
            unwrittenAttempt = itemID
            // Outside a transaction the INSERT is already committed: the count goes with it.
            if !connection.isInTransaction { try writeAttemptCount() }
        }
    }

    /// Records where a row stands after a reply. A final status is a definitive answer (its time
    /// is `answered_at`, what `--refresh-older-than` ages rows by); `pending` with a code means
    /// the run gave up on a pending row for now (attempts or retry budget spent, or the run stopped).
    public func recordOutcome(
        itemID: Int64, status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: String,
        profile: ProfileRecord?
    ) throws(JournalError) {
        // The attempt just recorded for this row is counted by this UPDATE, not by one of its own.
        let countsAttempt = unwrittenAttempt == itemID
        if countsAttempt { unwrittenAttempt = nil }
        do {
            try wrap { () throws(SQLiteError) in
                let update = try outcomeStatement(withProfile: profile != nil, countsAttempt: countsAttempt)
                let finalAt = SQLiteValue.optionalText(status.isFinal ? now : nil)
                if let profile {
                    try update.reset(
                        .text(status.rawValue), .optionalText(code), .optionalInt(httpStatus), .optionalText(message),
                        .text(now), finalAt, .int(itemID), .text(now), .optionalText(profile.state),
                        .optionalText(profile.accessLevelsJSON))
                } else {
                    try update.reset(
                        .text(status.rawValue), .optionalText(code), .optionalInt(httpStatus), .optionalText(message),
                        .text(now), finalAt, .int(itemID))
                }
                try update.run()
            }
        } catch {
            if countsAttempt { unwrittenAttempt = itemID }
            throw error
        }
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
