import BotsiFiles
internal import CSQLite
import Foundation

/// The status a journal row is in. Every row ends in one of the final ones; `pending` and
/// `inFlight` mean the journal owes it: the next run sends it again. A final row keeps its
/// status until a definitive answer replaces it (docs/lifecycle.md). `held` is neither: a pair
/// whose transaction another profile claimed first (`--on-conflict hold`), never sent until
/// `--release-held` makes it owed.
public enum ItemStatus: String, Sendable, CaseIterable, Codable {
    case pending
    case inFlight = "in_flight"
    case restored
    case nothingToRestore = "nothing_to_restore"
    case profileNotFound = "profile_not_found"
    case rejected
    case failed
    case held

    public var isFinal: Bool { self != .pending && self != .inFlight && self != .held }

    /// The code of a held row: the pair's transaction is claimed by another profile.
    public static let heldCode = "transaction_claimed_by_other_profile"
}

/// What a run should do with a row it read from its input.
public enum Admission: Equatable, Sendable {
    /// A pair the journal did not hold: send it. (`attempts` and `isNew` are 0 and true.)
    case send(itemID: Int64, attempts: Int, isNew: Bool)
    /// The same pair already appeared earlier in this run, from its input or as an owed row.
    case duplicate
    /// The journal holds the pair and this run did not select it as owed: nothing to do. A run
    /// selects every row it owes before it reads its input, so the status is a final one (or `held`).
    case finished(ItemStatus)
    /// A new pair whose transaction another profile claimed first, recorded `held` (asked for with
    /// `holdConflicts`): not sent.
    case held(itemID: Int64)
}

/// The profile as the last successful restore returned it, kept for audits.
public struct ProfileRecord: Sendable, Equatable {
    public var state: String?
    /// JSON object: access level id -> {isActive, expiresAt, willRenew, sourceProductId}.
    public var accessLevelsJSON: String?

    public init(state: String?, accessLevelsJSON: String?) {
        self.state = state
        self.accessLevelsJSON = accessLevelsJSON
    }
}

/// The journal: one SQLite file that records every run, every row's outcome and every attempt.
///
/// Not Sendable: a journal belongs to one owner (the runner's serial queue); readers open their
/// own. Writes happen inside `begin()`/`commit()` batches so that one commit covers many rows.
public final class Journal {
    /// The path as given: what messages name.
    public let path: String
    /// The journal file itself: its resolved path (what SQLite opens), its identity and the run lock.
    public let file: JournalFile
    let connection: SQLiteConnection
    /// Prepared statements by the address of their SQL literal: cheaper to look up per row than
    /// hashing the SQL text.
    private var statements: [UInt: SQLiteStatement] = [:]
    /// Statements whose text is put together at run time (once per run, not per row).
    private var builtStatements: [String: SQLiteStatement] = [:]
    /// The row of the last `recordAttempt` whose count (and in-flight mark) is not written yet:
    /// the `recordOutcome` that nearly always follows writes it in its own UPDATE, one statement
    /// per request fewer. Anything else the journal does writes it first (`wrap`), so no query and
    /// no commit ever sees the row without it. Only ever set inside an open transaction.
    private var unwrittenAttempt: Int64?

    /// Opens (and with `create`, creates with mode 0600) a journal, checks it is one of ours,
    /// switches on WAL and migrates it forward. `readOnly` opens an existing journal for reports.
    /// The file rules of `JournalFile` apply first: another user's file, a link to nothing, a FIFO
    /// or a directory others can write is refused before SQLite sees the path.
    /// `migrationUncommitted` (a dry run) migrates inside a transaction it leaves open, for the
    /// caller to roll back: the file stays at its version.
    public convenience init(
        path: String, create: Bool = true, readOnly: Bool = false, migrationUncommitted: Bool = false
    ) throws(JournalError) {
        try self.init(
            path: path, access: readOnly ? .read : (create ? .create : .write), lockForRun: false,
            migrationUncommitted: migrationUncommitted)
    }

    /// Opens (or creates) the journal for a run, holding the run lock of the journal file itself
    /// until `close()`. When another run holds it, throws `.locked` naming the holder, having
    /// created, changed and recorded nothing.
    public static func openForRun(path: String, migrationUncommitted: Bool = false) throws(JournalError) -> Journal {
        try Journal(path: path, access: .create, lockForRun: true, migrationUncommitted: migrationUncommitted)
    }

    init(
        path: String, access: JournalFile.Access, lockForRun: Bool, migrationUncommitted: Bool = false
    ) throws(JournalError) {
        self.path = path
        let file: JournalFile
        do {
            file = try JournalFile(path: path, access: access)
        } catch {
            throw JournalError(error, path: path, creating: access == .create || access == .createNew)
        }
        if lockForRun && !file.tryRunLock() {
            let holder = Journal.holder(of: file, connection: nil)
            file.close()
            throw .locked(path: path, holder: holder)
        }
        do {
            try file.checkSingleName()
        } catch {
            file.close()
            throw .file(error)
        }
        do {
            connection = try SQLiteConnection(path: file.path, readOnly: access == .read)
        } catch {
            file.close()
            throw .cannotOpen(path: path, reason: error.message)
        }
        self.file = file
        guard file.isStillAtItsPath else {
            close()
            throw .cannotOpen(path: path, reason: "it was replaced while it was being opened; nothing was changed")
        }
        connection.setBusyTimeout(milliseconds: 5000)
        do {
            try checkAndMigrate(readOnly: access == .read, commit: !migrationUncommitted)
        } catch let error as JournalError {
            close()
            throw error
        } catch let error as SQLiteError {
            close()
            throw JournalError.from(error, path: path)
        } catch {
            close()
            throw .cannotOpen(path: path, reason: "\(error)")
        }
    }

    deinit { close() }

    /// For a dry run, which creates nothing: true when the journal exists; when it does not, throws
    /// what creating it would meet (a missing, shared or read-only directory) or returns false.
    public static func preflight(path: String) throws(JournalError) -> Bool {
        do throws(FileError) {
            let resolved = try ResolvedPath.resolve(path, role: "journal")
            if resolved.exists { return true }
            try resolved.checkDirectoryIsPrivate(role: "journal")
            guard access(resolved.directory, W_OK | X_OK) == 0 else {
                throw FileError(
                    .readOnly, path: path, "cannot create journal \(path): \(String(cString: strerror(errno)))")
            }
            return false
        } catch {
            throw JournalError(error, path: path, creating: true)
        }
    }

    private func checkAndMigrate(readOnly: Bool, commit: Bool) throws {
        // The first read fails here for a file that is not SQLite at all.
        let applicationID = try connection.scalarInt("PRAGMA application_id") ?? 0
        let version = try connection.scalarInt("PRAGMA user_version") ?? 0
        let tableCount = try connection.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0
        if applicationID != Schema.applicationID && !(applicationID == 0 && tableCount == 0) {
            throw JournalError.notAJournal(path: path, reason: "it is an SQLite database of another application")
        }
        if version > Schema.currentVersion {
            throw JournalError.newerSchema(path: path, version: version, supported: Schema.currentVersion)
        }
        if readOnly {
            guard version == Schema.currentVersion else {
                throw JournalError.notAJournal(
                    path: path, reason: "schema version \(version) needs a run of this version to migrate it first")
            }
            return
        }
        let mode = try connection.scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw JournalError.cannotOpen(
                path: path, reason: "SQLite could not switch it to WAL mode (got \(mode ?? "nothing"))")
        }
        try connection.execute("PRAGMA synchronous=NORMAL")
        try connection.execute("PRAGMA foreign_keys=ON")
        if version < Schema.currentVersion {
            try connection.execute("BEGIN IMMEDIATE")
            do {
                for migration in Schema.migrations[Int(version)...] { try connection.execute(migration) }
                try connection.execute("PRAGMA application_id=\(Schema.applicationID)")
                try connection.execute("PRAGMA user_version=\(Schema.currentVersion)")
                if commit { try connection.execute("COMMIT") }
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Statements are prepared once and reused: the hot path binds and steps only.
    func statement(_ sql: StaticString) throws(SQLiteError) -> SQLiteStatement {
        let key = UInt(bitPattern: sql.utf8Start)
        if let statement = statements[key] { return statement }
        let statement = try connection.prepare(sql.description)
        statements[key] = statement
        return statement
    }

    /// The same, for SQL put together at run time from a few known shapes.
    func statement(built sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = builtStatements[sql] { return statement }
        let statement = try connection.prepare(sql)
        builtStatements[sql] = statement
        return statement
    }

    func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(JournalError) -> T {
        do {
            if unwrittenAttempt != nil { try writeAttemptCount() }
            return try body()
        } catch {
            throw JournalError.from(error, path: path)
        }
    }

    private func writeAttemptCount() throws(SQLiteError) {
        guard let itemID = unwrittenAttempt else { return }
        try statement("UPDATE items SET attempts = attempts + 1, in_flight_run = NULL WHERE id = ?")
            .reset(.int(itemID)).run()
        unwrittenAttempt = nil
    }

    /// Closes the SQLite connection, then lets go of the journal file and its run lock (in that
    /// order: the file's descriptor must outlive the connection). Safe to call more than once.
    public func close() {
        // Closing inside a transaction rolls it back, the attempt with it.
        unwrittenAttempt = nil
        statements.removeAll()
        builtStatements.removeAll()
        connection.close()
        file.close()
    }

    // MARK: Transactions

    public var isInTransaction: Bool { connection.isInTransaction }

    /// Opens a write batch; `BEGIN IMMEDIATE` takes the write lock now, not halfway through.
    public func begin() throws(JournalError) {
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN IMMEDIATE") }
    }

    public func commit() throws(JournalError) {
        try wrap { () throws(SQLiteError) in try connection.execute("COMMIT") }
    }

    /// Rolls back the open batch, if SQLite has not already rolled it back itself.
    public func rollback() {
        unwrittenAttempt = nil
        if connection.isInTransaction { try? connection.execute("ROLLBACK") }
    }

    /// Runs `body` in its own transaction, or inside the one already open (whose owner commits).
    public func transaction<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        if isInTransaction { return try body() }
        try begin()
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            rollback()
            throw error
        }
    }

    // MARK: Runs

    /// Records a new run and returns its id. `optionsJSON` is the run's options as the runner
    /// encodes them (never the key); the journal keeps them for people and for `status`.
    /// Its inputs are recorded when it ends.
    public func startRun(
        startedAt: Date, toolVersion: String, host: String, pid: Int32, optionsJSON: String
    ) throws(JournalError) -> Int64 {
        try wrap { () throws(SQLiteError) in
            try statement(
                "INSERT INTO runs (started_at, tool_version, host, pid, options, inputs) VALUES (?, ?, ?, ?, ?, '[]')"
            )
            .reset(
                .text(Timestamp.string(startedAt)), .text(toolVersion), .text(host), .int(Int64(pid)),
                .text(optionsJSON)
            ).run()
            return connection.lastInsertRowID
        }
    }

    /// Records the end of a run. `countsJSON` is its summary as the runner encodes it (a JSON
    /// object; readers use the fields of `RunCounts`).
    public func finishRun(
        _ runID: Int64, endedAt: Date, state: RunState, exitCode: Int32, inputs: [RunInput], countsJSON: String
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                "UPDATE runs SET ended_at = ?, state = ?, exit_code = ?, inputs = ?, counts = ? WHERE id = ?"
            )
            .reset(
                .text(Timestamp.string(endedAt)), .text(state.rawValue), .int(Int64(exitCode)),
                .text(ColumnJSON.encode(inputs)), .text(countsJSON), .int(runID)
            ).run()
        }
    }

    /// How far the run has got, for `status` while it runs.
    public func recordProgress(_ runID: Int64, _ progress: RunProgressRecord) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement("UPDATE runs SET progress = ? WHERE id = ?")
                .reset(.text(ColumnJSON.encode(progress)), .int(runID)).run()
        }
    }

    /// What a killed run left in flight, put right at the next run's start: rows that were
    /// pending go back to pending (their request may or may not have reached Botsi, and a restore
    /// is safe to repeat); final rows that were being resent lose their mark and stay as they were.
    public func recoverInFlight() throws(JournalError) -> InFlightRecovery {
        try wrap { () throws(SQLiteError) in
            try statement("UPDATE items SET status = 'pending' WHERE status = 'in_flight'").reset().run()
            let pending = connection.changes
            try statement("UPDATE items SET in_flight_run = NULL WHERE in_flight_run IS NOT NULL").reset().run()
            return InFlightRecovery(pending: pending, final: connection.changes)
        }
    }

    // MARK: Rows

    /// Records that this run read the pair at `source` and says whether to send it. Call it after
    /// the run has claimed every row it owes (`claim`): a pair the journal holds is then either
    /// this run's already or not to be sent. With `holdConflicts`, a new pair whose transaction
    /// the journal already pairs with another profile is recorded `held` instead of `pending`.
    public func admit(
        profileId: String, originalTransactionId: String, source: String, runID: Int64, now: String,
        holdConflicts: Bool = false
    ) throws(JournalError) -> Admission {
        try wrap { () throws(SQLiteError) in
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
                return held ? .held(itemID: itemID) : .send(itemID: itemID, attempts: 0, isNew: true)
            }
            let status = ItemStatus(rawValue: lookup.text(1) ?? "") ?? .pending
            // A known row costs no write: a rerun over a journal of finished rows only reads,
            // which is what makes it fast.
            return lookup.int(2) == runID ? .duplicate : .finished(status)
        }
    }

    /// Marks a row in flight before its request goes out, so a crash leaves a trace of it. A
    /// pending row turns `in_flight`; a final row being resent (`keepsStatus`) keeps its status
    /// and gets the mark in `in_flight_run`, so that nothing but a definitive answer changes it.
    public func markInFlight(itemID: Int64, runID: Int64, now: String, keepsStatus: Bool = false) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            if keepsStatus {
                try statement("UPDATE items SET in_flight_run = ?, sent_run = ? WHERE id = ?")
                    .reset(.int(runID), .int(runID), .int(itemID)).run()
            } else {
                try statement("UPDATE items SET status = 'in_flight', sent_run = ?, updated_at = ? WHERE id = ?")
                    .reset(.int(runID), .text(now), .int(itemID)).run()
            }
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
