/// Schema version 5 (issue 21): the compact journal. Rows keep everything they kept before in
/// about a third of the bytes: statuses and outcomes as small integers (named in `statuses`),
/// times as integer milliseconds since 1970 (UTC), each input path once (`inputs`, referenced with
/// the line), each distinct profile snapshot once (`snapshots`, referenced by rows and attempts),
/// and a 64-bit hash of the pair in place of a unique index of its text. Counts are kept as the
/// rows change (`run_counts`, each run's attempts in `run_attempts`, refused input rows by reason
/// in `rejection_counts`, by triggers), so `status`, `runs` and the end of a run read them at
/// once. Runs gain an identity that survives copying the file (`uid`) and samples of the pacer
/// over time (`run_samples`). The `*_readable` views show what data teams saw before: ISO times,
/// status names, `file:line` sources and the snapshot JSON. Documented in docs/journal.md.
enum SchemaV5 {
    static let version: Int64 = 5

    /// The tables, indexes, triggers and views of a version 5 journal, as `CREATE` statements.
    static let create = """
        CREATE TABLE statuses (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE
        );
        INSERT INTO statuses (id, name) VALUES
            (0, 'pending'), (1, 'in_flight'), (2, 'restored'), (3, 'nothing_to_restore'),
            (4, 'profile_not_found'), (5, 'rejected'), (6, 'failed'), (7, 'held'), (8, 'retry'), (9, 'kept');
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            state TEXT NOT NULL DEFAULT 'running',
            exit_code INTEGER,
            tool_version TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            options TEXT NOT NULL,
            inputs TEXT NOT NULL DEFAULT '[]',
            counts TEXT NOT NULL DEFAULT '{}',
            progress TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE inputs (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE
        );
        CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY,
            hash INTEGER NOT NULL,
            profile_state TEXT,
            access_levels TEXT
        );
        CREATE INDEX snapshots_hash ON snapshots(hash);
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            pair_hash INTEGER NOT NULL,
            profile_id TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            status INTEGER NOT NULL REFERENCES statuses(id),
            code TEXT,
            http_status INTEGER,
            message TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            first_input INTEGER NOT NULL REFERENCES inputs(id),
            first_line INTEGER NOT NULL,
            last_input INTEGER NOT NULL REFERENCES inputs(id),
            last_line INTEGER NOT NULL,
            first_run INTEGER NOT NULL REFERENCES runs(id),
            last_run INTEGER NOT NULL REFERENCES runs(id),
            read_run INTEGER REFERENCES runs(id),
            sent_run INTEGER REFERENCES runs(id),
            in_flight_run INTEGER REFERENCES runs(id),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            answered_at INTEGER,
            restored_at INTEGER,
            snapshot_id INTEGER REFERENCES snapshots(id)
        );
        CREATE INDEX items_transaction ON items(original_transaction_id);
        CREATE INDEX items_pending ON items(id) WHERE status = 0;
        CREATE INDEX items_last_run ON items(last_run);
        CREATE INDEX items_in_flight_run ON items(in_flight_run) WHERE in_flight_run IS NOT NULL;
        CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id),
            run_id INTEGER NOT NULL REFERENCES runs(id),
            number INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            duration_us INTEGER,
            http_status INTEGER,
            code TEXT,
            outcome INTEGER NOT NULL REFERENCES statuses(id),
            snapshot_id INTEGER REFERENCES snapshots(id)
        );
        CREATE INDEX attempts_item ON attempts(item_id, run_id);
        CREATE INDEX attempts_run ON attempts(run_id);
        CREATE TABLE rejections (
            id INTEGER PRIMARY KEY,
            input_id INTEGER NOT NULL REFERENCES inputs(id),
            line INTEGER NOT NULL,
            reason TEXT NOT NULL,
            message TEXT NOT NULL,
            profile_id TEXT NOT NULL DEFAULT '',
            original_transaction_id TEXT NOT NULL DEFAULT '',
            first_run INTEGER NOT NULL REFERENCES runs(id),
            last_run INTEGER NOT NULL REFERENCES runs(id),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (input_id, line, reason, profile_id, original_transaction_id)
        );
        CREATE INDEX rejections_last_run ON rejections(last_run);
        CREATE TABLE run_counts (
            run_id INTEGER NOT NULL,
            status INTEGER NOT NULL,
            code TEXT NOT NULL,
            rows INTEGER NOT NULL,
            PRIMARY KEY (run_id, status, code)
        ) WITHOUT ROWID;
        CREATE TABLE run_attempts (
            run_id INTEGER NOT NULL,
            outcome INTEGER NOT NULL,
            http_status INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            first_at INTEGER NOT NULL,
            last_at INTEGER NOT NULL,
            PRIMARY KEY (run_id, outcome, http_status)
        ) WITHOUT ROWID;
        CREATE TABLE run_samples (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            at INTEGER NOT NULL,
            rows_read INTEGER NOT NULL,
            requests INTEGER NOT NULL,
            in_flight INTEGER NOT NULL,
            send_rate_limit REAL,
            concurrency INTEGER NOT NULL,
            PRIMARY KEY (run_id, at)
        ) WITHOUT ROWID;
        CREATE TRIGGER items_counted_on_insert AFTER INSERT ON items BEGIN
            INSERT INTO run_counts (run_id, status, code, rows) VALUES (NEW.last_run, NEW.status, coalesce(NEW.code, ''), 1)
                ON CONFLICT (run_id, status, code) DO UPDATE SET rows = rows + 1;
        END;
        CREATE TRIGGER items_counted_on_update AFTER UPDATE OF status, code, last_run ON items
        WHEN OLD.status IS NOT NEW.status OR OLD.code IS NOT NEW.code OR OLD.last_run IS NOT NEW.last_run BEGIN
            UPDATE run_counts SET rows = rows - 1
                WHERE run_id = OLD.last_run AND status = OLD.status AND code = coalesce(OLD.code, '');
            INSERT INTO run_counts (run_id, status, code, rows) VALUES (NEW.last_run, NEW.status, coalesce(NEW.code, ''), 1)
                ON CONFLICT (run_id, status, code) DO UPDATE SET rows = rows + 1;
        END;
        CREATE TRIGGER attempts_counted AFTER INSERT ON attempts BEGIN
            INSERT INTO run_attempts (run_id, outcome, http_status, attempts, first_at, last_at)
                VALUES (NEW.run_id, NEW.outcome, coalesce(NEW.http_status, 0), 1, NEW.started_at, NEW.started_at)
                ON CONFLICT (run_id, outcome, http_status) DO UPDATE SET attempts = attempts + 1,
                    first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at);
        END;
        CREATE TRIGGER items_counted_on_delete AFTER DELETE ON items BEGIN
            UPDATE run_counts SET rows = rows - 1
                WHERE run_id = OLD.last_run AND status = OLD.status AND code = coalesce(OLD.code, '');
        END;
        \(rejectionCounts)
        CREATE VIEW items_readable AS
        SELECT i.id, i.profile_id, i.original_transaction_id, s.name AS status, i.code, i.http_status, i.message,
            i.attempts, fi.path || ':' || i.first_line AS first_source, li.path || ':' || i.last_line AS last_source,
            i.first_run, i.last_run, i.read_run, i.sent_run, i.in_flight_run,
            strftime('%Y-%m-%dT%H:%M:%fZ', i.created_at / 1000.0, 'unixepoch') AS created_at,
            strftime('%Y-%m-%dT%H:%M:%fZ', i.updated_at / 1000.0, 'unixepoch') AS updated_at,
            strftime('%Y-%m-%dT%H:%M:%fZ', i.answered_at / 1000.0, 'unixepoch') AS answered_at,
            strftime('%Y-%m-%dT%H:%M:%fZ', i.restored_at / 1000.0, 'unixepoch') AS restored_at,
            sn.profile_state, sn.access_levels
        FROM items i
        JOIN statuses s ON s.id = i.status
        JOIN inputs fi ON fi.id = i.first_input
        JOIN inputs li ON li.id = i.last_input
        LEFT JOIN snapshots sn ON sn.id = i.snapshot_id;
        CREATE VIEW attempts_readable AS
        SELECT a.id, a.item_id, i.profile_id, i.original_transaction_id, a.run_id, a.number,
            strftime('%Y-%m-%dT%H:%M:%fZ', a.started_at / 1000.0, 'unixepoch') AS started_at,
            a.duration_us / 1000.0 AS duration_ms, a.http_status, a.code, s.name AS outcome,
            sn.profile_state, sn.access_levels
        FROM attempts a
        JOIN items i ON i.id = a.item_id
        JOIN statuses s ON s.id = a.outcome
        LEFT JOIN snapshots sn ON sn.id = a.snapshot_id;
        CREATE VIEW rejections_readable AS
        SELECT r.id, f.path AS file, r.line, r.reason, r.message, r.profile_id, r.original_transaction_id,
            r.first_run, r.last_run,
            strftime('%Y-%m-%dT%H:%M:%fZ', r.created_at / 1000.0, 'unixepoch') AS created_at,
            strftime('%Y-%m-%dT%H:%M:%fZ', r.updated_at / 1000.0, 'unixepoch') AS updated_at
        FROM rejections r
        JOIN inputs f ON f.id = r.input_id;
        CREATE VIEW run_counts_readable AS
        SELECT c.run_id, s.name AS status, nullif(c.code, '') AS code, c.rows
        FROM run_counts c JOIN statuses s ON s.id = c.status
        WHERE c.rows != 0;
        """

    /// Refused input rows by reason, kept by triggers as `rejections` changes, so that `status` and
    /// the page do not count a table a damaged input can fill with millions of rows. Journals of
    /// schema 5 written before it (0.2.0) gain it on a run's open (`Journal.addRejectionCounts`).
    static let rejectionCounts = """
        CREATE TABLE rejection_counts (
            reason TEXT PRIMARY KEY,
            rows INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TRIGGER rejections_counted_on_insert AFTER INSERT ON rejections BEGIN
            INSERT INTO rejection_counts (reason, rows) VALUES (NEW.reason, 1)
                ON CONFLICT (reason) DO UPDATE SET rows = rows + 1;
        END;
        CREATE TRIGGER rejections_counted_on_update AFTER UPDATE OF reason ON rejections
        WHEN OLD.reason IS NOT NEW.reason BEGIN
            UPDATE rejection_counts SET rows = rows - 1 WHERE reason = OLD.reason;
            INSERT INTO rejection_counts (reason, rows) VALUES (NEW.reason, 1)
                ON CONFLICT (reason) DO UPDATE SET rows = rows + 1;
        END;
        CREATE TRIGGER rejections_counted_on_delete AFTER DELETE ON rejections BEGIN
            UPDATE rejection_counts SET rows = rows - 1 WHERE reason = OLD.reason;
        END;
        """
}
