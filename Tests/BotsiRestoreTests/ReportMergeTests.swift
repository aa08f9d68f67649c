import BotsiJournal
import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Item counts by "status/code" and rejections by reason: what `report` and `status` add up.
func journalCounts(_ path: String) throws -> (items: [String: Int], rejections: [String: Int]) {
    let journal = try Journal(path: path, create: false, readOnly: true)
    defer { journal.close() }
    let snapshot = try journal.snapshot(recentSince: Date())
    var items: [String: Int] = [:]
    for count in snapshot.items { items["\(count.status)/\(count.code ?? "")", default: 0] += count.count }
    return (items, snapshot.rejections)
}

@Suite struct ReportMergeTests {
    /// 30 pairs whose outcomes cover restored, nothing_to_restore and profile_not_found, plus two
    /// rows the input checks reject.
    static func rows(_ range: Range<Int>) -> String {
        var text = "profileId,originalTransactionId\n"
        for index in range {
            let profile = index % 7 == 0 ? "unknown-\(index)" : "profile-\(index)"
            text += "\(profile),\(2_000_000_000_000_000 + index * 3)\n"
        }
        return text
    }

    @Test func mergedShardJournalsReportTheSameCountsAsOneUnshardedRun() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let bad = ",2000000000000001\nprofile-x,2.0E+15\n"
        let union = directory.write("union.csv", Self.rows(0..<30) + bad)
        let shardA = directory.write("a.csv", Self.rows(0..<15) + bad)
        let shardB = directory.write("b.csv", Self.rows(15..<30))

        let whole = directory.file("whole.sqlite")
        #expect(try runJob([union], journal: whole, baseURL: simulator.baseURL).exitCode == 0)
        let journalA = directory.file("shard-0.sqlite")
        let journalB = directory.file("shard-1.sqlite")
        #expect(try runJob([shardA], journal: journalA, baseURL: simulator.baseURL).exitCode == 0)
        #expect(try runJob([shardB], journal: journalB, baseURL: simulator.baseURL).exitCode == 0)

        let merged = directory.file("merged.sqlite")
        let summary = try Journal.merge(shards: [journalA, journalB], into: merged)
        #expect(summary.runs == 2)
        #expect(summary.items == 30)
        #expect(summary.pairsInSeveralShards == 0)

        let expected = try journalCounts(whole)
        let actual = try journalCounts(merged)
        #expect(actual.items == expected.items)
        #expect(actual.rejections == expected.rejections)
        #expect(expected.items.keys.count == 3, "the input covers three outcomes")

        let journal = try Journal(path: merged, create: false, readOnly: true)
        defer { journal.close() }
        let runs = try journal.runs()
        #expect(runs.map(\.id) == [1, 2])
        #expect(
            runs[0].options.contains(
                #""mergedFrom":{"journal":"\#(journalA.replacingOccurrences(of: "/", with: "\\/"))""#)
                || runs[0].options.contains(journalA))
        #expect(runs[1].options.contains("shard-1.sqlite"))
        var restoredWithSnapshot = 0
        try journal.forEachReportRecord(ReportFilter(runID: 2, statuses: ["restored"])) { record in
            if record.accessLevels != nil { restoredWithSnapshot += 1 }
        }
        #expect(restoredWithSnapshot > 0, "run 2's rows (shard 1) keep their attempts and snapshots")
        #expect(try journal.integrityCheck() == "ok")
    }

    /// A merged journal merged again (a reviewer's `merge mx m1 s0 s0copy`): its runs keep the
    /// shard they came from, so `report --changes` still finds every shard's last run; and a pair
    /// held by three journals is one pair in more than one shard, not two.
    @Test func aMergedJournalMergedAgainKeepsItsShardsAndCountsEachSharedPairOnce() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let a = directory.file("a.sqlite")
        let b = directory.file("b.sqlite")
        #expect(
            try runJob(
                [directory.csv("a.csv", rows: [("pa", "2000000000000002")])], journal: a, baseURL: simulator.baseURL
            ).exitCode == 0)
        #expect(
            try runJob(
                [directory.csv("b.csv", rows: [("pb", "2000000000000010")])], journal: b, baseURL: simulator.baseURL
            ).exitCode == 0)
        let first = directory.file("first.sqlite")
        _ = try Journal.merge(shards: [a, b], into: first)
        let copy = directory.file("a-copy.sqlite")
        try FileManager.default.copyItem(atPath: a, toPath: copy)
        let again = directory.file("again.sqlite")
        let summary = try Journal.merge(shards: [first, a, copy], into: again)
        #expect(summary.pairsInSeveralShards == 1, "pa is in all three; pb only in first")
        #expect(summary.items == 2)
        let journal = try Journal(path: again, create: false, readOnly: true)
        defer { journal.close() }
        let shards = try journal.runs().map { recordedShard($0.options) }
        #expect(shards.count == 2)
        #expect(Set(shards) == [a, b], "\(shards)")
    }

    @Test func aPairInTwoShardsKeepsTheRecordUpdatedLastAndAllAttempts() throws {
        let directory = Workspace()
        let input = directory.csv("in.csv", rows: [("shared", "2000000000000002")])
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
            options.retryAfterSeconds = 0
        }
        let early = directory.file("early.sqlite")
        _ = try runJob([input], journal: early, baseURL: failing.baseURL) { $0.maxAttempts = 2 }
        let healthy = try startSimulator()
        let late = directory.file("late.sqlite")
        #expect(try runJob([input], journal: late, baseURL: healthy.baseURL).exitCode == 0)

        // Either order of the arguments gives the same answer.
        for (name, shards) in [("one.sqlite", [early, late]), ("two.sqlite", [late, early])] {
            let merged = directory.file(name)
            let summary = try Journal.merge(shards: shards, into: merged)
            #expect(summary.pairsInSeveralShards == 1)
            #expect(summary.attempts == 3)
            let journal = try Journal(path: merged, create: false, readOnly: true)
            defer { journal.close() }
            var records: [ReportRecord] = []
            try journal.forEachReportRecord(ReportFilter()) { records.append($0) }
            #expect(records.count == 1)
            #expect(records.first?.status == .restored)
            #expect(records.first?.attempts == 3)
        }
    }

    @Test func mergeRefusesAnExistingOutputAndLeavesNothingWhenAShardIsNotAJournal() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let shard = directory.file("shard.sqlite")
        _ = try runJob(
            [directory.csv("in.csv", rows: [("p", "2000000000000002")])], journal: shard, baseURL: simulator.baseURL)

        let existing = directory.write("exists.sqlite", "")
        #expect(throws: JournalError.self) { _ = try Journal.merge(shards: [shard], into: existing) }
        #expect(try String(contentsOfFile: existing, encoding: .utf8).isEmpty, "left untouched")

        let notAJournal = directory.write("notes.sqlite", "just text, not SQLite\n")
        let output = directory.file("out.sqlite")
        #expect(throws: JournalError.self) { _ = try Journal.merge(shards: [shard, notAJournal], into: output) }
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func mergeRefusesAShardThatALiveRunHolds() throws {
        let directory = Workspace()
        let simulator = try startSimulator()
        let shard = directory.file("shard.sqlite")
        _ = try runJob(
            [directory.csv("in.csv", rows: [("p", "2000000000000002")])], journal: shard, baseURL: simulator.baseURL)
        let live = try Journal.openForRun(path: shard)
        defer { live.close() }
        let output = directory.file("out.sqlite")
        #expect {
            _ = try Journal.merge(shards: [shard], into: output)
        } throws: { error in
            guard case .locked = error as? JournalError else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: output))
    }
}

/// The shard journal a merged run names (`options.mergedFrom.path`).
private func recordedShard(_ options: String) -> String {
    let object = try? JSONSerialization.jsonObject(with: Data(options.utf8)) as? [String: Any]
    return (object?["mergedFrom"] as? [String: Any])?["path"] as? String ?? ""
}
