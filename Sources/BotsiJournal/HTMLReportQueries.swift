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
                    "SELECT started_at, duration_ms, http_status, outcome, id FROM attempts WHERE run_id = ? ORDER BY id"
                ).reset(.int(runID))
            }
            var outcomes: [String: AttemptOutcome] = [:]
            while try wrap({ () throws(SQLiteError) in try statement.step() }) {
                let text = statement.text(3) ?? ""
                let outcome: AttemptOutcome
                if let known = outcomes[text] {
                    outcome = known
                } else {
                    outcome = try decodeEnum(
                        AttemptOutcome.self, text, table: "attempts", column: "outcome", row: statement.int(4))
                    outcomes[text] = outcome
                }
                guard let started = statement.bytes(0).flatMap(Self.milliseconds) else { continue }
                body(
                    AttemptSample(
                        startedAtMilliseconds: started,
                        durationMilliseconds: statement.isNull(1) ? nil : statement.double(1),
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
                guard try statement.step(), let first = statement.bytes(0).flatMap(Self.milliseconds),
                    let last = statement.bytes(1).flatMap(Self.milliseconds)
                else { return nil }
                return (first, last)
            }
        }
    }

    /// The pacer's send-rate limit and concurrency over run `runID`: empty, since this schema keeps
    /// only the latest progress of a run (issue 21 adds a table of per-interval samples).
    public func pacerSamples(runID: Int64) throws(JournalError) -> [PacerSample] { [] }

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
                let outcome = try decodeEnum(
                    AttemptOutcome.self, statement.text(0), table: "attempts", column: "outcome", row: statement.int(4))
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
            let list = statuses.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            let (counts, examples) = try wrap { () throws(SQLiteError) in
                (
                    try connection.prepare(
                        """
                        SELECT status, code, count(*) AS n, min(id) FROM items WHERE status IN (\(list))
                        GROUP BY status, code ORDER BY n DESC, status, code
                        """),
                    try connection.prepare(
                        """
                        SELECT profile_id, original_transaction_id, last_source, message FROM items
                        WHERE status = ? AND code IS ? ORDER BY id LIMIT ?
                        """)
                )
            }
            var groups: [RowGroup] = []
            var groupCount = 0
            while try wrap({ () throws(SQLiteError) in try counts.step() }) {
                groupCount += 1
                guard groups.count < groupLimit else { continue }
                let status = try decodeEnum(
                    ItemStatus.self, counts.text(0), table: "items", column: "status", row: counts.int(3))
                let code = counts.text(1)
                var rows: [ExampleRow] = []
                try wrap { () throws(SQLiteError) in
                    try examples.reset(.text(status.rawValue), .optionalText(code), .int(Int64(exampleLimit)))
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
            let (counts, examples) = try wrap { () throws(SQLiteError) in
                (
                    try connection.prepare(
                        "SELECT reason, count(*) AS n FROM rejections GROUP BY reason ORDER BY n DESC, reason"),
                    try connection.prepare(
                        """
                        SELECT profile_id, original_transaction_id, file, line, message FROM rejections
                        WHERE reason = ? ORDER BY file, line LIMIT ?
                        """)
                )
            }
            var groups: [RowGroup] = []
            var groupCount = 0
            while try wrap({ () throws(SQLiteError) in try counts.step() }) {
                groupCount += 1
                guard groups.count < groupLimit else { continue }
                let reason = counts.text(0) ?? ""
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
                groups.append(RowGroup(status: .rejected, code: reason, count: Int(counts.int(1)), examples: rows))
            }
            return (groups, groupCount)
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
                        SELECT profile_id, status, code, last_source, message, id FROM items INDEXED BY items_transaction
                        WHERE original_transaction_id = ? ORDER BY id LIMIT ?
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
                    let status = try decodeEnum(
                        ItemStatus.self, claims.text(1), table: "items", column: "status", row: claims.int(5))
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
                let outcome = try decodeEnum(
                    AttemptOutcome.self, statement.text(1), table: "attempts", column: "outcome",
                    row: statement.int(3))
                result[statement.int(0), default: [:]][outcome, default: 0] += Int(statement.int(2))
            }
            return result
        }
    }

    /// `body` inside one read transaction, so its statements see the same committed state.
    private func readTransaction<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        try wrap { () throws(SQLiteError) in try connection.execute("BEGIN") }
        defer { try? connection.execute("COMMIT") }
        return try body()
    }

    /// Milliseconds since 1970 of a journal timestamp (`2026-11-29T16:40:00.123Z`), read from its
    /// bytes: a million attempts are parsed in milliseconds, where a date formatter took seconds.
    static func milliseconds(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard text.count >= 20 else { return nil }
        func number(_ start: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for index in start..<(start + count) {
                let digit = Int64(text[index]) - 48
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2), (1...12).contains(month)
        else { return nil }
        var millisecond: Int64 = 0
        if text.count >= 24, text[19] == UInt8(ascii: "."), let fraction = number(20, 3) { millisecond = fraction }
        // Days since 1970 of the civil date (proleptic Gregorian), counted in 400-year eras from March.
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
    }
}
