import BotsiJournal
import Foundation

/// Hands a run the rows its journal owes, oldest first, a batch at a time so that a journal of
/// millions of owed rows never sits in memory. What is owed comes from the lifecycle table
/// (`OutcomePolicy.owedSelection`); rows of other shards are passed over here.
struct OwedRowFeeder {
    static let batchSize = 256

    private let selection: OwedSelection
    private let mode: OutcomePolicy.RunMode
    private let runID: Int64
    private var after: Int64 = 0
    private var batch: [OwedRow] = []
    private var position = 0
    private(set) var isDone = false
    /// Owed rows passed over as another shard's: an earlier run of the journal split the job
    /// another way (or not at all), and no run with this shard sends them.
    private(set) var ofOtherShards = 0

    init(mode: OutcomePolicy.RunMode, runID: Int64, startedAt: Date) {
        self.mode = mode
        self.runID = runID
        selection = OutcomePolicy.owedSelection(mode: mode, now: startedAt)
    }

    /// The next owed row of this run's shard, nil once there is none.
    mutating func next(from journal: Journal) throws(JournalError) -> OwedRow? {
        while !isDone {
            if position == batch.count {
                batch = try journal.owedRows(after: after, limit: Self.batchSize, selection: selection, runID: runID)
                position = 0
                guard let last = batch.last else {
                    isDone = true
                    return nil
                }
                after = last.itemID
            }
            let row = batch[position]
            position += 1
            if mode.owns(profileId: row.profileID) { return row }
            ofOtherShards += 1
        }
        return nil
    }

    /// How many owed rows of this run's shard it has not handed out: what a run that stopped
    /// first leaves for the next one. Counted by the journal, or read when the run is sharded (the
    /// shard is a hash of the profile id); only a stop pays for it.
    mutating func remaining(in journal: Journal) throws(JournalError) -> Int {
        guard !isDone else { return 0 }
        guard mode.shardCount <= 1 else {
            var count = 0
            while try next(from: journal) != nil { count += 1 }
            return count
        }
        let inBatch = batch.count - position
        return inBatch + (try journal.owedRowCount(after: after, selection: selection, runID: runID))
    }
}
