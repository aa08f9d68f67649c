import Foundation

/// What a killed run (no end on record, nobody holding the lock) did, counted as its own record
/// would have counted it had it ended: `runs` and the page read this for such a run. A walk of
/// that run's own attempts (`attempts_run`), never made for a finished or a running run.
public struct UnendedRunCounts: Sendable, Equatable {
    /// The rows it worked on, by their status and code at its end: the rows it sent, and the rows
    /// it took up or admitted and did not send that a stop would leave with it (pending ones, and
    /// the held rows it admitted).
    public var rows: [RunRowCount] = []
    /// Requests it made whose attempt is on record.
    public var requests = 0
    /// Of those, second and later attempts of a row: resends, as a summary counts retries.
    public var retries = 0

    public init() {}
}

extension Journal {
    /// The rows the running run `runID` worked on, by their status and code now, as the journal
    /// keeps them (`run_counts`, by its triggers): read at once, its rows and attempts not walked.
    public func liveRunRowCounts(runID: Int64) throws(JournalError) -> [RunRowCount] {
        var counts: [RunRowCount] = []
        try wrap { () throws(SQLiteError) in
            let rows = try statement("SELECT status, code, rows FROM run_counts WHERE run_id = ? AND rows != 0")
            try rows.reset(.int(runID))
            defer { rows.rewind() }
            while try rows.step() {
                guard let status = ItemStatus(journalCode: rows.int(0)) else { continue }
                let code = rows.text(1) ?? ""
                counts.append(
                    RunRowCount(status: status, code: code.isEmpty ? nil : code, count: Int(rows.int(2)), notSent: 0))
            }
        }
        return counts
    }

    /// Counts run `runID` without its record (`UnendedRunCounts`). A row it sent stands as the
    /// row's state as of that run (`forEachChange`'s rule): its last definitive answer in that run
    /// or an earlier one, else pending with its last error — wherever a later run has taken the
    /// row since. A final or held row it took up and never sent is not its row: a stop gives such
    /// rows back, a kill leaves them marked as the run's though nothing was sent.
    public func unendedRunCounts(runID: Int64) throws(JournalError) -> UnendedRunCounts {
        let finals = ItemStatus.sqlList(ItemStatus.allCases.filter(\.isFinal))
        let sent = """
            SELECT t.requests, f.outcome, f.code, l.code FROM (
                SELECT s.item_id, s.requests, s.last_id,
                    (SELECT a.id FROM attempts a INDEXED BY attempts_item
                     WHERE a.item_id = s.item_id AND a.run_id <= ?1 AND a.outcome IN (\(finals))
                     ORDER BY a.run_id DESC, a.id DESC LIMIT 1) AS final_id
                FROM (SELECT item_id, count(*) AS requests, max(id) AS last_id FROM attempts INDEXED BY attempts_run
                      WHERE run_id = ?1 GROUP BY item_id) s
            ) t
            JOIN attempts l ON l.id = t.last_id
            LEFT JOIN attempts f ON f.id = t.final_id
            """
        // Rows still the run's that it did not send: pending (or in flight when it died) ones, and
        // those it admitted itself (held).
        let unsent = """
            SELECT status, coalesce(code, ''), count(*) FROM items INDEXED BY items_last_run
            WHERE last_run = ?1 AND (status IN (\(ItemStatus.sqlList([.pending, .inFlight]))) OR first_run = ?1)
                AND NOT EXISTS (SELECT 1 FROM attempts a INDEXED BY attempts_item WHERE a.item_id = items.id AND a.run_id = ?1)
            GROUP BY status, code
            """
        var counts = UnendedRunCounts()
        var byState: [StatusCode: Int] = [:]
        try wrap { () throws(SQLiteError) in
            let rows = try statement(built: sent)
            try rows.reset(.int(runID))
            defer { rows.rewind() }
            while try rows.step() {
                let requests = Int(rows.int(0))
                counts.requests += requests
                counts.retries += requests - 1
                if let final = rows.optionalInt(1), let status = ItemStatus(journalCode: final) {
                    byState[StatusCode(status, rows.text(2)), default: 0] += 1
                } else {
                    byState[StatusCode(.pending, rows.text(3)), default: 0] += 1
                }
            }
        }
        try wrap { () throws(SQLiteError) in
            let rows = try statement(built: unsent)
            try rows.reset(.int(runID))
            defer { rows.rewind() }
            while try rows.step() {
                guard let status = ItemStatus(journalCode: rows.int(0)) else { continue }
                let code = rows.text(1) ?? ""
                byState[StatusCode(status, code.isEmpty ? nil : code), default: 0] += Int(rows.int(2))
            }
        }
        counts.rows = byState.sorted { $0.key < $1.key }.map {
            RunRowCount(status: $0.key.status, code: $0.key.code, count: $0.value, notSent: 0)
        }
        return counts
    }
}
