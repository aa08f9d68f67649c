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

    /// The groups among the rows run `runID` worked on, from the journal (as its other counts).
    public func conflictCounts(runID: Int64) throws(JournalError) -> ConflictCounts {
        // Another row of the same transaction has another profile (the pair is unique), so the
        // probe compares ids, which `items_transaction` holds, and never reads the table.
        try wrap { () throws(SQLiteError) in
            let statement = try statement(
                """
                WITH claimed AS (
                    SELECT DISTINCT a.original_transaction_id AS id FROM items AS a WHERE a.last_run = ?1
                    AND EXISTS (SELECT 1 FROM items AS b INDEXED BY items_transaction
                        WHERE b.original_transaction_id = a.original_transaction_id AND b.id != a.id))
                SELECT (SELECT count(*) FROM claimed),
                    (SELECT count(*) FROM claimed JOIN items INDEXED BY items_transaction
                        ON items.original_transaction_id = claimed.id)
                """)
            try statement.reset(.int(runID))
            guard try statement.step() else { return ConflictCounts(groups: 0, rows: 0) }
            let counts = ConflictCounts(groups: Int(statement.int(0)), rows: Int(statement.int(1)))
            statement.rewind()
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
                    a.status AS status, a.code AS code, a.first_source AS first_source, a.last_source AS last_source,
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
            let status = try decodeEnum(
                ItemStatus.self, statement.text(column.status), table: "items", column: "status",
                row: statement.int(column.id))
            body(
                ConflictRecord(
                    originalTransactionId: transaction, profiles: Int(statement.int(column.profiles)), claim: claim,
                    profileId: statement.text(column.profileId) ?? "", status: status,
                    code: statement.text(column.code),
                    firstSource: statement.text(column.firstSource) ?? "",
                    lastSource: statement.text(column.lastSource) ?? "", attempts: Int(statement.int(column.attempts)),
                    updatedAt: statement.text(column.updatedAt) ?? ""))
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
