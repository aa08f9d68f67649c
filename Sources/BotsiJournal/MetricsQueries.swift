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
        try wrap { () throws(SQLiteError) in
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            var facts = JournalMetricsFacts()
            facts.owedRows = Int(
                try connection.scalarInt("SELECT count(*) FROM items WHERE status IN ('pending', 'in_flight')") ?? 0)
            let attempts = try connection.prepare(
                """
                SELECT outcome, http_status, count(*) FROM attempts WHERE run_id = (SELECT max(id) FROM runs)
                GROUP BY outcome, http_status ORDER BY outcome, http_status
                """)
            while try attempts.step() {
                facts.attempts.append(
                    .init(
                        outcome: attempts.text(0) ?? "", httpStatus: attempts.optionalInt(1).map(Int.init),
                        count: Int(attempts.int(2))))
            }
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
