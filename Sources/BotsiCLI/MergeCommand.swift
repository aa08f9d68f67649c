import BotsiJournal
import BotsiRestore
import Foundation

/// `botsi-restore merge OUT.sqlite SHARD.sqlite...`: one journal from the shards' journals, for
/// `report`, `runs` and `status`.
enum MergeCommand {
    static let spec = CommandSpec(name: "merge", options: [.flag("--help")], takesPositionals: true)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.merge)
            return ExitCode.success
        }
        guard parsed.positionals.count >= 2 else {
            throw UsageError(message: "name the new journal, then one or more shard journals")
        }
        let output = parsed.positionals[0]
        let shards = Array(parsed.positionals.dropFirst())
        do {
            let summary = try Journal.merge(shards: shards, into: output)
            var line =
                "merged \(shards.count) journals into \(output): \(summary.runs) runs, \(summary.items) rows, "
                + "\(summary.attempts) attempts, \(summary.rejections) rejected input rows"
            if summary.pairsInSeveralShards > 0 {
                line += "; \(summary.pairsInSeveralShards) pairs were in more than one shard (the latest record kept)"
            }
            Output.error(line)
            Output.error("see it with: botsi-restore report --journal \(output) --format table")
            return ExitCode.success
        } catch {
            Output.error("botsi-restore merge: \(error.description)")
            if case .locked = error { return ExitCode.temporaryFailure }
            return ExitCode.cannotCreate
        }
    }
}
