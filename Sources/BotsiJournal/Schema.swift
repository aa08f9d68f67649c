/// The journal's schema, one migration per version. `PRAGMA user_version` holds the version a
/// journal is at; opening runs every migration above it in one transaction. Documented in
/// docs/journal.md — keep the two in step.
enum Schema {
    /// 'BRST' — tells a botsi-restore journal from any other SQLite file.
    static let applicationID: Int64 = 0x4252_5354

    static let migrations: [String] = [
        // Version 1.
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            state TEXT NOT NULL DEFAULT 'running',
            exit_code INTEGER,
            tool_version TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            options TEXT NOT NULL,
            inputs TEXT NOT NULL DEFAULT '[]',
            counts TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            profile_id TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            status TEXT NOT NULL,
            code TEXT,
            http_status INTEGER,
            message TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            first_source TEXT NOT NULL,
            last_source TEXT NOT NULL,
            first_run INTEGER NOT NULL REFERENCES runs(id),
            last_run INTEGER NOT NULL REFERENCES runs(id),
            sent_run INTEGER REFERENCES runs(id),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            restored_at TEXT,
            profile_state TEXT,
            access_levels TEXT,
            UNIQUE (profile_id, original_transaction_id)
        );
        CREATE INDEX items_status ON items(status, code);
        CREATE INDEX items_sent_run ON items(sent_run);
        CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id),
            run_id INTEGER NOT NULL REFERENCES runs(id),
            number INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            duration_ms REAL,
            http_status INTEGER,
            code TEXT,
            outcome TEXT NOT NULL,
            profile_state TEXT,
            access_levels TEXT
        );
        CREATE INDEX attempts_item ON attempts(item_id, run_id);
        CREATE INDEX attempts_run ON attempts(run_id);
        CREATE TABLE rejections (
            id INTEGER PRIMARY KEY,
            file TEXT NOT NULL,
            line INTEGER NOT NULL,
            reason TEXT NOT NULL,
            message TEXT NOT NULL,
            profile_id TEXT NOT NULL DEFAULT '',
            original_transaction_id TEXT NOT NULL DEFAULT '',
            first_run INTEGER NOT NULL REFERENCES runs(id),
            last_run INTEGER NOT NULL REFERENCES runs(id),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (file, line, reason, profile_id, original_transaction_id)
        );
        CREATE INDEX rejections_last_run ON rejections(last_run);
        """,
        // Version 2: a running run records how far it has read, so `status` can tell an ETA for
        // the whole input, not only for the rows read so far.
        """
        ALTER TABLE runs ADD COLUMN progress TEXT NOT NULL DEFAULT '{}';
        """,
        // Version 3 (issue 8, the row lifecycle): `answered_at`, the time of the row's last
        // definitive answer, which `--refresh-older-than` ages rows by (a 200's `restored_at` is
        // not enough: nothing_to_restore is revisable too); `in_flight_run`, the in-flight mark of
        // a final row being resent, kept apart from its status so that a killed resend cannot turn
        // it pending. Indexes: owed rows in journal order (`items_pending`, partial, so a plain run
        // that owes nothing pays one empty lookup), the rows a run worked on (`items_last_run`,
        // for its counts) and the marks to clear after a kill (`items_in_flight_run`, partial).
        """
        ALTER TABLE items ADD COLUMN answered_at TEXT;
        ALTER TABLE items ADD COLUMN in_flight_run INTEGER REFERENCES runs(id);
        UPDATE items SET answered_at = CASE WHEN status = 'restored' THEN coalesce(restored_at, updated_at)
            ELSE updated_at END
        WHERE status IN ('restored', 'nothing_to_restore', 'profile_not_found', 'rejected', 'failed');
        CREATE INDEX items_pending ON items(id) WHERE status = 'pending';
        CREATE INDEX items_last_run ON items(last_run);
        CREATE INDEX items_in_flight_run ON items(in_flight_run) WHERE in_flight_run IS NOT NULL;
        """,
        // Version 4 (issue 10, transactions claimed by several profiles): the rows of one original
        // transaction, in journal order (SQLite keeps equal keys in rowid order), so that a run finds
        // the other claims of a pair as it admits it, and `report --conflicts` walks the groups,
        // without holding a set of every transaction in memory. The `held` status needs no column.
        """
        CREATE INDEX items_transaction ON items(original_transaction_id);
        """,
    ]

    /// Schema 5 (`SchemaV5`) is made by an upgrade in Swift (`upgradeToV5`): the SQL above brings
    /// a journal to 4, then its rows are copied into the compact tables.
    static var currentVersion: Int64 { SchemaV5.version }
}
