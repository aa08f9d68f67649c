import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Admission a batch at a time (`Journal.admit(_:runID:now:holdConflicts:)`, one `IN` lookup per
/// 128 pairs) over seeded, random sequences of runs, checked against a reference model of what
/// admission means, row by row: a pair the journal does not hold is new (`held` when its
/// transaction belongs to another profile and conflicts are held); held by an earlier run, it is
/// finished; claimed as owed by this run, it is met again once, then a duplicate; admitted by this
/// run, a duplicate. Pairs come from a small pool, so duplicates fall inside one batch and across
/// batches, transactions are shared between profiles, and batches cross the lookup's size. Each
/// batch also names the transactions of the pairs it recorded that another row claims (what a run
/// counts as conflicts), checked against the model and against `isShared` asked row by row.
/// `ADMISSION_SEED=n` replays one seed.
@Suite struct BatchAdmissionModelTests {
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["ADMISSION_SEED"].flatMap { UInt64($0) }.map { [$0] } ?? Array(1...6)

    /// The model's row of a pair.
    struct Row {
        var itemID: Int64
        var status: ItemStatus
        var lastRun: Int64
        var readRun: Int64?
        var source: RowSource
    }

    struct Pair: Hashable {
        var profile: String
        var transaction: String
    }

    /// Which pairs the runs read.
    enum Pool: CaseIterable {
        /// Few transactions for many profiles, drawn at random: the lookup by transaction meets
        /// other profiles' rows.
        case crowded
        /// Many transactions of several lengths, one in ten claimed by the profile read just before
        /// it too, read in order as an export lists them (now and then an earlier pair again): most
        /// lookups meet no row, so a batch's shared transactions are known without asking (only its
        /// own pairs claim them).
        case sparse

        var pairs: [Pair] {
            switch self {
            case .crowded:
                (0..<90).map { index in Pair(profile: "profile-\(index % 37)", transaction: "\(1_000_000 + index % 41)")
                }
            case .sparse:
                (0..<20_000).map { index in
                    let claim = index % 10 == 1 ? index - 1 : index
                    return Pair(
                        profile: "profile-\(index)",
                        transaction: String(repeating: "9", count: claim % 7) + "\(2_000_000 + claim)")
                }
            }
        }

        /// The next pair a run reads; `cursor` is where a sparse input stands.
        func next(from pool: [Pair], cursor: inout Int, random: inout SplitMix64) -> Pair {
            switch self {
            case .crowded:
                return pool[random.nextIndex(below: pool.count)]
            case .sparse:
                if random.nextIndex(below: 20) == 0 { return pool[random.nextIndex(below: cursor + 1)] }
                cursor = min(cursor + 1, pool.count - 1)
                return pool[cursor]
            }
        }
    }

    @Test(arguments: seeds, Pool.allCases)
    func batchesAdmitAsTheModelSays(seed: UInt64, pool kind: Pool) throws {
        var random = SplitMix64(seed: seed)
        let directory = Workspace()
        let journal = try Journal(path: directory.file("journal.sqlite"))
        defer { journal.close() }
        let pool = kind.pairs
        var cursor = 0
        var model: [Pair: Row] = [:]
        for runNumber in 1...5 {
            let holdConflicts = random.nextIndex(below: 2) == 0
            let runID = try journal.transaction { () throws(JournalError) in
                try journal.startRun(
                    startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
            }
            let input = try journal.inputID(path: "input-\(runNumber).csv")
            // The run claims some pending rows as owed, as a run does before it reads its input.
            for (pair, row) in model where row.status == .pending && random.nextIndex(below: 2) == 0 {
                try journal.claim(itemID: row.itemID, runID: runID)
                model[pair]?.lastRun = runID
            }
            var line = 1
            for _ in 0..<(3 + random.nextIndex(below: 4)) {
                let size = 1 + random.nextIndex(below: 300)
                var pairs: [PairToAdmit] = []
                var expected: [String] = []
                for _ in 0..<size {
                    let pair = kind.next(from: pool, cursor: &cursor, random: &random)
                    line += 1
                    let source = RowSource(input: input, line: line)
                    pairs.append(
                        PairToAdmit(profileId: pair.profile, originalTransactionId: pair.transaction, source: source))
                    expected.append(Self.admit(pair, source: source, runID: runID, hold: holdConflicts, model: &model))
                }
                var shared: Set<String> = []
                let admissions = try journal.transaction { () throws(JournalError) in
                    try journal.admit(
                        pairs, runID: runID, now: Int64(runNumber), holdConflicts: holdConflicts,
                        sharedTransactions: &shared)
                }
                // The recorded pairs' transactions that two rows or more claim now, by the model and
                // by the journal's own lookup.
                var claims: [String: Int] = [:]
                for pair in model.keys { claims[pair.transaction, default: 0] += 1 }
                var modelShared: Set<String> = []
                var lookedUp: Set<String> = []
                for (pair, admission) in zip(pairs, admissions) {
                    switch admission {
                    case .send, .held:
                        if claims[pair.originalTransactionId, default: 0] > 1 {
                            modelShared.insert(pair.originalTransactionId)
                        }
                        if try journal.isShared(pair.originalTransactionId, byOtherThan: pair.profileId) {
                            lookedUp.insert(pair.originalTransactionId)
                        }
                    case .duplicate, .owedMetAgain, .finished:
                        break
                    }
                }
                #expect(
                    shared == modelShared && shared == lookedUp,
                    "seed \(seed) (replay: ADMISSION_SEED=\(seed)), \(kind), run \(runNumber), a batch of \(size): shared \(shared.sorted()), model \(modelShared.sorted()), isShared \(lookedUp.sorted())"
                )
                // The model numbers new rows as the journal does: in the order they were admitted.
                let got = admissions.map(Self.describe)
                if let first = expected.indices.first(where: { !got.indices.contains($0) || got[$0] != expected[$0] }) {
                    Issue.record(
                        """
                        seed \(seed) (replay: ADMISSION_SEED=\(seed)), run \(runNumber), a batch of \(size): pair \(first) \
                        (\(pairs[first].profileId), \(pairs[first].originalTransactionId)) admitted \
                        "\(got.indices.contains(first) ? got[first] : "nothing")", the model says "\(expected[first])"
                        """)
                    return
                }
            }
            try Self.expectJournalMatches(model, journal: journal, seed: seed, run: runNumber)
            // Between runs, some rows get their answers.
            for (pair, row) in model where row.status == .pending && random.nextIndex(below: 3) == 0 {
                let status: ItemStatus = random.nextIndex(below: 2) == 0 ? .restored : .failed
                try journal.transaction { () throws(JournalError) in
                    try journal.recordOutcome(
                        itemID: row.itemID, status: status, code: nil, httpStatus: 200, message: nil,
                        now: Int64(runNumber),
                        profile: status == .restored ? ProfileRecord(state: "active", accessLevelsJSON: "{}") : nil)
                }
                model[pair]?.status = status
            }
        }
    }

    /// A batch's new rows are inserted many a statement with the ids one INSERT each would give
    /// them: the journal a batch leaves (rows, counts) is the one a call per pair leaves, with
    /// conflicts held or not, duplicates and owed rows among them, after earlier rows and not.
    @Test(arguments: [false, true])
    func aBatchWritesWhatACallPerPairWrites(holdConflicts: Bool) throws {
        let directory = Workspace()
        func journal(batched: Bool) throws -> String {
            let path = directory.file("\(batched ? "batch" : "apart").sqlite")
            let journal = try Journal(path: path)
            defer { journal.close() }
            let input = try journal.inputID(path: "in.csv")
            let pairs = (0..<150).map { index in
                PairToAdmit(
                    profileId: "p\(index % 60)", originalTransactionId: "\(1_000 + index % 45)",
                    source: RowSource(input: input, line: index + 2))
            }
            for run in 1...2 {
                let runID = try journal.transaction { () throws(JournalError) in
                    try journal.startRun(startedAt: Date(), toolVersion: "t", host: "h", pid: 1, optionsJSON: "{}")
                }
                let slice = run == 1 ? Array(pairs[..<70]) : pairs
                try journal.transaction { () throws(JournalError) in
                    if run == 2 { try journal.claim(itemID: 3, runID: runID) }
                    if batched {
                        _ = try journal.admit(slice, runID: runID, now: Int64(run), holdConflicts: holdConflicts)
                    } else {
                        for pair in slice {
                            _ = try journal.admit([pair], runID: runID, now: Int64(run), holdConflicts: holdConflicts)
                        }
                    }
                }
            }
            return try SQLiteTool.execute(
                path,
                """
                SELECT * FROM items ORDER BY id;
                SELECT * FROM run_counts ORDER BY run_id, status, code;
                """)
        }
        let apart = try journal(batched: false)
        #expect(try journal(batched: true) == apart)
        #expect(apart.split(separator: "\n").count > 60)
    }

    /// The hash every journal already holds in `items.pair_hash`: FNV-1a over both ids' UTF-8 with
    /// a zero byte between. It must never change, whatever computes it.
    @Test func pairHashIsFNV1aOfBothIdsAndAZeroByte() {
        #expect(Journal.pairHash(profileId: "profile-1", originalTransactionId: "1000001") == 4_736_699_983_775_126_928)
        #expect(
            Journal.pairHash(profileId: "é ß", originalTransactionId: "2000000000000002") == 798_143_918_793_279_519)
        #expect(Journal.pairHash(profileId: "", originalTransactionId: "") == -5_808_590_958_014_384_161)
    }

    /// Two pairs of one hash stay apart: the lookup finds rows by transaction and the hash only
    /// narrows the match, the texts decide. The colliding row is written by hand (a real FNV-1a
    /// collision is out of reach) and listed first, so a match on the hash alone finds it.
    @Test func aRowThatSharesTheHashAndTheTransactionIsNotThePair() throws {
        let directory = Workspace()
        let journal = try Journal(path: directory.file("journal.sqlite"))
        defer { journal.close() }
        let first = try journal.transaction { () throws(JournalError) in
            try journal.startRun(startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
        }
        let input = try journal.inputID(path: "in.csv")
        let hash = Journal.pairHash(profileId: "owner", originalTransactionId: "2000000000000001")
        try journal.connection.execute(
            """
            INSERT INTO items (pair_hash, profile_id, original_transaction_id, status, first_input, first_line,
                last_input, last_line, first_run, last_run, read_run, created_at, updated_at)
            VALUES (\(hash), 'impostor', '2000000000000001', \(ItemStatus.failed.journalCode), \(input), 1, \(input), 1,
                \(first), \(first), \(first), 0, 0)
            """)
        let pair = PairToAdmit(
            profileId: "owner", originalTransactionId: "2000000000000001", source: RowSource(input: input, line: 2))
        let admitted = try journal.transaction { () throws(JournalError) in
            try journal.admit([pair], runID: first, now: 1)
        }
        guard case .send(let itemID, _)? = admitted.first else {
            Issue.record("the owner's pair is new, whatever shares its hash: \(admitted)")
            return
        }
        try journal.transaction { () throws(JournalError) in
            try journal.recordOutcome(
                itemID: itemID, status: .restored, code: nil, httpStatus: 200, message: nil, now: 2,
                profile: ProfileRecord(state: "active", accessLevelsJSON: "{}"))
        }
        let second = try journal.transaction { () throws(JournalError) in
            try journal.startRun(startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
        }
        let again = try journal.transaction { () throws(JournalError) in
            try journal.admit([pair, pair], runID: second, now: 3)
        }
        #expect(again == [.finished(.restored), .finished(.restored)])
    }

    /// The reference: what admitting `pair` means, and the model's row after it.
    static func admit(
        _ pair: Pair, source: RowSource, runID: Int64, hold: Bool, model: inout [Pair: Row]
    ) -> String {
        guard var row = model[pair] else {
            let claimed = model.contains { $0.key.transaction == pair.transaction && $0.key.profile != pair.profile }
            let status: ItemStatus = hold && claimed ? .held : .pending
            let itemID = Int64(model.count + 1)
            model[pair] = Row(itemID: itemID, status: status, lastRun: runID, readRun: runID, source: source)
            return status == .held ? "held \(itemID)" : "send \(itemID)"
        }
        guard row.lastRun == runID else { return "finished \(row.status.rawValue)" }
        if row.readRun == runID { return "duplicate" }
        row.readRun = runID
        row.source = source
        model[pair] = row
        return "owed met again"
    }

    static func describe(_ admission: Admission) -> String {
        switch admission {
        case .send(let itemID, _): "send \(itemID)"
        case .held(let itemID): "held \(itemID)"
        case .finished(let status): "finished \(status.rawValue)"
        case .duplicate: "duplicate"
        case .owedMetAgain: "owed met again"
        }
    }

    /// The journal's rows are the model's: status, runs and where each was last read.
    static func expectJournalMatches(_ model: [Pair: Row], journal: Journal, seed: UInt64, run: Int) throws {
        let rows = try journal.connection.prepare(
            "SELECT id, profile_id, original_transaction_id, status, last_run, read_run, last_input, last_line FROM items"
        )
        var found: [Pair: Row] = [:]
        while try rows.step() {
            let pair = Pair(profile: rows.text(1) ?? "", transaction: rows.text(2) ?? "")
            found[pair] = Row(
                itemID: rows.int(0), status: ItemStatus(journalCode: rows.int(3)) ?? .rejected, lastRun: rows.int(4),
                readRun: rows.optionalInt(5), source: RowSource(input: rows.int(6), line: Int(rows.int(7))))
        }
        #expect(found.count == model.count, "seed \(seed), after run \(run): \(found.count) rows, model \(model.count)")
        for (pair, expected) in model {
            let row = found[pair]
            #expect(
                row?.itemID == expected.itemID && row?.status == expected.status && row?.lastRun == expected.lastRun
                    && row?.readRun == expected.readRun && row?.source == expected.source,
                "seed \(seed) (replay: ADMISSION_SEED=\(seed)), after run \(run), \(pair): journal \(String(describing: row)), model \(expected)"
            )
        }
    }

    /// New rows hold exactly what they were admitted with, whatever the size of the statement that
    /// wrote them (32, 2 and 1 rows here: the comparison above cannot tell, as both ways write
    /// through the same statements), and a new row after an attempt's INSERT of the same size is
    /// still written by the statement for rows, not the one for attempts.
    @Test func newRowsHoldWhatTheyWereAdmittedWith() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let (journal, run, items) = try journalWithAdmittedRows(at: path, count: 35)
        defer { journal.close() }
        try journal.transaction { () throws(JournalError) in
            let attempt = AttemptRecord(
                itemID: items[0], runID: run, number: 1, startedAt: Date(timeIntervalSince1970: 2),
                durationMilliseconds: 1, httpStatus: 503, code: "http_503", outcome: .retry, profile: nil)
            try journal.recordReply(attempt, outcome: nil)
        }
        let input = try journal.inputID(path: "in.csv")
        let last = PairToAdmit(
            profileId: "p35", originalTransactionId: "1035", source: RowSource(input: input, line: 37))
        _ = try journal.transaction { () throws(JournalError) in try journal.admit([last], runID: run, now: 1_000) }

        let rows = try SQLiteTool.execute(
            path,
            """
            SELECT id, pair_hash, profile_id, original_transaction_id, first_input, first_line, last_input, last_line,
                first_run, last_run, read_run, created_at, updated_at
            FROM items ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        let expected = (0..<36).map { n in
            "\(n + 1)|\(Journal.pairHash(profileId: "p\(n)", originalTransactionId: "\(1_000 + n)"))|p\(n)|\(1_000 + n)|"
                + "\(input)|\(n + 2)|\(input)|\(n + 2)|\(run)|\(run)|\(run)|1000|1000"
        }
        #expect(rows == expected)
    }
}
