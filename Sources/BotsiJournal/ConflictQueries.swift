import Foundation

/// How many transactions a run's rows share with another profile (issue 10).
public struct ConflictCounts: Sendable, Equatable, Codable {
    /// Original transactions, among the rows the run worked on, that two or more profiles claim.
    public var groups: Int
    /// The journal's rows in those groups (the run's and earlier runs').
    public var rows: Int

    public init(groups: Int, rows: Int) {
        self.groups = groups
        self.rows = rows
    }
}

/// One row of a group of pairs sharing an original transaction: what `report --conflicts` lists.
public struct ConflictRecord: Sendable, Equatable {
    public var originalTransactionId: String
    /// How many profiles claim the transaction.
    public var profiles: Int
    /// 1 for the transaction's first claim in journal order (the one `--on-conflict hold` sends),
    /// 2 for the next, and so on.
    public var claim: Int
    public var profileId: String
    public var status: ItemStatus
    public var code: String?
    /// `file:line` where the pair was first and last read.
    public var firstSource: String
    public var lastSource: String
    public var attempts: Int
    public var updatedAt: String
}

extension Journal {
    /// The probe the index `items_transaction` answers: one lookup per new pair, whatever the
    /// journal's size (named, so a journal without the index fails loudly instead of scanning).
    static let otherClaimSQL: StaticString = """
        SELECT 1 FROM items INDEXED BY items_transaction
        WHERE original_transaction_id = ? AND profile_id != ? LIMIT 1
        """

    /// Whether the journal pairs the transaction with a profile other than `profileId`.
    func isClaimedByAnotherProfile(_ originalTransactionId: String, profileId: String) throws(SQLiteError) -> Bool {
        let probe = try statement(Self.otherClaimSQL)
        try probe.reset(.text(originalTransactionId), .text(profileId))
        let found = try probe.step()
        probe.rewind()
        return found
    }

    /// Whether another row (so another profile: a pair is one row) claims the transaction: a
    /// lookup of two ids in `items_transaction`, which never reads the table.
    public func isShared(_ originalTransactionId: String, byOtherThan profileId: String) throws(JournalError) -> Bool {
        try wrap { () throws(SQLiteError) in
            let probe = try statement(
                """
                SELECT count(*) FROM (SELECT 1 FROM items INDEXED BY items_transaction
                    WHERE original_transaction_id = ? LIMIT 2)
                """)
            try probe.reset(.text(originalTransactionId))
            defer { probe.rewind() }
            return try probe.step() && probe.int(0) > 1
        }
    }

    /// The groups of `transactions` (the shared ones among a run's rows) and their rows in the
    /// journal: one lookup per group, whatever the size of the run.
    public func conflictCounts(transactions: Set<String>) throws(JournalError) -> ConflictCounts {
        try wrap { () throws(SQLiteError) in
            let rows = try statement(
                "SELECT count(*) FROM items INDEXED BY items_transaction WHERE original_transaction_id = ?")
            var counts = ConflictCounts(groups: transactions.count, rows: 0)
            for transaction in transactions {
                try rows.reset(.text(transaction))
                if try rows.step() { counts.rows += Int(rows.int(0)) }
                rows.rewind()
            }
            return counts
        }
    }

    /// Every row of every transaction two or more profiles claim, a group at a time, in
    /// transaction order and journal order within a group. Streams: nothing is held but a group.
    public func forEachConflict(_ body: (ConflictRecord) -> Void) throws(JournalError) {
        let statement = try wrap { () throws(SQLiteError) in
            try self.statement(
                """
                SELECT a.id AS id, a.original_transaction_id AS original_transaction_id, a.profile_id AS profile_id,
                    a.status AS status, a.code AS code,
                    (SELECT path FROM inputs WHERE inputs.id = a.first_input) || ':' || a.first_line AS first_source,
                    (SELECT path FROM inputs WHERE inputs.id = a.last_input) || ':' || a.last_line AS last_source,
                    a.attempts AS attempts, a.updated_at AS updated_at,
                    (SELECT count(*) FROM items AS c INDEXED BY items_transaction
                        WHERE c.original_transaction_id = a.original_transaction_id) AS profiles
                FROM items AS a INDEXED BY items_transaction
                WHERE EXISTS (SELECT 1 FROM items AS b INDEXED BY items_transaction
                    WHERE b.original_transaction_id = a.original_transaction_id AND b.profile_id != a.profile_id)
                ORDER BY a.original_transaction_id, a.id
                """
            ).reset()
        }
        defer { statement.rewind() }
        let column = try wrap { () throws(SQLiteError) in try ConflictColumns(statement) }
        var current: String?
        var claim = 0
        while try wrap({ () throws(SQLiteError) in try statement.step() }) {
            let transaction = statement.text(column.transaction) ?? ""
            claim = transaction == current ? claim + 1 : 1
            current = transaction
            let code = statement.int(column.status)
            guard let status = ItemStatus(journalCode: code) else {
                throw .unknownValue(
                    path: path, table: "items", column: "status", row: statement.int(column.id), value: "\(code)")
            }
            body(
                ConflictRecord(
                    originalTransactionId: transaction, profiles: Int(statement.int(column.profiles)), claim: claim,
                    profileId: statement.text(column.profileId) ?? "", status: status,
                    code: statement.text(column.code),
                    firstSource: statement.text(column.firstSource) ?? "",
                    lastSource: statement.text(column.lastSource) ?? "", attempts: Int(statement.int(column.attempts)),
                    updatedAt: Timestamp.string(milliseconds: statement.int(column.updatedAt))))
        }
    }
}

/// The result columns of the conflicts query.
private struct ConflictColumns {
    let id, transaction, profileId, status, code, firstSource, lastSource, attempts, updatedAt, profiles: Int32

    init(_ statement: SQLiteStatement) throws(SQLiteError) {
        id = try statement.column("id")
        transaction = try statement.column("original_transaction_id")
        profileId = try statement.column("profile_id")
        status = try statement.column("status")
        code = try statement.column("code")
        firstSource = try statement.column("first_source")
        lastSource = try statement.column("last_source")
        attempts = try statement.column("attempts")
        updatedAt = try statement.column("updated_at")
        profiles = try statement.column("profiles")
    }
}
