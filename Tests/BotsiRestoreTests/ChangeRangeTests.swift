import BotsiRestore
import Testing

@testable import BotsiJournal

/// Which run `report --changes` compares the latest with when not told: in a merged journal, the
/// run before the first of each shard's latest runs, shards known by what `merge` recorded.
@Suite struct ChangeRangeTests {
    static func run(_ id: Int64, mergedFrom: String?) -> RunRecord {
        RunRecord(
            id: id, startedAt: "2026-12-07T00:00:00.000Z", endedAt: "2026-12-07T00:01:00.000Z", state: .finished,
            exitCode: 0, toolVersion: "test", host: "h", pid: 1,
            options: mergedFrom.map { #"{"mergedFrom":\#($0)}"# } ?? "{}", inputs: [], counts: RunCounts())
    }

    @Test func aJournalNotMergedComparesWithTheRunBefore() {
        let runs = (1...4).map { Self.run($0, mergedFrom: nil) }
        #expect(ChangeRange.defaultEarlier(runs: runs, later: 4) == 3)
        #expect(ChangeRange.defaultEarlier(runs: runs, later: 1) == 0)
        #expect(ChangeRange.defaultEarlier(runs: [], later: 0) == 0, "no run before none")
    }

    /// Shards a and b ran twice each, interleaved: the comparison starts before a's latest run (3),
    /// not before b's (4), which would leave a's night out.
    @Test func shardsAreKnownByTheRecordedPathAndByAnOlderMergesName() {
        let byPath = [
            Self.run(1, mergedFrom: #"{"path":"/data/a.sqlite","journal":"a.sqlite"}"#),
            Self.run(2, mergedFrom: #"{"path":"/data/b.sqlite","journal":"b.sqlite"}"#),
            // The same shard, named otherwise by a second merge: the path says it is a.
            Self.run(3, mergedFrom: #"{"path":"/data/a.sqlite","journal":"/data/a.sqlite"}"#),
            Self.run(4, mergedFrom: #"{"path":"/data/b.sqlite","journal":"b.sqlite"}"#),
        ]
        #expect(ChangeRange.defaultEarlier(runs: byPath, later: 4) == 2)
        // A merge older than the recorded path named its shards only.
        let byName = [
            Self.run(1, mergedFrom: #"{"journal":"a.sqlite"}"#), Self.run(2, mergedFrom: #"{"journal":"b.sqlite"}"#),
            Self.run(3, mergedFrom: #"{"journal":"a.sqlite"}"#), Self.run(4, mergedFrom: #"{"journal":"b.sqlite"}"#),
        ]
        #expect(ChangeRange.defaultEarlier(runs: byName, later: 4) == 2)
        // Up to run 3 only: b's latest is 2, a's is 3.
        #expect(ChangeRange.defaultEarlier(runs: byName, later: 3) == 1)
    }
}
