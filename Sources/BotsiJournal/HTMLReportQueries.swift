import Foundation

// Every read `report --format html` makes that no other command makes, in one file, so that a
// change of the journal's schema is ported here and nowhere else. Each read is aggregated by
// SQLite or streamed, and each answer is bounded (a limit on groups and examples): the page's
// memory does not grow with the journal. Read-only; each call is its own read transaction, so
// it works while a run writes the journal.

extension Journal {
    /// The attempts of run `runID`, in the order they were recorded, one at a time.
    public func forEachAttemptSample(runID: Int64, _ body: (AttemptSample) -> Void) throws(JournalError) {
        try readTransaction { () throws(JournalError) in
            let statement = try wrap { () throws(SQLiteError) in
                try connection.prepare(
                    "SELECT started_at, duration_us, http_status, outcome, id FROM attempts WHERE run_id = ? ORDER BY id"
                ).reset(.int(runID))
            }
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let outcome = try attemptOutcome(statement.int(3), row: statement.int(4))
                body(
                    AttemptSample(
                        startedAtMilliseconds: statement.int(0),
                        durationMilliseconds: statement.isNull(1) ? nil : Double(statement.int(1)) / 1000,
                        httpStatus: statement.optionalInt(2).map(Int.init), outcome: outcome))
            }
        }
    }

    /// The first and last attempt of run `runID` (milliseconds since 1970), nil when it has none.
    public func attemptSpan(runID: Int64) throws(JournalError) -> (first: Int64, last: Int64)? {
        try readTransaction { () throws(JournalError) in
            try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(
                    "SELECT min(started_at), max(started_at) FROM attempts WHERE run_id = ?"
                ).reset(.int(runID))
                guard try statement.step(), !statement.isNull(0) else { return nil }
                return (statement.int(0), statement.int(1))
            }
        }
    }

    /// The pacer's send-rate limit and concurrency over run `runID`, as the run sampled them
    /// (`run_samples`, one row per progress interval); empty for a run of an older version.
    public func pacerSamples(runID: Int64) throws(JournalError) -> [PacerSample] {
        try readTransaction { () throws(JournalError) in
            try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(
                    "SELECT at, send_rate_limit, concurrency FROM run_samples WHERE run_id = ? ORDER BY at"
                ).reset(.int(runID))
                var samples: [PacerSample] = []
                while try statement.step() {
                    samples.append(
                        PacerSample(
                            atMilliseconds: statement.int(0),
                            sendRateLimit: statement.isNull(1) ? nil : statement.double(1),
                            concurrency: Int(statement.int(2))))
                }
                return samples
            }
        }
    }

    /// How many rows run `runID` sent once, twice, …: attempts per row, by number of attempts.
    public func attemptsPerRow(runID: Int64) throws(JournalError) -> [Int: Int] {
        try readTransaction { () throws(JournalError) in
            try wrap { () throws(SQLiteError) in
                let statement = try connection.prepare(
                    """
                    SELECT n, count(*) FROM (SELECT count(*) AS n FROM attempts WHERE run_id = ? GROUP BY item_id)
                    GROUP BY n
                    """
                ).reset(.int(runID))
                var result: [Int: Int] = [:]
                while try statement.step() { result[Int(statement.int(0))] = Int(statement.int(1)) }
                return result
            }
        }
    }

    /// Run `runID`'s attempts by outcome, HTTP status and code, the `limit` largest groups first,
    /// and how many attempts the groups left out hold.
    public func attemptOutcomeCounts(runID: Int64, limit: Int) throws(JournalError) -> (
        groups: [AttemptOutcomeCount], others: Int
    ) {
        try readTransaction { () throws(JournalError) in
            let statement = try wrap { () throws(SQLiteError) in
                try connection.prepare(
                    """
                    SELECT outcome, http_status, code, count(*) AS n, min(id) FROM attempts WHERE run_id = ?
                    GROUP BY outcome, http_status, code ORDER BY n DESC, outcome, http_status, code
                    """
                ).reset(.int(runID))
            }
            var groups: [AttemptOutcomeCount] = []
            var others = 0
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                guard groups.count < limit else {
                    others += Int(statement.int(3))
                    continue
                }
                let outcome = try attemptOutcome(statement.int(0), row: statement.int(4))
                groups.append(
                    AttemptOutcomeCount(
                        outcome: outcome, httpStatus: statement.optionalInt(1).map(Int.init), code: statement.text(2),
                        count: Int(statement.int(3))))
            }
            return (groups, others)
        }
    }

    /// Rows in `statuses`, by status and code, the largest `groupLimit` groups with their first
    /// `exampleLimit` rows (journal order); every group is counted in the total.
    public func rowGroups(statuses: [ItemStatus], groupLimit: Int, exampleLimit: Int) throws(JournalError) -> (
        groups: [RowGroup], groupCount: Int
    ) {
        try readTransaction { () throws(JournalError) in
            let list = statuses.map { String($0.journalCode) }.joined(separator: ", ")
            let (counts, examples) = try wrap { () throws(SQLiteError) in
                (
                    try connection.prepare(
                        """
                        SELECT status, code, count(*) AS n, min(id) FROM items WHERE status IN (\(list))
                        GROUP BY status, code ORDER BY n DESC, status, code
                        """),
                    try connection.prepare(
                        """
                        SELECT profile_id, original_transaction_id,
                            (SELECT path FROM inputs WHERE id = last_input) || ':' || last_line, message FROM items
                        WHERE status = ? AND code IS ? ORDER BY id LIMIT ?
                        """)
                )
            }
            var groups: [RowGroup] = []
            var groupCount = 0
            while try wrap({ () throws(SQLiteError) in try counts.step() }) {
                groupCount += 1
                guard groups.count < groupLimit else { continue }
                let status = try itemStatus(counts.int(0), row: counts.int(3))
                let code = counts.text(1)
                var rows: [ExampleRow] = []
                try wrap { () throws(SQLiteError) in
                    try examples.reset(.int(status.journalCode), .optionalText(code), .int(Int64(exampleLimit)))
                    while try examples.step() {
                        rows.append(
                            ExampleRow(
                                profileId: examples.text(0) ?? "", originalTransactionId: examples.text(1) ?? "",
                                status: status, code: code, source: examples.text(2) ?? "", message: examples.text(3)))
                    }
                }
                groups.append(RowGroup(status: status, code: code, count: Int(counts.int(2)), examples: rows))
            }
            return (groups, groupCount)
        }
    }

    /// Input rows the checks refused, by reason, the largest `groupLimit` reasons with their first
    /// `exampleLimit` rows (by file and line), and how many reasons there are.
    public func rejectionGroups(groupLimit: Int, exampleLimit: Int) throws(JournalError) -> (
        groups: [RowGroup], groupCount: Int
    ) {
        try readTransaction { () throws(JournalError) in
            let counts = try rejectionCountsByReason()
            let examples = try wrap { () throws(SQLiteError) in
                try connection.prepare(
                    """
                    SELECT r.profile_id, r.original_transaction_id, f.path, r.line, r.message
                    FROM rejections r JOIN inputs f ON f.id = r.input_id
                    WHERE r.reason = ? ORDER BY f.path, r.line LIMIT ?
                    """)
            }
            var groups: [RowGroup] = []
            for (reason, count) in counts.prefix(groupLimit) {
                var rows: [ExampleRow] = []
                try wrap { () throws(SQLiteError) in
                    try examples.reset(.text(reason), .int(Int64(exampleLimit)))
                    while try examples.step() {
                        rows.append(
                            ExampleRow(
                                profileId: examples.text(0) ?? "", originalTransactionId: examples.text(1) ?? "",
                                status: .rejected, code: reason,
                                source: "\(examples.text(2) ?? ""):\(examples.int(3))", message: examples.text(4)))
                    }
                }
                groups.append(RowGroup(status: .rejected, code: reason, count: count, examples: rows))
            }
            return (groups, counts.count)
        }
    }

    /// The first `groupLimit` transactions (in transaction order) that several profiles claim, with
    /// their first `claimLimit` claims, and how many such transactions and rows the journal holds.
    public func claimGroups(groupLimit: Int, claimLimit: Int) throws(JournalError) -> (
        groups: [ClaimGroup], groupCount: Int, rowCount: Int
    ) {
        try readTransaction { () throws(JournalError) in
            let (totals, firsts, claims) = try wrap { () throws(SQLiteError) in
                (
                    try connection.prepare(
                        """
                        SELECT count(*), coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM items
                        INDEXED BY items_transaction GROUP BY original_transaction_id HAVING n > 1)
                        """),
                    try connection.prepare(
                        """
                        SELECT original_transaction_id, count(*) AS n FROM items INDEXED BY items_transaction
                        GROUP BY original_transaction_id HAVING n > 1 ORDER BY original_transaction_id LIMIT ?
                        """
                    ).reset(.int(Int64(groupLimit))),
                    try connection.prepare(
                        """
                        SELECT profile_id, status, code,
                            (SELECT path FROM inputs WHERE id = last_input) || ':' || last_line, message, id
                        FROM items INDEXED BY items_transaction WHERE original_transaction_id = ? ORDER BY id LIMIT ?
                        """)
                )
            }
            var groupCount = 0
            var rowCount = 0
            try wrap { () throws(SQLiteError) in
                if try totals.step() {
                    groupCount = Int(totals.int(0))
                    rowCount = Int(totals.int(1))
                }
            }
            var groups: [ClaimGroup] = []
            while try wrap({ () throws(SQLiteError) in try firsts.step() }) {
                let transaction = firsts.text(0) ?? ""
                var rows: [ExampleRow] = []
                _ = try wrap { () throws(SQLiteError) in try claims.reset(.text(transaction), .int(Int64(claimLimit))) }
                while try wrap({ () throws(SQLiteError) in try claims.step() }) {
                    let status = try itemStatus(claims.int(1), row: claims.int(5))
                    rows.append(
                        ExampleRow(
                            profileId: claims.text(0) ?? "", originalTransactionId: transaction, status: status,
                            code: claims.text(2), source: claims.text(3) ?? "", message: claims.text(4)))
                }
                groups.append(
                    ClaimGroup(originalTransactionId: transaction, profiles: Int(firsts.int(1)), claims: rows))
            }
            return (groups, groupCount, rowCount)
        }
    }

    /// The newest `limit` runs, oldest first, how many runs the journal holds, and when its first
    /// one started.
    public func latestRuns(limit: Int) throws(JournalError) -> (runs: [RunRecord], total: Int, firstStartedAt: String?)
    {
        try readTransaction { () throws(JournalError) in
            let (total, first) = try wrap { () throws(SQLiteError) in
                (
                    Int(try connection.scalarInt("SELECT count(*) FROM runs") ?? 0),
                    try connection.scalarText("SELECT started_at FROM runs ORDER BY id LIMIT 1")
                )
            }
            let runs = try runRecords(where: "id > (SELECT coalesce(max(id), 0) FROM runs) - \(max(limit, 0))")
            return (runs, total, first)
        }
    }

    /// Run `id`, nil when the journal has none of that number.
    public func runRecord(id: Int64) throws(JournalError) -> RunRecord? {
        try readTransaction { () throws(JournalError) in try runRecords(where: "id = \(id)").first }
    }

    /// Attempts by outcome for the runs in `runIDs` (those that never wrote their counts).
    public func attemptOutcomes(runIDs: [Int64]) throws(JournalError) -> [Int64: [AttemptOutcome: Int]] {
        guard !runIDs.isEmpty else { return [:] }
        return try readTransaction { () throws(JournalError) in
            let statement = try wrap { () throws(SQLiteError) in
                try connection.prepare(
                    """
                    SELECT run_id, outcome, count(*), min(id) FROM attempts
                    WHERE run_id IN (\(runIDs.map(String.init).joined(separator: ", "))) GROUP BY run_id, outcome
                    """)
            }
            var result: [Int64: [AttemptOutcome: Int]] = [:]
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let outcome = try attemptOutcome(statement.int(1), row: statement.int(3))
                result[statement.int(0), default: [:]][outcome, default: 0] += Int(statement.int(2))
            }
            return result
        }
    }

    /// `body` inside one read transaction, so its statements see the same committed state.
    private func readTransaction<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        try beginRead()
        defer { endRead() }
        return try body()
    }

    /// An attempt's outcome from its journal code; one this version does not know is refused by
    /// name, never guessed.
    private func attemptOutcome(_ code: Int64, row: Int64) throws(JournalError) -> AttemptOutcome {
        guard let outcome = AttemptOutcome(journalCode: code) else {
            throw .unknownValue(path: path, table: "attempts", column: "outcome", row: row, value: String(code))
        }
        return outcome
    }

    private func itemStatus(_ code: Int64, row: Int64) throws(JournalError) -> ItemStatus {
        guard let status = ItemStatus(journalCode: code) else {
            throw .unknownValue(path: path, table: "items", column: "status", row: row, value: String(code))
        }
        return status
    }
}
