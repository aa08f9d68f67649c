import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Refused input rows are counted by reason as they are recorded (`rejection_counts`, kept by
/// triggers), so `status` and the page read a few rows where they counted the whole `rejections`
/// table (0.48 s at a million refused rows). Checked as state: seeded, random sequences of runs —
/// each opening the journal as a run does, refusing lines drawn from a small pool so that later
/// runs refuse the same lines again, now and then a run of 0.2.0 (whose journals lack the counts)
/// in between (its file has no counts), and a merge of two such journals at the end — against a model: the set of distinct
/// refused lines. `REJECTION_SEED=n` replays one seed.
@Suite struct RejectionCountsTests {
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["REJECTION_SEED"].flatMap { UInt64($0) }.map { [$0] } ?? Array(1...8)
    static let reasons = ["malformed_csv", "invalid_profile_id", "scientific_notation", "missing_transaction_id"]

    /// What makes a refused line one record: its file, line, reason and raw ids.
    struct Refusal: Hashable {
        var file: String
        var line: Int
        var reason: String
        var profile: String
    }

    /// The counts as `status` reads them.
    private func statusCounts(_ path: String) throws -> [String: Int] {
        let reader = try Journal(path: path, create: false, readOnly: true)
        defer { reader.close() }
        return try reader.snapshot(recentSince: Date()).rejections
    }

    /// The rows themselves, counted: what the kept counts must always equal.
    private func countedRows(_ path: String) throws -> [String: Int] {
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        let rows = try connection.prepare("SELECT reason, count(*) FROM rejections GROUP BY reason")
        var counts: [String: Int] = [:]
        while try rows.step() { counts[rows.text(0) ?? ""] = Int(rows.int(1)) }
        return counts
    }

    private func keptCounts(_ path: String) throws -> [String: Int]? {
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        guard try connection.hasTable("rejection_counts") else { return nil }
        let rows = try connection.prepare("SELECT reason, rows FROM rejection_counts WHERE rows != 0")
        var counts: [String: Int] = [:]
        while try rows.step() { counts[rows.text(0) ?? ""] = Int(rows.int(1)) }
        return counts
    }

    /// A journal as 0.2.0 left it: schema 5 without the kept counts.
    private func removeKeptCounts(_ path: String) throws {
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        try connection.execute(
            """
            DROP TRIGGER rejections_counted_on_insert; DROP TRIGGER rejections_counted_on_update;
            DROP TRIGGER rejections_counted_on_delete; DROP TABLE rejection_counts;
            """)
    }

    private static func model(_ refusals: Set<Refusal>) -> [String: Int] {
        refusals.reduce(into: [:]) { $0[$1.reason, default: 0] += 1 }
    }

    /// One run: opens the journal for a run, refuses `count` lines drawn from the pool.
    private func run(_ path: String, refusing count: Int, file: String, random: inout SplitMix64) throws -> [Refusal] {
        let journal = try Journal.openForRun(path: path)
        defer { journal.close() }
        let refusals = (0..<count).map { _ in
            Refusal(
                file: file, line: Int.random(in: 1...12, using: &random),
                reason: Self.reasons.randomElement(using: &random)!,
                profile: ["", "p1", "p2"].randomElement(using: &random)!)
        }
        try journal.transaction { () throws(JournalError) in
            let now = Timestamp.string(Date())
            let run = try journal.startRun(startedAt: Date(), toolVersion: "t", host: "h", pid: 1, optionsJSON: "{}")
            for refusal in refusals {
                try journal.recordRejection(
                    file: refusal.file, line: refusal.line, reason: refusal.reason, message: "m",
                    profileId: refusal.profile, originalTransactionId: nil, runID: run, now: now)
            }
        }
        return refusals
    }

    @Test(arguments: seeds)
    func keptCountsFollowTheRefusedRowsAcrossRunsAndAMerge(seed: UInt64) throws {
        let directory = Workspace()
        var random = SplitMix64(seed: seed)
        var shards: [String] = []
        var models: [Set<Refusal>] = []
        for name in ["a", "b"] {
            let path = directory.file("\(name).sqlite")
            var model = Set<Refusal>()
            for step in 0..<Int.random(in: 3...7, using: &random) {
                let oldWriter = Int.random(in: 0..<4, using: &random) == 0
                let file = ["in.csv", "\(name).csv"].randomElement(using: &random)!
                model.formUnion(
                    try run(path, refusing: Int.random(in: 0...15, using: &random), file: file, random: &random))
                if oldWriter {
                    // The file as 0.2.0 would have left it: a reader counts the rows, the next run
                    // adds the counts.
                    try removeKeptCounts(path)
                    #expect(try keptCounts(path) == nil, "seed \(seed): a reader writes nothing")
                    #expect(
                        try statusCounts(path) == Self.model(model), "seed \(seed), step \(step), read by 0.2.0's rules"
                    )
                    try Journal.openForRun(path: path).close()
                }
                #expect(try keptCounts(path) == Self.model(model), "seed \(seed), journal \(name), step \(step)")
                #expect(try statusCounts(path) == Self.model(model), "seed \(seed), journal \(name), step \(step)")
                #expect(try countedRows(path) == Self.model(model), "seed \(seed), journal \(name), step \(step)")
            }
            shards.append(path)
            models.append(model)
        }
        let merged = directory.file("merged.sqlite")
        _ = try Journal.merge(shards: shards, into: merged)
        let union = Self.model(models[0].union(models[1]))
        #expect(try keptCounts(merged) == union, "seed \(seed): merged")
        #expect(try statusCounts(merged) == union, "seed \(seed): merged")
    }

    /// `status` and the page read the kept counts, not the rows (which is what made them slow): a
    /// count edited by hand shows.
    @Test func statusAndThePageReadTheKeptCounts() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        var random = SplitMix64(seed: 1)
        _ = try run(path, refusing: 3, file: "in.csv", random: &random)
        let connection = try SQLiteConnection(path: path)
        try connection.execute("DELETE FROM rejection_counts; INSERT INTO rejection_counts VALUES ('kept', 41)")
        connection.close()
        #expect(try statusCounts(path) == ["kept": 41])
        let reader = try Journal(path: path, create: false, readOnly: true)
        defer { reader.close() }
        let page = try reader.rejectionGroups(groupLimit: 5, exampleLimit: 2)
        #expect(page.groups.map(\.code) == ["kept"] && page.groups.map(\.count) == [41] && page.groupCount == 1)
    }

    /// As with `run_counts`, a refused row edited or deleted by hand is counted again.
    @Test func aRowEditedOrDeletedByHandIsCountedAgain() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        var random = SplitMix64(seed: 3)
        let refusals = Set(try run(path, refusing: 12, file: "in.csv", random: &random))
        let connection = try SQLiteConnection(path: path)
        try connection.execute(
            """
            UPDATE rejections SET reason = 'edited' WHERE id = (SELECT min(id) FROM rejections);
            UPDATE rejections SET reason = 'gone' WHERE id = (SELECT max(id) FROM rejections);
            DELETE FROM rejections WHERE reason = 'gone';
            """)
        connection.close()
        #expect(refusals.count >= 2)
        #expect(try keptCounts(path) == countedRows(path))
        #expect(try keptCounts(path)?["edited"] == 1)
        #expect(try statusCounts(path) == countedRows(path), "a reason with no rows left is not listed")
    }

    /// A journal of 0.2.0 gains the counts only from a run: a read-only command and a dry run
    /// leave the file as it is (and count the rows), a run adds them filled from the rows there.
    @Test func onlyARunAddsTheCountsToAJournalOf020() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        var random = SplitMix64(seed: 2)
        let refusals = Set(try run(path, refusing: 20, file: "in.csv", random: &random))
        try removeKeptCounts(path)

        #expect(try statusCounts(path) == Self.model(refusals))
        try Journal.openForRun(path: path, migrationUncommitted: true).close()
        #expect(try keptCounts(path) == nil, "a dry run writes nothing")
        try Journal.openForRun(path: path).close()
        #expect(try keptCounts(path) == Self.model(refusals))
        try Journal.openForRun(path: path).close()
        #expect(try keptCounts(path) == Self.model(refusals), "added once, not twice")
    }
}
