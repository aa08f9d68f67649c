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
    /// A pair the journal did not hold, recorded `pending`: send it. `mark` is what the journal
    /// wrote, so that marking the row in flight need not read it back.
    case send(itemID: Int64, mark: InFlightMark)
    /// The same pair already appeared earlier in this run's input.
    case duplicate
    /// A row this run took up as owed, met again in its input: sent once, as owed.
    case owedMetAgain
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
    /// The latest snapshots written or found, by hash (`snapshotID`), and the inputs' numbers.
    var snapshotIDs: [Int64: (id: Int64, profile: ProfileRecord)] = [:]
    var inputIDs: [String: Int64] = [:]
    /// Attempts recorded with their INSERT left for later (`recordReply(_:outcome:deferringAttempt:)`),
    /// in order; inserted before the transaction commits, dropped with it when it rolls back.
    var pendingAttempts: [PendingAttempt] = []
    /// The statements of `insert(_:as:values:)`, by their number of rows.
    var multiRowInserts: [MultiRowInsert: [Int: SQLiteStatement]] = [:]

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
            connection = try SQLiteConnection(
                path: file.path, readOnly: access == .read, immutable: file.readsImmutable)
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
            // A reader cannot roll back the journal a run stopped while setting it up left beside it.
            if access == .read, error.isReadOnly, FileManager.default.fileExists(atPath: file.path + "-journal") {
                throw Journal.notSetUp(file, path: path)
            }
            throw JournalError.from(error, path: path)
        } catch {
            close()
            throw .cannotOpen(path: path, reason: "\(error)")
        }
    }

    deinit { close() }

    /// A journal that holds nothing yet, to a reader: being set up (75, try again) while a run
    /// holds it or it changed in the last seconds (a run creates the file, then takes its lock);
    /// otherwise nobody is setting it up and a reader retrying on 75 would wait for ever (66).
    private static func notSetUp(_ file: JournalFile, path: String) -> JournalError {
        let modified = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date
        let recent = modified.map { Date().timeIntervalSince($0) < 5 } ?? true
        return file.isRunLockHeldElsewhere || recent ? .notSetUp(path: path) : .neverSetUp(path: path)
    }

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
        // The first read fails here for a file that is not SQLite at all. One read transaction: a
        // run creating the journal commits its tables and its ids at once, and three reads on their
        // own saw tables without the id between them ("an SQLite database of another application").
        try connection.execute("BEGIN")
        let applicationID = try connection.scalarInt("PRAGMA application_id") ?? 0
        let version = try connection.scalarInt("PRAGMA user_version") ?? 0
        let tableCount = try connection.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0
        try connection.execute("COMMIT")
        if applicationID != Schema.applicationID && !(applicationID == 0 && tableCount == 0) {
            throw JournalError.notAJournal(path: path, reason: "it is an SQLite database of another application")
        }
        if version > Schema.currentVersion {
            throw JournalError.newerSchema(path: path, version: version, supported: Schema.currentVersion)
        }
        if readOnly {
            // Empty: a run is creating it, or one was stopped before it committed anything.
            if version == 0 && tableCount == 0 { throw Journal.notSetUp(file, path: path) }
            guard version == Schema.currentVersion else {
                throw JournalError.olderSchema(path: path, version: version, current: Schema.currentVersion)
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
            let walBytesAtStart = bytesOnDisk(suffix: "-wal")
            var space: UpgradeSpace?
            try connection.execute("BEGIN IMMEDIATE")
            do {
                if tableCount == 0 {
                    // A new journal: created at the current schema at once.
                    try connection.execute(SchemaV5.create)
                } else {
                    space = try checkSpaceToUpgrade(from: version, droppedIndexes: Self.droppedIndexes)
                    try withoutZeroingFreedPages {
                        for migration in Schema.migrations[Int(version)...] { try connection.execute(migration) }
                        try upgradeToV5()
                    }
                    try checkSpaceBeforeCommit(
                        from: version, walBytesAtStart: walBytesAtStart, freeAtStart: space?.free ?? 0)
                }
                try connection.execute("PRAGMA application_id=\(Schema.applicationID)")
                try connection.execute("PRAGMA user_version=\(Schema.currentVersion)")
                if commit { try connection.execute("COMMIT") }
            } catch let failure where tableCount > 0 && Self.isDiskFull(failure) {
                // The disk filled during the copy (the estimate fell short, or something else
                // wrote there): rolled back whole, and said as a refusal with the figures.
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                let free = space?.free ?? freeBytesOnDisk() ?? 0
                throw JournalError.noSpaceToUpgrade(
                    path: path, from: version, to: Schema.currentVersion, needed: max(space?.needed ?? 0, free + 1),
                    free: free)
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
            // The log the upgrade wrote is copied back now, not left for a later run to find the
            // disk full: an upgrade that cannot be copied back is not reported as done.
            if commit && tableCount > 0 { try checkpointAfterUpgrade() }
        } else if commit {
            try dropUnreadIndexes()
            try addRejectionCounts()
        }
    }

    /// Journals of schema 5 written by 0.2.0 count refused input rows only by scanning
    /// `rejections`. Opened to be written (a run, `upgrade`), one gains the counts and their
    /// triggers, filled from the rows already there, in one transaction: a kill leaves all of it or
    /// none. Readers of a journal nothing has written since count the old way
    /// (`rejectionCountsByReason`).
    private func addRejectionCounts() throws {
        // Asked first outside a write transaction: every later open finds them and takes no lock.
        if try connection.hasTable("rejection_counts") { return }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            if try !connection.hasTable("rejection_counts") {
                try connection.execute(SchemaV5.rejectionCounts)
                try connection.execute(
                    "INSERT INTO rejection_counts (reason, rows) SELECT reason, count(*) FROM rejections GROUP BY reason"
                )
            }
            try connection.execute("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Journals of schema 5 written by 0.2.0 have an index of `items.pair_hash` that no query
    /// reads (a pair is found through `items_transaction`, in the order of the input): 19 bytes a
    /// row, and a write per row admitted. A run drops it; its pages are used again as the journal
    /// grows (`VACUUM` gives them back to the disk).
    private func dropUnreadIndexes() throws {
        let unread = try connection.scalarInt(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'items_pair'")
        if unread ?? 0 > 0 { try connection.execute("DROP INDEX items_pair") }
    }

    /// SQLite's SQLITE_FULL, raw or as the journal says it (an input's path recorded mid-copy).
    private static func isDiskFull(_ error: any Error) -> Bool {
        if let error = error as? SQLiteError { return error.isDiskFull }
        if case .diskFull? = error as? JournalError { return true }
        return false
    }

    /// Dropping the old tables frees nearly every page the file had. With `secure_delete` on (as
    /// Debian builds SQLite) each freed page is written again, as zeros, into `-wal`: a log the size
    /// of the whole file and a checkpoint that copies it back. The upgrade has just copied every
    /// value those pages hold into the new tables, so zeroing them hides nothing: `FAST` zeroes only
    /// what costs no write.
    private func withoutZeroingFreedPages(_ body: () throws -> Void) throws {
        let before = try connection.scalarInt("PRAGMA secure_delete") ?? 0
        try connection.execute("PRAGMA secure_delete = FAST")
        defer { try? connection.execute("PRAGMA secure_delete = \(before == 2 ? "FAST" : "\(before)")") }
        try body()
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

    /// Begins a read transaction: every statement until `endRead()` sees the same committed state
    /// while a live run commits its batches. `try beginRead(); defer { endRead() }`.
    func beginRead() throws(JournalError) {
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN") }
    }

    /// Ends a read transaction; a read has nothing to lose if the COMMIT fails.
    func endRead() { try? connection.execute("COMMIT") }

    func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(JournalError) -> T {
        do {
            return try body()
        } catch {
            throw JournalError.from(error, path: path)
        }
    }

    /// Closes the SQLite connection, then lets go of the journal file and its run lock (in that
    /// order: the file's descriptor must outlive the connection). Safe to call more than once.
    public func close() {
        pendingAttempts.removeAll()
        statements.removeAll()
        builtStatements.removeAll()
        multiRowInserts.removeAll()
        connection.close()
        file.close()
    }

    // MARK: Transactions

    public var isInTransaction: Bool { connection.isInTransaction }

    /// Opens a write batch; `BEGIN IMMEDIATE` takes the write lock now, not halfway through.
    public func begin() throws(JournalError) {
        // Attempts left waiting by a transaction SQLite ended by itself were never written.
        pendingAttempts.removeAll()
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN IMMEDIATE") }
    }

    /// Throws when the journal's path no longer names the file this journal has open: a run
    /// checks it before each batch it commits, so that it stops instead of writing on into a file
    /// that was removed (a reviewer's `rm -rf` mid-run: exit 0, and every outcome lost).
    public func checkStillNamed() throws(JournalError) {
        guard !file.isGoneFromItsPath else { throw .removedWhileOpen(path: path) }
    }

    /// After the journal's name was taken from it: everything committed goes into the file this
    /// journal has open (wherever it now is), and the write-ahead log left at the old name is
    /// emptied, so that it cannot be read as part of another file put at that name (a backup).
    public func checkpointIntoOpenFile() {
        try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Commits the open transaction, the attempts still waiting for their INSERT included.
    public func commit() throws(JournalError) {
        try insertPendingAttempts()
        try wrap { () throws(SQLiteError) in try connection.execute("COMMIT") }
    }

    /// Rolls back the open batch, if SQLite has not already rolled it back itself, and drops the
    /// attempts that were waiting to be inserted in it.
    public func rollback() {
        pendingAttempts.removeAll()
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
            // The uid names the run wherever the file is copied: merging copies counts it once.
            try statement(
                """
                INSERT INTO runs (uid, started_at, tool_version, host, pid, options, inputs) VALUES (?, ?, ?, ?, ?, ?, '[]')
                """
            )
            .reset(
                .text(UUID().uuidString.lowercased()), .text(Timestamp.string(startedAt)), .text(toolVersion),
                .text(host), .int(Int64(pid)), .text(optionsJSON)
            ).run()
            return connection.lastInsertRowID
        }
    }

    /// Records the end of a run: its state, exit status, inputs and counts.
    public func finishRun(
        _ runID: Int64, endedAt: Date, state: RunState, exitCode: Int32, inputs: [RunInput], counts: RunCounts
    ) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                "UPDATE runs SET ended_at = ?, state = ?, exit_code = ?, inputs = ?, counts = ? WHERE id = ?"
            )
            .reset(
                .text(Timestamp.string(endedAt)), .text(state.rawValue), .int(Int64(exitCode)),
                .text(ColumnJSON.encode(inputs)), .text(ColumnJSON.encode(counts)), .int(runID)
            ).run()
        }
    }

    /// A sample of the run's pacing (the same instant twice keeps the later one).
    public func recordSample(_ sample: RunSample) throws(JournalError) {
        try wrap { () throws(SQLiteError) in
            try statement(
                """
                INSERT INTO run_samples (run_id, at, rows_read, requests, in_flight, send_rate_limit, concurrency)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (run_id, at) DO UPDATE SET rows_read = excluded.rows_read, requests = excluded.requests,
                    in_flight = excluded.in_flight, send_rate_limit = excluded.send_rate_limit,
                    concurrency = excluded.concurrency
                """
            ).reset(
                .int(sample.runID), .int(sample.at), .int(Int64(sample.rowsRead)), .int(Int64(sample.requests)),
                .int(Int64(sample.inFlight)), sample.sendRateLimit.map { .double($0) } ?? .null,
                .int(Int64(sample.concurrency))
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

    /// The long window the latest run before `runID` knew (recorded with its progress), if any:
    /// what the pacing of run `runID` starts from (with no `runID`, the next run's). A record this
    /// version cannot read is passed over.
    public func lastLongWindow(before runID: Int64 = .max) throws(JournalError) -> RecordedLongWindow? {
        try wrap { () throws(SQLiteError) in
            let runs = try connection.prepare(
                "SELECT id, progress FROM runs WHERE id < ? AND progress LIKE '%\"longWindow\"%' ORDER BY id DESC")
            try runs.bind(.int(runID), at: 1)
            while try runs.step() {
                let text = runs.text(1) ?? "{}"
                if let record = try? JSONDecoder().decode(RunProgressRecord.self, from: Data(text.utf8)).longWindow {
                    return RecordedLongWindow(run: runs.int(0), record: record)
                }
            }
            return nil
        }
    }

    /// The inputs that runs before `runID` named and none read to its end, in the order runs first
    /// named them: each input's latest run says whether it was read to its end, and a run that
    /// recorded no inputs (killed, or still running) read none of those its options name. A run
    /// resumed with no input (`run --journal J`) sends what is owed but reads nothing, so an input a
    /// stopped run left unread is still owed its rest after it: the record must keep saying so.
    /// An input is its recorded path (real, links resolved, since runs recorded that; absolute
    /// before; as typed before runs recorded one) within its shard: `a.csv`, `/data/a.csv` and a
    /// link to it are one, and shard 0/2's unread half is
    /// not read by shard 1/2 (merged journals hold both). Standard input is left out: no later run
    /// can read the same bytes again from the journal's word.
    /// A run given `--forget-input PATH` (`runs.options.forgetInputs`, with their real paths in
    /// `forgetInputPaths`) ends the unread entries earlier runs recorded by that path, in every shard:
    /// the operator said the rest is not coming (a rotated export). The rows read from it stay.
    public func unreadInputs(before runID: Int64 = .max) throws(JournalError) -> [UnreadInput] {
        try inputHistory(before: runID).unread
    }

    /// The run that last read standard input, when it stopped before its end: the rest is in no
    /// file the journal can name, so `status` says to pipe the same export in again (a reviewer's
    /// half-read stdin was never mentioned after the next run). Per shard: shard 1/2 reading its
    /// stdin to the end does not read shard 0/2's. The latest such run of any shard; nil when
    /// none did, or a later run of the same shard read stdin to its end.
    public func unreadStandardInput() throws(JournalError) -> Int64? {
        try inputHistory(before: .max).standardInputUnreadBy
    }

    /// All three at once, from one pass over the runs (what `snapshot` and a run's start read).
    /// `standardInputBytesRead`: by shard (`#I/N`, or empty), the most bytes of standard input
    /// its runs had read since the last that read it to its end (the stream they stopped in).
    public func inputHistory(before runID: Int64) throws(JournalError) -> (
        unread: [UnreadInput], standardInputUnreadBy: Int64?, standardInputBytesRead: [String: Int64]
    ) {
        struct Named: Decodable {
            var inputs: [String]?
            var inputPaths: [String]?
            var shardIndex: Int?
            var shardCount: Int?
            var forgetInputs: [String]?
            var forgetInputPaths: [String]?
        }
        return try wrap { () throws(SQLiteError) in
            let runs = try connection.prepare("SELECT id, options, inputs FROM runs WHERE id < ? ORDER BY id")
            try runs.bind(.int(runID), at: 1)
            var order: [String] = []
            var latest: [String: (input: UnreadInput, complete: Bool)] = [:]
            var standardInputUnreadBy: [String: Int64] = [:]
            var standardInputBytesRead: [String: Int64] = [:]
            while try runs.step() {
                let run = runs.int(0)
                let options = runs.text(1) ?? "{}"
                let named = (try? JSONDecoder().decode(Named.self, from: Data(options.utf8))) ?? Named()
                let recorded =
                    (try? JSONDecoder().decode([RunInput].self, from: Data((runs.text(2) ?? "[]").utf8))) ?? []
                let typed = named.inputs ?? []
                let shard = (named.shardCount ?? 1) > 1 ? "#\(named.shardIndex ?? 0)/\(named.shardCount ?? 1)" : ""
                // Recorded inputs follow the options' order, under their display names ("stdin" for -);
                // each is known by its absolute path where the run recorded those.
                let paths = named.inputPaths.flatMap { $0.count == typed.count ? $0 : nil } ?? typed
                var facts: [(typed: String, path: String, complete: Bool, bytes: Int64?)] = []
                if recorded.isEmpty {
                    facts = zip(typed, paths).map { ($0, $1, false, nil) }
                } else if recorded.count == typed.count {
                    facts = zip(zip(typed, paths), recorded).map { ($0.0, $0.1, $1.complete, $1.bytes) }
                } else {
                    facts = recorded.filter { $0.path != "stdin" }.map { ($0.path, $0.path, $0.complete, $0.bytes) }
                }
                // What the run was told to forget ends the entries of the runs before it; what it
                // reads itself (after) is its own. A forget names an input by its recorded path: the
                // real path it resolved to in the forgetting run's directory, or the path as typed
                // when that is the recorded one (absolute, as `status` advises it; or a run before
                // runs recorded paths, which knows no other). Never by the name an earlier run typed:
                // `a.csv` forgotten in one directory is not another directory's `a.csv`.
                let forgotten = Set((named.forgetInputs ?? []) + (named.forgetInputPaths ?? []))
                if !forgotten.isEmpty {
                    for (key, entry) in latest where forgotten.contains(entry.input.commandPath) {
                        latest[key]?.complete = true
                    }
                }
                if let stdin = facts.first(where: { $0.typed == "-" }) {
                    standardInputUnreadBy[shard] = stdin.complete ? nil : run
                    let before = standardInputBytesRead[shard] ?? 0
                    standardInputBytesRead[shard] = stdin.complete ? nil : max(before, stdin.bytes ?? 0)
                }
                for fact in facts where fact.typed != "-" {
                    let key = fact.path + shard
                    if latest[key] == nil { order.append(key) }
                    // How far the runs since its last complete read got: the most any did.
                    let before = latest[key].flatMap { $0.complete ? nil : $0.input.bytesRead }
                    let bytes = [before, fact.bytes].compactMap { $0 }.max()
                    latest[key] = (
                        UnreadInput(
                            path: fact.typed, commandPath: fact.path, run: run, options: options, bytesRead: bytes,
                            shard: shard),
                        fact.complete
                    )
                }
            }
            return (
                order.compactMap { key in latest[key].flatMap { $0.complete ? nil : $0.input } },
                standardInputUnreadBy.values.max(),
                standardInputBytesRead
            )
        }
    }

    /// No index holds status 1; the counts kept by run name the runs whose rows are in flight
    /// (none after a run that ended), and `items_last_run` finds their rows. A bare
    /// `WHERE status = 1` read every row at each run's start: 0.9 s at 10 million.
    static let recoverPendingSQL: StaticString = """
        UPDATE items SET status = 0
        WHERE status = 1 AND last_run IN (SELECT run_id FROM run_counts WHERE status = 1 AND rows > 0)
        """

    /// What a killed run left in flight, put right at the next run's start: rows that were
    /// pending go back to pending (their request may or may not have reached Botsi, and a restore
    /// is safe to repeat); final rows that were being resent lose their mark and stay as they were.
    public func recoverInFlight() throws(JournalError) -> InFlightRecovery {
        try wrap { () throws(SQLiteError) in
            try statement(Self.recoverPendingSQL).reset().run()
            let pending = connection.changes
            try statement("UPDATE items SET in_flight_run = NULL WHERE in_flight_run IS NOT NULL").reset().run()
            return InFlightRecovery(pending: pending, final: connection.changes)
        }
    }
}
