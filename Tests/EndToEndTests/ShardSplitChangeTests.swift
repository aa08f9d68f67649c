import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A journal whose runs split the job one way (`--shard 0/2`), then another (`--shard 0/4`): the
/// rows it owes that the new split gives to other shards are never sent by a run with its
/// `--shard`. The run, `status` and the page say so and give the command that sends them (a chaos
/// review: the run exited 0 saying nothing, and status advised the same `--shard 0/4` again).
@Suite("a shard count changed between runs")
struct ShardSplitChangeTests {
    @Test func rowsOwedToOtherShardsAreNamedWithTheCommandThatSendsThem() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let input = workspace.csv(Pair.generate(40))
        let journal = workspace.journal
        let pending = "SELECT count(*) FROM items WHERE status = (SELECT id FROM statuses WHERE name = 'pending')"
        // Shard 0 of 2 leaves every row of its own pending.
        let first = try botsi(
            runArguments([input], workspace, failing, ["--shard", "0/2", "--max-attempts", "1"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 75, "stderr: \(first.stderr)")
        let second = try botsi(
            runArguments([input], workspace, simulator, ["--shard", "0/4", "--job-rate", "400"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        // 0/4 takes only rows of 0/2: nothing finished elsewhere is sent again, and no warning says so.
        #expect(!second.stderr.contains("takes rows of other shards"), "\(second.stderr)")
        let left = Int(try JournalTables.rows(journal, pending).first?.first.flatMap { $0 } ?? "") ?? 0
        #expect(left > 0, "the 0/4 split sent every row 0/2 owed: the test proves nothing")
        #expect(
            second.stderr.contains("  owed by the journal to other shards, not sent: \(left)\n"), "\(second.stderr)")
        let words =
            "the journal owes \(left) rows of other shards than this run's (an earlier run split the job another "
            + "way, or not at all), which no run with its --shard sends: send them with: "
        let line = second.stderr.split(separator: "\n").first { $0.hasPrefix(words) }.map(String.init) ?? ""
        let command = String(line.dropFirst(words.count))
        #expect(command.hasPrefix("botsi-restore run --journal \(journal) "), "\(second.stderr)")
        // No input and no --shard; this shard's share of the job's rate.
        #expect(
            !command.contains("--shard") && !command.contains(input) && command.contains("--rate 100"), "\(command)")

        let status = try botsi(["status", "--journal", journal], key: nil, in: workspace)
        #expect(status.stdout.contains("shards    the journal owes \(left) rows of other shards than its latest run's"))
        #expect(status.stdout.contains("send them with: \(command)\n"), "\(status.stdout)")
        #expect(!status.stdout.contains("send the \(left) pending rows"), "\(status.stdout)")
        let json = try botsi(["status", "--journal", journal, "--format", "json"], key: nil, in: workspace)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["otherShardsPending"] as? Int == left)
        let page = try botsi(
            ["report", "--journal", journal, "--format", "html", "--output", workspace.file("page.html")], key: nil,
            in: workspace)
        #expect(page.status == 0, "stderr: \(page.stderr)")
        #expect(workspace.text("page.html")?.contains(command) == true)

        // The command, typed as given, sends them all.
        let before = simulator.stats().requests
        let typed = try botsi(
            command.split(separator: " ").dropFirst().map(String.init), key: Simulator.defaultKey, in: workspace)
        #expect(typed.status == 0, "stderr: \(typed.stderr)")
        #expect(simulator.stats().requests - before == left)
        #expect(try JournalTables.rows(journal, pending) == [["0"]])
    }

    /// Four shards become two: each new shard takes rows that other shards' journals finished,
    /// which this journal does not know; the run says so before it sends them again (an operator
    /// review: 2,000 of 4,000 pairs restored twice, told only by a later merge).
    @Test func aSplitThatTakesOtherShardsRowsIsWarnedOf() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(40))
        let first = try botsi(
            runArguments([input], workspace, simulator, ["--shard", "1/4"]), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let second = try botsi(
            runArguments([input], workspace, simulator, ["--shard", "1/2", "--quiet"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(
            second.stderr.contains(
                "botsi-restore: warning: journal \(workspace.journal)'s latest run (run 1) was --shard 1/4; this run, "
                    + "--shard 1/2, takes rows of other shards of that split: those finished in their own journals are "
                    + "not known here and are sent again"), "\(second.stderr)")
        // 0/4 after 1/2: more shards, but none of its rows were 1/2's.
        let third = try botsi(
            runArguments([input], workspace, simulator, ["--shard", "0/4", "--quiet"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(third.stderr.contains("was --shard 1/2; this run, --shard 0/4, takes rows"), "\(third.stderr)")
        // Unsharded after a shard: the same.
        let fourth = try botsi(
            runArguments([input], workspace, simulator, ["--quiet"]), key: Simulator.defaultKey, in: workspace)
        #expect(fourth.stderr.contains("was --shard 0/4; this run, without --shard, takes rows"), "\(fourth.stderr)")
    }
}
