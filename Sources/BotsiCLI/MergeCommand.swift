import BotsiBasics
import BotsiFiles
import BotsiJournal
import BotsiRestore
import Foundation

/// `botsi-restore merge OUT.sqlite SHARD.sqlite...`: one journal from the shards' journals, for
/// `report`, `runs` and `status`.
enum MergeCommand: Command {
    static let name = "merge"
    static let summary = "combine shard journals into a new one"
    static let synopsis = "OUT SHARD ..."
    static let discussion = """
        Combines the journals of sharded runs (run --shard I/N, each with its own journal) into a new
        journal OUT for report, runs and status. OUT must not exist. Runs are renumbered by start time
        and note their source journal in their options (mergedFrom); a pair found in several shards
        keeps the record updated last. Refuses a shard a live run still holds (exit 75).
        """

    static func initialSettings() -> [String] { [] }

    static func run(_ paths: [String]) throws -> Int32 {
        guard paths.count >= 2 else {
            throw UsageError(message: "name the new journal, then one or more shard journals")
        }
        let output = paths[0]
        let shards = Array(paths.dropFirst())
        // A stop while the merged journal is written leaves no half-written file behind.
        TemporaryFiles.removeOnStop()
        do {
            let summary = try Journal.merge(shards: shards, into: output)
            var line =
                "merged \(shards.count) journals into \(output): \(Basics.count(summary.runs, "run", "runs")), "
                + "\(Basics.count(summary.items, "row", "rows")), \(Basics.count(summary.attempts, "attempt", "attempts")), "
                + Basics.count(summary.rejections, "rejected input row", "rejected input rows")
            if summary.pairsInSeveralShards > 0 {
                line +=
                    "; \(summary.pairsInSeveralShards == 1 ? "1 pair was" : "\(summary.pairsInSeveralShards) pairs were") in more than one shard (the latest record kept, "
                    + "a final one over any that owes the row)"
            }
            Output.error(line)
            Output.error("see it with: " + RunAdvice.reportCommand(journalPath: output, ["--format", "table"]))
            return ExitCode.success
        } catch {
            // The half-written output is gone (under its temporary name, which no one typed): a
            // full disk is the merge's to say, not a journal's "outcomes committed are safe".
            if case .diskFull = error {
                Output.errorLine(
                    "botsi-restore merge: the disk holding \(output) is full; nothing was merged and nothing is "
                        + "left behind, the shards are unchanged — free space (or give another path) and merge again")
                return error.exitCode
            }
            Output.errorLine("botsi-restore merge: \(error.description)")
            return error.exitCode
        }
    }
}
