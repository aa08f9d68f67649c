import Foundation

/// What the metrics need from the journal beyond one run's own counts: read in one transaction,
/// read-only, so it works while a run writes.
public struct JournalMetricsFacts: Sendable, Equatable {
    /// The newest run's attempts by outcome and HTTP status (nil: no HTTP reply, e.g. a timeout).
    public var attempts: [AttemptCount] = []
    /// Rows the journal owes: pending or left in flight.
    public var owedRows = 0
    /// When the newest run that counts as a success ended; nil when none did.
    public var lastSuccessAt: Date?

    public struct AttemptCount: Sendable, Equatable {
        public var outcome: String
        public var httpStatus: Int?
        public var count: Int
    }

    public init() {}
}

extension Journal {
    /// `isSuccess(exitCode, counts)` decides which finished runs count as a success; runs are
    /// offered newest first until one does. A run whose counts this version cannot read is not one.
    public func metricsFacts(isSuccess: (Int, RunCounts) -> Bool) throws(JournalError) -> JournalMetricsFacts {
        try beginRead()
        defer { endRead() }
        return try wrap { () throws(SQLiteError) in
            var facts = JournalMetricsFacts()
            facts.owedRows = Int(
                try connection.scalarInt("SELECT coalesce(sum(rows), 0) FROM run_counts WHERE status IN (0, 1)") ?? 0)
            let attempts = try connection.prepare(
                """
                SELECT outcome, http_status, attempts FROM run_attempts WHERE run_id = (SELECT max(id) FROM runs)
                ORDER BY outcome, http_status
                """)
            var found: [JournalMetricsFacts.AttemptCount] = []
            while try attempts.step() {
                let outcome = AttemptOutcome(journalCode: attempts.int(0))?.rawValue ?? "unknown"
                let status = attempts.int(1)
                found.append(
                    .init(outcome: outcome, httpStatus: status == 0 ? nil : Int(status), count: Int(attempts.int(2))))
            }
            // In the order of outcome names, as every version wrote them.
            facts.attempts = found.sorted { ($0.outcome, $0.httpStatus ?? -1) < ($1.outcome, $1.httpStatus ?? -1) }
            let runs = try connection.prepare(
                "SELECT exit_code, ended_at, counts, id FROM runs WHERE exit_code IS NOT NULL AND ended_at IS NOT NULL "
                    + "ORDER BY id DESC")
            while try runs.step() {
                let counts = try? ColumnJSON.decode(
                    RunCounts.self, runs.text(2) ?? "{}", path: path, column: "counts", row: runs.int(3))
                guard let counts, isSuccess(Int(runs.int(0)), counts) else { continue }
                facts.lastSuccessAt = runs.text(1).flatMap(Timestamp.date)
                break
            }
            return facts
        }
    }
}
