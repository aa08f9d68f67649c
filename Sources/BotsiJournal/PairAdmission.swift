import Foundation

/// A pair a run read from its input, for `Journal.admit(_:runID:now:holdConflicts:)`.
public struct PairToAdmit: Sendable {
    public var profileId: String
    public var originalTransactionId: String
    public var source: RowSource

    public init(profileId: String, originalTransactionId: String, source: RowSource) {
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.source = source
    }
}

extension Journal {
    /// Pairs looked up per statement. One `IN` list for many rows instead of a statement per row:
    /// starting and ending a statement cost a rerun more than the lookup itself. The list is of
    /// transaction ids, not of pair hashes: `items_transaction` is in the order transactions were
    /// made, which is close to the order inputs list them, so its pages are read once, where the
    /// hashes' index is read at random (a read from disk per row on a large journal).
    static let admissionLookupSize = 128

    static let admissionLookupSQL =
        "SELECT pair_hash, profile_id, original_transaction_id, id, status, last_run, read_run FROM items "
        + "WHERE original_transaction_id IN (\(Array(repeating: "?", count: admissionLookupSize).joined(separator: ", ")))"

    /// What the journal holds of a pair.
    private struct KnownPair {
        var itemID: Int64
        var status: Int64
        var lastRun: Int64
        var readRun: Int64?
    }

    /// Records that this run read `pairs`, in order, and says for each whether to send it, exactly
    /// as one call each would (a pair met twice is a duplicate the second time, wherever the two
    /// fall); the journal's rows are found a batch at a time. Call it after the run has claimed
    /// every row it owes (`claim`): a pair the journal holds is then either this run's already or
    /// not to be sent. With `holdConflicts`, a new pair whose transaction the journal already
    /// pairs with another profile is recorded `held` instead of `pending`.
    public func admit(
        _ pairs: [PairToAdmit], runID: Int64, now: Int64, holdConflicts: Bool = false
    ) throws(JournalError) -> [Admission] {
        var shared: Set<String> = []
        return try admit(pairs, runID: runID, now: now, holdConflicts: holdConflicts, sharedTransactions: &shared)
    }

    /// `admit(_:runID:now:holdConflicts:)`, which also adds to `sharedTransactions` the transaction
    /// of every pair it records (to send or held) that another row of the journal claims once the
    /// call is done: what `isShared` says of each of them then. A transaction the lookup met no row
    /// of is claimed only by the pairs this call recorded, so it is counted here instead of looked
    /// up again (a statement per new row of a first run, ~5,700 instructions).
    public func admit(
        _ pairs: [PairToAdmit], runID: Int64, now: Int64, holdConflicts: Bool,
        sharedTransactions: inout Set<String>
    ) throws(JournalError) -> [Admission] {
        let hashes = pairs.map {
            Self.pairHash(profileId: $0.profileId, originalTransactionId: $0.originalTransactionId)
        }
        let (found, met) = try wrap { () throws(SQLiteError) in try lookUp(pairs, hashes: hashes) }
        // What this call wrote, by hash: a pair met again later in `pairs` sees it, as it would
        // have seen the row one call later.
        var written: [Int64: [(pair: Int, state: KnownPair)]] = [:]
        // The rows this call recorded, by transaction, and which pairs they are.
        var recordedByTransaction: [String: Int] = [:]
        var recorded: [Int] = []
        var admissions: [Admission] = []
        admissions.reserveCapacity(pairs.count)
        // New rows are inserted many a statement (`NewRows`), with the ids SQLite would give them
        // one INSERT at a time; before anything reads `items` again, they are all written.
        var newRows = NewRows()
        for (index, pair) in pairs.enumerated() {
            let hash = hashes[index]
            let earlier = written[hash]?.firstIndex { Self.samePair(pairs[$0.pair], pair) }
            guard let known = earlier.map({ written[hash]![$0].state }) ?? found[index] else {
                // Without rows met by the lookup, the only other claims are this call's own rows
                // (another profile's: the same pair again is not new).
                // Counted up at once, in the one look-up that reads the count (hashing the id twice
                // cost ~600 instructions a new row); nothing reads it before the pair is recorded.
                let recordedBefore = Self.countUp(&recordedByTransaction[pair.originalTransactionId, default: 0])
                let claimed: Bool? = met[index] ? nil : recordedBefore > 0
                if holdConflicts && claimed == nil { try insertNewRows(&newRows) }
                let (admission, state) = try insert(
                    pair, hash: hash, runID: runID, now: now, hold: holdConflicts, claimed: claimed, into: &newRows)
                written[hash, default: []].append((index, state))
                recorded.append(index)
                admissions.append(admission)
                continue
            }
            // A known row costs no write: a rerun over a journal of finished rows only reads,
            // which is what makes it fast. A status this version does not know is refused, not guessed.
            guard let status = ItemStatus(journalCode: known.status) else {
                throw .unknownValue(
                    path: path, table: "items", column: "status", row: known.itemID, value: String(known.status))
            }
            if known.lastRun != runID {
                admissions.append(.finished(status))
            } else if known.readRun == runID {
                admissions.append(.duplicate)
            } else {
                // Taken up as owed, now met in the input: read here last, and not a duplicate.
                try wrap { () throws(SQLiteError) in
                    try statement("UPDATE items SET read_run = ?, last_input = ?, last_line = ? WHERE id = ?")
                        .reset(.int(runID), .int(pair.source.input), .int(Int64(pair.source.line)), .int(known.itemID))
                        .run()
                }
                var state = known
                state.readRun = runID
                if let earlier {
                    written[hash]![earlier].state = state
                } else {
                    written[hash, default: []].append((index, state))
                }
                admissions.append(.owedMetAgain)
            }
        }
        try insertNewRows(&newRows)
        for index in recorded {
            let pair = pairs[index]
            let shared: Bool
            if case .held = admissions[index] {
                shared = true
            } else if met[index] {
                shared = try isShared(pair.originalTransactionId, byOtherThan: pair.profileId)
            } else {
                shared = recordedByTransaction[pair.originalTransactionId, default: 0] > 1
            }
            if shared { sharedTransactions.insert(pair.originalTransactionId) }
        }
        return admissions
    }

    /// The journal's row of each pair, nil for a pair it does not hold; and whether the lookup of
    /// the pair's batch met any row at all (false: no row has the transaction of any of its pairs).
    private func lookUp(
        _ pairs: [PairToAdmit], hashes: [Int64]
    ) throws(SQLiteError) -> (found: [KnownPair?], met: [Bool]) {
        var found = [KnownPair?](repeating: nil, count: pairs.count)
        var met = [Bool](repeating: false, count: pairs.count)
        let lookup = try statement(built: Self.admissionLookupSQL)
        // The ids are bound in place from a buffer of the batch's ids that this call owns until the
        // bindings are cleared: SQLite's own copy of each of 128 ids per batch was a third of the
        // lookup's cost (~2,500 instructions a row).
        var ids = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 0)
        defer { ids.deallocate() }
        defer { lookup.clearBindings() }
        var bounds: [Range<Int>] = []
        bounds.reserveCapacity(Self.admissionLookupSize)
        for start in stride(from: 0, to: pairs.count, by: Self.admissionLookupSize) {
            let end = min(start + Self.admissionLookupSize, pairs.count)
            lookup.rewind()
            // Nothing may point into the buffer while it is replaced.
            lookup.clearBindings()
            let size = pairs[start..<end].reduce(0) { $0 + $1.originalTransactionId.utf8.count }
            if size > ids.count {
                ids.deallocate()
                ids = .allocate(capacity: size)
            }
            bounds.removeAll(keepingCapacity: true)
            var used = 0
            for index in start..<end {
                var id = pairs[index].originalTransactionId
                let copied = id.withUTF8 { UnsafeMutableBufferPointer(rebasing: ids[used...]).initialize(from: $0).1 }
                bounds.append(used..<used + copied)
                used += copied
            }
            // A short batch repeats its first pair: one statement serves every size.
            for slot in 0..<Self.admissionLookupSize {
                let range = bounds[slot < bounds.count ? slot : 0]
                try lookup.bindInPlace(UnsafeBufferPointer(rebasing: ids[range]), at: Int32(slot + 1))
            }
            defer { lookup.rewind() }
            // The batch's pairs by hash (a chain for pairs of one hash), to match each row found.
            var firstWithHash: [Int64: Int] = [:]
            firstWithHash.reserveCapacity(end - start)
            var nextWithHash = [Int](repeating: -1, count: end - start)
            for index in (start..<end).reversed() {
                if let next = firstWithHash.updateValue(index, forKey: hashes[index]) {
                    nextWithHash[index - start] = next
                }
            }
            var rowsMet = false
            while try lookup.step() {
                rowsMet = true
                var candidate = firstWithHash[lookup.int(0)] ?? -1
                while candidate >= 0 {
                    let index = candidate
                    candidate = nextWithHash[index - start]
                    // The hash only narrows the match: the texts decide (two pairs can share a hash).
                    guard found[index] == nil, Self.equal(lookup.bytes(1), pairs[index].profileId),
                        Self.equal(lookup.bytes(2), pairs[index].originalTransactionId)
                    else { continue }
                    found[index] = KnownPair(
                        itemID: lookup.int(3), status: lookup.int(4), lastRun: lookup.int(5),
                        readRun: lookup.optionalInt(6))
                }
            }
            if rowsMet { met.replaceSubrange(start..<end, with: repeatElement(true, count: end - start)) }
        }
        return (found, met)
    }

    /// Records a pair the journal did not hold: `pending`, or `held` when asked to and another
    /// profile claims its transaction (`claimed`, when the caller knows; else looked up, with
    /// every new row written first). The row joins `newRows`, with the id its INSERT would get.
    /// Returns the admission and the row as it now stands.
    private func insert(
        _ pair: PairToAdmit, hash: Int64, runID: Int64, now: Int64, hold holdConflicts: Bool, claimed: Bool?,
        into newRows: inout NewRows
    ) throws(JournalError) -> (Admission, KnownPair) {
        try wrap { () throws(SQLiteError) in
            var held = false
            if holdConflicts, let claimed {
                held = claimed
            } else if holdConflicts {
                held = try isClaimedByAnotherProfile(pair.originalTransactionId, profileId: pair.profileId)
            }
            let status = held ? ItemStatus.held : .pending
            // A new row's id is one more than the largest in the table (INTEGER PRIMARY KEY, no
            // AUTOINCREMENT), as SQLite gives it to an INSERT that names none.
            if newRows.nextID == nil {
                let largest = try statement("SELECT max(id) FROM items")
                defer { largest.rewind() }
                newRows.nextID = (try largest.step() ? largest.int(0) : 0) + 1
            }
            let itemID = newRows.nextID!
            newRows.nextID = itemID + 1
            newRows.rows.append(
                NewRow(itemID: itemID, hash: hash, pair: pair, status: status, runID: runID, now: now))
            let admission: Admission =
                held ? .held(itemID: itemID) : .send(itemID: itemID, mark: .admitted(itemID: itemID, at: now))
            return (admission, KnownPair(itemID: itemID, status: status.journalCode, lastRun: runID, readRun: runID))
        }
    }

    /// Inserts `newRows` in order, many a statement (`MultiRowInsert.items`).
    private func insertNewRows(_ newRows: inout NewRows) throws(JournalError) {
        guard !newRows.rows.isEmpty else { return }
        try wrap { () throws(SQLiteError) in
            try insert(newRows.rows, as: .items) { row in
                [
                    .int(row.itemID), .int(row.hash), .text(row.pair.profileId),
                    .text(row.pair.originalTransactionId), .int(row.status.journalCode),
                    .optionalText(row.status == .held ? ItemStatus.heldCode : nil), .int(row.pair.source.input),
                    .int(Int64(row.pair.source.line)), .int(row.runID), .int(row.now),
                ]
            }
            newRows.rows.removeAll(keepingCapacity: true)
        }
    }

    /// The count as it was, then one more.
    private static func countUp(_ count: inout Int) -> Int {
        defer { count += 1 }
        return count
    }

    private static func samePair(_ one: PairToAdmit, _ other: PairToAdmit) -> Bool {
        one.profileId == other.profileId && one.originalTransactionId == other.originalTransactionId
    }

    /// Whether SQLite's text (read in place) is `text`, byte for byte, as `=` compares them.
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>?, _ text: String) -> Bool {
        guard let bytes else { return false }
        var text = text
        return text.withUTF8 { own in
            own.count == bytes.count && (own.isEmpty || memcmp(own.baseAddress!, bytes.baseAddress!, own.count) == 0)
        }
    }
}

/// The rows an admission call has decided to insert, in order, and the id the next one takes.
private struct NewRows {
    var rows: [NewRow] = []
    var nextID: Int64?
}

private struct NewRow {
    let itemID: Int64
    let hash: Int64
    let pair: PairToAdmit
    let status: ItemStatus
    let runID: Int64
    let now: Int64
}
