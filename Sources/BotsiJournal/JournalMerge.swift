import BotsiFiles
import Foundation

/// What `Journal.merge` copied.
public struct MergeSummary: Sendable, Equatable {
    public var runs = 0
    public var items = 0
    public var attempts = 0
    public var rejections = 0
    /// Pairs found in more than one shard; the record updated last was kept, unless it owed the row
    /// and another shard's was final.
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
    public static func merge(shards: [String], into output: String) throws(JournalError) -> MergeSummary {
        var protected = ProtectedFiles()
        var seen = Set<FileIdentity>()
        var sources: [(name: String, path: String)] = []
        for shard in shards {
            // Opening read-only checks that it is a journal of the current schema.
            let journal = try Journal(path: shard, create: false, readOnly: true)
            defer { journal.close() }
            guard seen.insert(journal.file.identity).inserted else {
                throw .cannotOpen(path: output, reason: "shard journal \(shard) is named twice")
            }
            if let holder = journal.runLockHolder() { throw .locked(path: shard, holder: holder) }
            protected.add(journal.file)
            sources.append((shard, journal.file.path))
        }
        let target: ResolvedPath
        do {
            target = try OutputFile.checkTarget(output, role: "merged journal", protecting: protected, mustBeNew: true)
        } catch {
            throw .file(error)
        }
        let temporary = OutputFile.temporarySibling(of: target)
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

    private func copy(shards: [(name: String, path: String)]) throws(SQLiteError) -> MergeSummary {
        var summary = MergeSummary()
        try connection.execute(
            """
            CREATE TEMP TABLE merge_runs (
                shard INTEGER NOT NULL, old_id INTEGER NOT NULL, new_id INTEGER,
                started_at TEXT NOT NULL, ended_at TEXT, state TEXT NOT NULL, exit_code INTEGER,
                tool_version TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
                options TEXT NOT NULL, inputs TEXT NOT NULL, counts TEXT NOT NULL,
                PRIMARY KEY (shard, old_id)
            )
            """)
        // Pass 1: every shard's runs, so that all can be numbered in order of start time.
        for (index, shard) in shards.enumerated() {
            try attachShard(shard.path)
            defer { try? connection.execute("DETACH DATABASE shard") }
            try connection.prepare(
                """
                INSERT INTO temp.merge_runs (shard, old_id, started_at, ended_at, state, exit_code, tool_version, host,
                    pid, options, inputs, counts)
                SELECT ?1, id, started_at, ended_at, state, exit_code, tool_version, host, pid,
                    json_set(CASE WHEN json_valid(options) THEN options ELSE '{}' END,
                        '$.mergedFrom', json_object('journal', ?2, 'run', id)),
                    inputs, counts
                FROM shard.runs
                """
            ).reset(.int(Int64(index)), .text(shard.name)).run()
        }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try connection.execute(
                """
                UPDATE temp.merge_runs SET new_id = numbered.position
                FROM (SELECT shard, old_id, row_number() OVER (ORDER BY started_at, shard, old_id) AS position
                      FROM temp.merge_runs) AS numbered
                WHERE numbered.shard = merge_runs.shard AND numbered.old_id = merge_runs.old_id;
                INSERT INTO main.runs (id, started_at, ended_at, state, exit_code, tool_version, host, pid, options,
                    inputs, counts)
                SELECT new_id, started_at, ended_at, state, exit_code, tool_version, host, pid, options, inputs, counts
                FROM temp.merge_runs ORDER BY new_id;
                """)
            try connection.execute("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
        summary.runs = Int(try connection.scalarInt("SELECT count(*) FROM main.runs") ?? 0)

        // Pass 2: rows, attempts and rejections, one shard per transaction.
        for (index, shard) in shards.enumerated() {
            try attachShard(shard.path)
            defer { try? connection.execute("DETACH DATABASE shard") }
            try connection.execute("BEGIN IMMEDIATE")
            do {
                summary.pairsInSeveralShards += try copyRows(shard: Int64(index))
                try connection.execute("COMMIT")
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
        summary.items = Int(try connection.scalarInt("SELECT count(*) FROM main.items") ?? 0)
        summary.attempts = Int(try connection.scalarInt("SELECT count(*) FROM main.attempts") ?? 0)
        summary.rejections = Int(try connection.scalarInt("SELECT count(*) FROM main.rejections") ?? 0)
        try connection.execute("DROP TABLE temp.merge_runs")
        return summary
    }

    private func attachShard(_ path: String) throws(SQLiteError) {
        try connection.prepare("ATTACH DATABASE ? AS shard").reset(.text(path)).run()
    }

    /// Copies the attached shard's rows; returns how many of its pairs were already present.
    private func copyRows(shard: Int64) throws(SQLiteError) -> Int {
        // The merged number of the shard's run in `column`; ?1 is the shard's index.
        func mapped(_ column: String) -> String {
            "(SELECT new_id FROM temp.merge_runs WHERE shard = ?1 AND old_id = \(column))"
        }
        let overlapping = try connection.prepare(
            """
            SELECT count(*) FROM shard.items s JOIN main.items o
                ON o.profile_id = s.profile_id AND o.original_transaction_id = s.original_transaction_id
            """)
        let overlap = try overlapping.step() ? Int(overlapping.int(0)) : 0
        // A pair already merged from an earlier shard: the record updated last wins, but never a
        // record that owes the row over a final one (the lifecycle's rule: a final row changes only
        // by a new definitive answer; a copy sent later against a failing server must not undo it)...
        let owing = ItemStatus.allCases.filter { !$0.isFinal }.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        try connection.prepare(
            """
            UPDATE main.items AS o SET status = s.status, code = s.code, http_status = s.http_status,
                message = s.message, last_source = s.last_source, last_run = \(mapped("s.last_run")),
                sent_run = \(mapped("s.sent_run")), updated_at = s.updated_at, restored_at = s.restored_at,
                profile_state = s.profile_state, access_levels = s.access_levels, answered_at = s.answered_at
            FROM shard.items AS s
            WHERE o.profile_id = s.profile_id AND o.original_transaction_id = s.original_transaction_id
                AND s.updated_at > o.updated_at AND (s.status NOT IN (\(owing)) OR o.status IN (\(owing)))
            """
        ).reset(.int(shard)).run()
        // ...and counts the attempts of both, first seen where it was seen first.
        try connection.prepare(
            """
            UPDATE main.items AS o SET attempts = o.attempts + s.attempts,
                first_source = CASE WHEN s.created_at < o.created_at THEN s.first_source ELSE o.first_source END,
                first_run = CASE WHEN s.created_at < o.created_at THEN \(mapped("s.first_run")) ELSE o.first_run END,
                created_at = min(o.created_at, s.created_at)
            FROM shard.items AS s
            WHERE o.profile_id = s.profile_id AND o.original_transaction_id = s.original_transaction_id
            """
        ).reset(.int(shard)).run()
        try connection.prepare(
            """
            INSERT INTO main.items (profile_id, original_transaction_id, status, code, http_status, message, attempts,
                first_source, last_source, first_run, last_run, sent_run, created_at, updated_at, restored_at,
                profile_state, access_levels, answered_at)
            SELECT s.profile_id, s.original_transaction_id, s.status, s.code, s.http_status, s.message, s.attempts,
                s.first_source, s.last_source, \(mapped("s.first_run")), \(mapped("s.last_run")),
                \(mapped("s.sent_run")), s.created_at, s.updated_at, s.restored_at, s.profile_state, s.access_levels,
                s.answered_at
            FROM shard.items AS s
            WHERE NOT EXISTS (
                SELECT 1 FROM main.items o
                WHERE o.profile_id = s.profile_id AND o.original_transaction_id = s.original_transaction_id)
            ORDER BY s.id
            """
        ).reset(.int(shard)).run()
        try connection.prepare(
            """
            INSERT INTO main.attempts (item_id, run_id, number, started_at, duration_ms, http_status, code, outcome,
                profile_state, access_levels)
            SELECT o.id, \(mapped("a.run_id")), a.number, a.started_at, a.duration_ms, a.http_status, a.code,
                a.outcome, a.profile_state, a.access_levels
            FROM shard.attempts AS a
            JOIN shard.items AS s ON s.id = a.item_id
            JOIN main.items AS o
                ON o.profile_id = s.profile_id AND o.original_transaction_id = s.original_transaction_id
            ORDER BY a.id
            """
        ).reset(.int(shard)).run()
        try connection.prepare(
            """
            INSERT INTO main.rejections (file, line, reason, message, profile_id, original_transaction_id,
                first_run, last_run, created_at, updated_at)
            SELECT r.file, r.line, r.reason, r.message, r.profile_id, r.original_transaction_id,
                \(mapped("r.first_run")), \(mapped("r.last_run")), r.created_at, r.updated_at
            FROM shard.rejections AS r WHERE true
            ORDER BY r.id
            ON CONFLICT (file, line, reason, profile_id, original_transaction_id) DO UPDATE SET
                first_run = min(first_run, excluded.first_run), last_run = max(last_run, excluded.last_run),
                message = CASE WHEN excluded.updated_at > updated_at THEN excluded.message ELSE message END,
                created_at = min(created_at, excluded.created_at), updated_at = max(updated_at, excluded.updated_at)
            """
        ).reset(.int(shard)).run()
        return overlap
    }
}
