/// The INSERTs the journal writes many rows a statement: each INSERT statement costs SQLite a
/// statement transaction and the count trigger's frame whatever its number of rows (~7,000
/// instructions), so a batch's rows go 32 a statement.
enum MultiRowInsert: Hashable {
    /// A run's attempts, written at the batch's commit (`insertPendingAttempts`).
    case attempts
    /// A batch's new rows, with the ids SQLite would give them (`Journal.admit`).
    case items

    /// The most rows one statement takes.
    static let largest = 32

    /// The statement for `rows` rows.
    fileprivate func sql(rows: Int) -> String {
        switch self {
        case .attempts:
            "INSERT INTO attempts (item_id, run_id, number, started_at, duration_us, http_status, code, outcome, "
                + "snapshot_id) VALUES "
                + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
        case .items:
            "INSERT INTO items (id, pair_hash, profile_id, original_transaction_id, status, code, first_input, "
                + "first_line, last_input, last_line, first_run, last_run, read_run, created_at, updated_at) VALUES "
                + (0..<rows).map { row in
                    // id, pair_hash, profile_id, original_transaction_id, status, code, first_input,
                    // first_line, last_input, last_line, first_run, last_run, read_run, created_at,
                    // updated_at: ten values a row, some used twice or three times.
                    let base = row * 10
                    return "(?\(base + 1), ?\(base + 2), ?\(base + 3), ?\(base + 4), ?\(base + 5), ?\(base + 6), "
                        + "?\(base + 7), ?\(base + 8), ?\(base + 7), ?\(base + 8), ?\(base + 9), ?\(base + 9), "
                        + "?\(base + 9), ?\(base + 10), ?\(base + 10))"
                }.joined(separator: ", ")
        }
    }
}

extension Journal {
    /// Inserts `rows` in order as `insert`, 32 rows a statement and the rest in statements of 16,
    /// 8, 4, 2 and 1, so that their ids follow their order as one INSERT each would. `values` gives
    /// a row's values in the order of the statement's parameters.
    func insert<Rows: Collection>(
        _ rows: Rows, as insert: MultiRowInsert, values: (Rows.Element) -> [SQLiteValue]
    ) throws(SQLiteError) {
        var rest = rows[...]
        while !rest.isEmpty {
            var size = MultiRowInsert.largest
            while size > rest.count { size /= 2 }
            let statement = try multiRowStatement(insert, rows: size)
            statement.rewind()
            var parameter: Int32 = 1
            for row in rest.prefix(size) {
                for value in values(row) {
                    try statement.bind(value, at: parameter)
                    parameter += 1
                }
            }
            try statement.run()
            rest = rest.dropFirst(size)
        }
    }

    private func multiRowStatement(_ insert: MultiRowInsert, rows: Int) throws(SQLiteError) -> SQLiteStatement {
        if let statement = multiRowInserts[insert]?[rows] { return statement }
        let statement = try connection.prepare(insert.sql(rows: rows))
        multiRowInserts[insert, default: [:]][rows] = statement
        return statement
    }
}
