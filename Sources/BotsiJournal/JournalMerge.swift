import BotsiFiles
import Foundation

/// What `Journal.merge` copied.
public struct MergeSummary: Sendable, Equatable {
    public var runs = 0
    public var items = 0
    public var attempts = 0
    public var rejections = 0
    /// Pairs found in more than one shard; the record updated last was kept.
    public var pairsInSeveralShards = 0

    public init() {}
}

extension Journal {
    /// Combines shard journals (each written by its own runs) into a new journal at `output`,
    /// which must not exist. Runs are renumbered in order of start time and their `options`
    /// gain `mergedFrom: {journal, run}`; a pair found in several shards keeps the record updated
    /// last, with the attempts of all; every attempt and rejection is copied. The new journal is
    /// written under a temporary name beside `output` and linked into place only when whole, so a
    /// merge either happens whole or leaves nothing; `output` is never a shard, a file beside one
    /// or any other existing file.
    /// Journals a command reads together (`status`, the HTML page), each named once: a journal
    /// named twice (by its path again, a symlink, a hard link) was counted twice.
    public static func checkNamedOnce(_ journals: [(path: String, journal: Journal)]) throws(JournalError) {
        var seen = Set<FileIdentity>()
        for (path, journal) in journals where !seen.insert(journal.file.identity).inserted {
            throw .namedTwice(path: path)
        }
    }

    public static func merge(shards: [String], into output: String) throws(JournalError) -> MergeSummary {
        var protected = ProtectedFiles()
        var seen = Set<FileIdentity>()
        var sources: [(name: String, path: String, immutable: Bool)] = []
        for shard in shards {
            // Opening read-only checks that it is a journal of the current schema.
            let journal = try Journal(path: shard, create: false, readOnly: true)
            defer { journal.close() }
            guard seen.insert(journal.file.identity).inserted else {
                throw .namedTwice(path: shard)
            }
            if let holder = journal.runLockHolder() { throw .locked(path: shard, holder: holder) }
            protected.add(journal.file)
            sources.append((shard, journal.file.path, journal.file.readsImmutable))
        }
        let target: ResolvedPath
        do {
            target = try OutputFile.checkTarget(output, role: "merged journal", protecting: protected, mustBeNew: true)
        } catch {
            throw .file(error)
        }
        let temporary = OutputFile.temporarySibling(of: target)
        // Registered before SQLite creates it, so that a stop at any moment finds it.
        TemporaryFiles.register(temporary)
        defer { TemporaryFiles.unregister(temporary) }
        let merged = try Journal(path: temporary, access: .createNew, lockForRun: false)
        do throws(JournalError) {
            let summary = try merged.wrap { () throws(SQLiteError) in
                let summary = try merged.copy(shards: sources)
                // Everything into the main file: it is the only one that moves into place.
                try merged.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return summary
            }
            merged.close()
            var wal = stat()
            guard stat(temporary + "-wal", &wal) != 0 || wal.st_size == 0 else {
                throw JournalError.cannotOpen(path: output, reason: "SQLite left part of it in its write-ahead log")
            }
            do {
                try OutputFile.moveIntoPlace(temporary, target, role: "merged journal", replacing: false)
            } catch {
                throw JournalError.file(error)
            }
            for suffix in ["-wal", "-shm"] { unlink(temporary + suffix) }
            return summary
        } catch {
            merged.close()
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
            throw error
        }
    }

    /// A run as a shard recorded it.
    private struct ShardRun {
        var shard: Int
        var id: Int64
        var uid: String
        var startedAt: String
        var ended: Bool
        var values: [SQLiteValue]
    }

    /// A shard's path as a command typed anywhere can name it (`status` advises it).
    private static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
    }

    private func copy(shards: [(name: String, path: String, immutable: Bool)]) throws(SQLiteError) -> MergeSummary {
        var summary = MergeSummary()
        // Pass 1: every shard's runs. A run found in several shards (a journal copied, then each
        // copy run on: their shared history) is one run, counted once: its uid says so.
        var runs: [ShardRun] = []
        for (index, shard) in shards.enumerated() {
            try attachShard(shard.path, immutable: shard.immutable)
            defer { try? connection.execute("DETACH DATABASE shard") }
            let read = try connection.prepare(
                """
                SELECT id, uid, started_at, ended_at, state, exit_code, tool_version, host, pid,
                    CASE WHEN json_valid(options) AND json_type(options, '$.mergedFrom') = 'object' THEN options
                    ELSE json_set(CASE WHEN json_valid(options) THEN options ELSE '{}' END,
                        '$.mergedFrom', json_object('journal', ?1, 'path', ?2, 'run', id)) END,
                    inputs, counts, progress
                FROM shard.runs ORDER BY id
                """)
            try read.reset(.text(shard.name), .text(Self.absolute(shard.path)))
            while try read.step() {
                runs.append(
                    ShardRun(
                        shard: index, id: read.int(0), uid: read.text(1) ?? "", startedAt: read.text(2) ?? "",
                        ended: !read.isNull(3),
                        values: [
                            .text(read.text(1) ?? ""), .text(read.text(2) ?? ""), .optionalText(read.text(3)),
                            .text(read.text(4) ?? ""), read.optionalInt(5).map { .int($0) } ?? .null,
                            .text(read.text(6) ?? ""), .text(read.text(7) ?? ""), .int(read.int(8)),
                            .text(read.text(9) ?? "{}"), .text(read.text(10) ?? "[]"), .text(read.text(11) ?? "{}"),
                            .text(read.text(12) ?? "{}"),
                        ]))
            }
        }
        // One record per uid: the one that recorded its end, else the first seen.
        var chosen: [String: ShardRun] = [:]
        for run in runs where chosen[run.uid].map({ !$0.ended && run.ended }) ?? true { chosen[run.uid] = run }
        let ordered = chosen.values.sorted { ($0.startedAt, $0.shard, $0.id) < ($1.startedAt, $1.shard, $1.id) }
        var newID: [String: Int64] = [:]
        try connection.execute("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            let insert = try connection.prepare(
                """
                INSERT INTO runs (id, uid, started_at, ended_at, state, exit_code, tool_version, host, pid, options,
                    inputs, counts, progress)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                """)
            for (position, run) in ordered.enumerated() {
                newID[run.uid] = Int64(position + 1)
                try insert.reset(binding: [.int(Int64(position + 1))] + run.values)
                try insert.run()
            }
            try connection.execute("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
        summary.runs = ordered.count
        var runMap: [Int: [Int64: Int64]] = [:]
        for run in runs { runMap[run.shard, default: [:]][run.id] = newID[run.uid] }

        // Pass 2: rows, attempts and rejections, one shard per transaction.
        var shared = MergedRowSet()
        for (index, shard) in shards.enumerated() {
            try attachShard(shard.path, immutable: shard.immutable)
            defer { try? connection.execute("DETACH DATABASE shard") }
            try connection.execute("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                var copier = try ShardCopier(journal: self, runs: runMap[index] ?? [:])
                try copier.copyItems(noting: &shared)
                try copier.copyAttempts()
                try copier.copyRejections()
                try connection.execute("COMMIT")
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
        summary.pairsInSeveralShards = shared.count
        // Each attempt once: a row's count is its attempts as merged.
        try connection.execute(
            """
            BEGIN IMMEDIATE;
            UPDATE items SET attempts = (SELECT count(*) FROM attempts WHERE attempts.item_id = items.id);
            COMMIT;
            """)
        summary.items = Int(try connection.scalarInt("SELECT count(*) FROM main.items") ?? 0)
        summary.attempts = Int(try connection.scalarInt("SELECT count(*) FROM main.attempts") ?? 0)
        summary.rejections = Int(try connection.scalarInt("SELECT count(*) FROM main.rejections") ?? 0)
        return summary
    }

    /// Attaches a shard read-only, as its own open found it must be read (`immutable` on
    /// read-only media): a merge never writes a shard, nor checkpoints its log when it detaches it.
    private func attachShard(_ path: String, immutable: Bool) throws(SQLiteError) {
        try connection.prepare("ATTACH DATABASE ? AS shard")
            .reset(.text(SQLiteConnection.uri(path, immutable: immutable))).run()
    }
}

/// The merged journal's rows found in more than one shard, each once however many shards held it
/// (a journal merged with two copies of one shard counted its pairs twice): a bit per row id,
/// 1.25 MB for ten million rows.
struct MergedRowSet {
    private var words: [UInt64] = []
    private(set) var count = 0

    mutating func insert(_ id: Int64) {
        guard id > 0 else { return }
        let (word, bit) = (Int(id >> 6), UInt64(1) << UInt64(id & 63))
        if word >= words.count { words += Array(repeating: 0, count: max(word + 1 - words.count, words.count)) }
        if words[word] & bit == 0 {
            words[word] |= bit
            count += 1
        }
    }
}

/// Copies one attached shard's rows into the merged journal, mapping its runs, inputs and
/// snapshots to the merged journal's. A pair both hold keeps the record the lifecycle would keep:
/// a final status over one that is not (a row's final status changes only by a new definitive
/// answer), of two final ones the later answer, of two others the later update.
private struct ShardCopier {
    let journal: Journal
    let runs: [Int64: Int64]
    private var inputs: [Int64: Int64] = [:]
    private var snapshots: [Int64: Int64] = [:]

    init(journal: Journal, runs: [Int64: Int64]) throws(SQLiteError) {
        self.journal = journal
        self.runs = runs
        let read = try journal.connection.prepare("SELECT id, path FROM shard.inputs")
        while try read.step() {
            do {
                inputs[read.int(0)] = try journal.inputID(path: read.text(1) ?? "")
            } catch {
                throw SQLiteError(code: 1, message: error.description, sql: nil)
            }
        }
    }

    private func run(_ id: Int64?) -> SQLiteValue { id.flatMap { runs[$0] }.map { .int($0) } ?? .null }

    private mutating func snapshot(_ id: Int64?) throws(SQLiteError) -> SQLiteValue {
        guard let id else { return .null }
        if let known = snapshots[id] { return .int(known) }
        let read = try journal.connection.prepare(
            "SELECT profile_state, access_levels FROM shard.snapshots WHERE id = ?")
        try read.reset(.int(id))
        guard try read.step() else { return .null }
        let merged = try journal.snapshotID(ProfileRecord(state: read.text(0), accessLevelsJSON: read.text(1)))
        if snapshots.count >= 65_536 { snapshots.removeAll(keepingCapacity: true) }
        snapshots[id] = merged
        return .int(merged)
    }

    /// The merged row of a pair, with what the winner rule compares.
    private func mergedRow(hash: Int64, profile: String, transaction: String) throws(SQLiteError)
        -> (id: Int64, status: Int64, answeredAt: Int64?, updatedAt: Int64, createdAt: Int64)?
    {
        let find = try journal.statement(
            """
            SELECT id, status, answered_at, updated_at, created_at FROM main.items
            WHERE pair_hash = ? AND profile_id = ? AND original_transaction_id = ?
            """)
        try find.reset(.int(hash), .text(profile), .text(transaction))
        defer { find.rewind() }
        guard try find.step() else { return nil }
        return (find.int(0), find.int(1), find.optionalInt(2), find.int(3), find.int(4))
    }

    /// Returns how many of the shard's pairs the merged journal held already.
    /// Copies the shard's rows; `shared` gains the merged rows another shard held too.
    mutating func copyItems(noting shared: inout MergedRowSet) throws(SQLiteError) {
        let read = try journal.connection.prepare(
            """
            SELECT pair_hash, profile_id, original_transaction_id, status, code, http_status, message, first_input,
                first_line, last_input, last_line, first_run, last_run, read_run, sent_run, in_flight_run, created_at,
                updated_at, answered_at, restored_at, snapshot_id
            FROM shard.items ORDER BY id
            """)
        let insert = try journal.connection.prepare(
            """
            INSERT INTO main.items (pair_hash, profile_id, original_transaction_id, status, code, http_status, message,
                first_input, first_line, last_input, last_line, first_run, last_run, read_run, sent_run, in_flight_run,
                created_at, updated_at, answered_at, restored_at, snapshot_id)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)
            """)
        let replace = try journal.connection.prepare(
            """
            UPDATE main.items SET status = ?2, code = ?3, http_status = ?4, message = ?5, last_input = ?6,
                last_line = ?7, last_run = ?8, read_run = ?9, sent_run = ?10, in_flight_run = ?11, updated_at = ?12,
                answered_at = ?13, restored_at = ?14, snapshot_id = ?15
            WHERE id = ?1
            """)
        let earliest = try journal.connection.prepare(
            "UPDATE main.items SET created_at = ?2, first_input = ?3, first_line = ?4, first_run = ?5 WHERE id = ?1")
        while try read.step() {
            let hash = read.int(0)
            let profile = read.text(1) ?? ""
            let transaction = read.text(2) ?? ""
            let status = read.int(3)
            let firstInput = SQLiteValue.int(inputs[read.int(7)] ?? 0)
            let lastInput = SQLiteValue.int(inputs[read.int(9)] ?? 0)
            let snapshot = try snapshot(read.optionalInt(20))
            let createdAt = read.int(16)
            let updatedAt = read.int(17)
            let answeredAt = read.optionalInt(18)
            guard let merged = try mergedRow(hash: hash, profile: profile, transaction: transaction) else {
                try insert.reset(
                    binding: [
                        .int(hash), .text(profile), .text(transaction), .int(status), .optionalText(read.text(4)),
                        read.optionalInt(5).map { .int($0) } ?? .null, .optionalText(read.text(6)), firstInput,
                        .int(read.int(8)), lastInput, .int(read.int(10)), run(read.int(11)), run(read.int(12)),
                        run(read.optionalInt(13)), run(read.optionalInt(14)), run(read.optionalInt(15)),
                        .int(createdAt),
                        .int(updatedAt), answeredAt.map { .int($0) } ?? .null,
                        read.optionalInt(19).map { .int($0) } ?? .null, snapshot,
                    ])
                try insert.run()
                continue
            }
            shared.insert(merged.id)
            if MergeRule.replaces(
                status: status, answeredAt: answeredAt, updatedAt: updatedAt, over: merged.status,
                answeredAt: merged.answeredAt, updatedAt: merged.updatedAt)
            {
                try replace.reset(
                    binding: [
                        .int(merged.id), .int(status), .optionalText(read.text(4)),
                        read.optionalInt(5).map { .int($0) } ?? .null, .optionalText(read.text(6)), lastInput,
                        .int(read.int(10)), run(read.int(12)), run(read.optionalInt(13)), run(read.optionalInt(14)),
                        run(read.optionalInt(15)), .int(updatedAt), answeredAt.map { .int($0) } ?? .null,
                        read.optionalInt(19).map { .int($0) } ?? .null, snapshot,
                    ])
                try replace.run()
            }
            if createdAt < merged.createdAt {
                try earliest.reset(
                    binding: [.int(merged.id), .int(createdAt), firstInput, .int(read.int(8)), run(read.int(11))])
                try earliest.run()
            }
        }
    }

    /// Each attempt once: one the merged journal has already (the same run, row and number: the
    /// shared history of copies) is not copied again.
    mutating func copyAttempts() throws(SQLiteError) {
        let read = try journal.connection.prepare(
            """
            SELECT s.pair_hash, s.profile_id, s.original_transaction_id, a.run_id, a.number, a.started_at,
                a.duration_us, a.http_status, a.code, a.outcome, a.snapshot_id
            FROM shard.attempts a JOIN shard.items s ON s.id = a.item_id ORDER BY a.id
            """)
        let seen = try journal.connection.prepare(
            "SELECT 1 FROM main.attempts WHERE item_id = ? AND run_id = ? AND number = ? LIMIT 1")
        let insert = try journal.connection.prepare(
            """
            INSERT INTO main.attempts (item_id, run_id, number, started_at, duration_us, http_status, code, outcome,
                snapshot_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        var item: (hash: Int64, profile: String, transaction: String, id: Int64)?
        while try read.step() {
            let hash = read.int(0)
            let profile = read.text(1) ?? ""
            let transaction = read.text(2) ?? ""
            if item.map({ $0.hash != hash || $0.profile != profile || $0.transaction != transaction }) ?? true {
                guard let merged = try mergedRow(hash: hash, profile: profile, transaction: transaction) else {
                    continue
                }
                item = (hash, profile, transaction, merged.id)
            }
            guard let itemID = item?.id else { continue }
            let runID = run(read.int(3))
            try seen.reset(binding: [.int(itemID), runID, .int(read.int(4))])
            let already = try seen.step()
            seen.rewind()
            if already { continue }
            try insert.reset(
                binding: [
                    .int(itemID), runID, .int(read.int(4)), .int(read.int(5)),
                    read.optionalInt(6).map { .int($0) } ?? .null, read.optionalInt(7).map { .int($0) } ?? .null,
                    .optionalText(read.text(8)), .int(read.int(9)), try snapshot(read.optionalInt(10)),
                ])
            try insert.run()
        }
    }

    func copyRejections() throws(SQLiteError) {
        let read = try journal.connection.prepare(
            """
            SELECT input_id, line, reason, message, profile_id, original_transaction_id, first_run, last_run,
                created_at, updated_at
            FROM shard.rejections ORDER BY id
            """)
        let upsert = try journal.connection.prepare(
            """
            INSERT INTO main.rejections (input_id, line, reason, message, profile_id, original_transaction_id,
                first_run, last_run, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (input_id, line, reason, profile_id, original_transaction_id) DO UPDATE SET
                first_run = min(first_run, excluded.first_run), last_run = max(last_run, excluded.last_run),
                message = CASE WHEN excluded.updated_at > updated_at THEN excluded.message ELSE message END,
                created_at = min(created_at, excluded.created_at), updated_at = max(updated_at, excluded.updated_at)
            """)
        while try read.step() {
            try upsert.reset(
                binding: [
                    .int(inputs[read.int(0)] ?? 0), .int(read.int(1)), .text(read.text(2) ?? ""),
                    .text(read.text(3) ?? ""), .text(read.text(4) ?? ""), .text(read.text(5) ?? ""), run(read.int(6)),
                    run(read.int(7)), .int(read.int(8)), .int(read.int(9)),
                ])
            try upsert.run()
        }
    }
}

/// How a merge chooses between two records of one pair found in two shards.
enum MergeRule {
    /// The lifecycle's rule for two records of one pair: a final status is kept against one that
    /// is not, whatever their times; of two final ones, the later definitive answer; else the
    /// later update.
    static func replaces(
        status: Int64, answeredAt: Int64?, updatedAt: Int64, over heldStatus: Int64, answeredAt heldAnswer: Int64?,
        updatedAt heldUpdate: Int64
    ) -> Bool {
        let isFinal = ItemStatus(journalCode: status)?.isFinal ?? false
        let heldIsFinal = ItemStatus(journalCode: heldStatus)?.isFinal ?? false
        if isFinal != heldIsFinal { return isFinal }
        if isFinal { return (answeredAt ?? updatedAt) > (heldAnswer ?? heldUpdate) }
        return updatedAt > heldUpdate
    }
}
