import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `merge` keeps the lifecycle's rule: a final row changes only by a new definitive answer, never
/// by a later record that owes it, and counts a copied journal's shared history once (issue 20,
/// item 1), through the built binary.
@Suite("merge never regresses a final row")
struct MergeFinalRowTests {
    private func statuses(_ journal: String, in workspace: Workspace) throws -> [String: Int] {
        let status = try botsi(["status", "--journal", journal, "--format", "json"], key: nil, in: workspace)
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        return try #require(object["statuses"] as? [String: Int], "\(status.stdout)")
    }

    @Test func aLaterPendingCopyDoesNotReplaceARestoredRow() throws {
        let workspace = Workspace()
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let good = try startSimulator()
        defer { good.stop() }
        let input = workspace.csv(rows: (0..<20).map { ("merge-\($0)", "\(2_000_000_000_000_000 + $0)") })
        let a = workspace.file("a.sqlite")
        let b = workspace.file("b.sqlite")
        func run(_ journal: String, against simulator: Simulator, _ inputs: [String]) throws -> Int32 {
            try botsi(
                ["run"] + inputs + [
                    "--journal", journal, "--base-url", simulator.baseURL, "--max-attempts", "1", "--quiet",
                ], key: Simulator.defaultKey, in: workspace
            ).status
        }
        #expect(try run(a, against: failing, [input]) == 75, "every row left pending")
        try FileManager.default.copyItem(atPath: a, toPath: b)
        #expect(try run(a, against: good, []) == 0)
        #expect(try run(b, against: failing, []) == 75, "B's pending records are the later ones")
        #expect(try statuses(b, in: workspace)["pending"] == 20)

        // A name with a space: the command merge gives to look at it works as typed.
        let merged = workspace.file("merged night.sqlite")
        let merge = try botsi(["merge", merged, a, b], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        #expect(
            merge.stderr.contains("see it with: botsi-restore report --journal '\(merged)' --format table"),
            "stderr: \(merge.stderr)")
        let finished = try statuses(merged, in: workspace)
        #expect(finished["pending"] ?? 0 == 0, "a later pending record replaced a final one: \(finished)")
        #expect(finished.values.reduce(0, +) == 20, "\(finished)")
        // Every request the servers saw, once: the history A and B share from before the copy is
        // one run (the same uid in both), not two.
        let sent = failing.stats().requests + good.stats().requests
        let counted = try SQLiteTool.execute(
            merged, "SELECT count(*) FROM attempts; SELECT sum(attempts) FROM items; SELECT count(*) FROM runs")
        #expect(counted.split(separator: "\n") == ["\(sent)", "\(sent)", "3"], "servers saw \(sent) requests")

        // Nothing is owed, so a plain run on the merged journal sends nothing again.
        let before = good.stats().requests
        #expect(try run(merged, against: good, []) == 0)
        #expect(good.stats().requests == before, "the merged journal resent finished rows")
    }

    /// A shard whose export broke exits 65; another shard's run, ending later with 0, is the
    /// merged journal's latest. `status` and the page of the merged journal still name the broken
    /// shard and what its own `status` says (a first-day review: they said nothing was owed).
    @Test func theMergedStatusNamesAShardThatExited65() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let broken = workspace.csv(
            "broken.csv", rows: [("p-sheet-1", "2.00000000000001E+15"), ("p-sheet-2", "2.00000000000002E+15")])
        let a = workspace.file("a.sqlite")
        let b = workspace.file("b.sqlite")
        // B's earlier run was fine: its latest one is what counts.
        let earlier = try botsi(
            ["run", workspace.csv(Pair.generate(2, prefix: "b0"), name: "b0.csv"), "--journal", b]
                + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
        #expect(earlier.status == 0, "stderr: \(earlier.stderr)")
        let first = try botsi(
            ["run", workspace.csv(Pair.generate(3, prefix: "b"), name: "b.csv"), broken, "--journal", b]
                + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 65, "stderr: \(first.stderr)")
        let second = try botsi(
            ["run", workspace.csv(Pair.generate(3, prefix: "a"), name: "a.csv"), "--journal", a]
                + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, b, a], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let status = try botsi(["status", "--journal", merged], key: nil, in: workspace)
        #expect(
            status.stdout.contains(
                "broken    shard \(b)'s latest run exited 65: fix or re-export \(broken): every row of it was rejected "
                    + "(botsi-restore report --journal \(b) --status rejected)"), "status: \(status.stdout)")
        #expect(!status.stdout.contains("shard \(a)'s"), "status: \(status.stdout)")
        let page = try botsi(
            ["report", "--journal", merged, "--format", "html", "--output", workspace.file("page.html")], key: nil,
            in: workspace)
        #expect(page.status == 0, "stderr: \(page.stderr)")
        #expect(workspace.text("page.html")?.contains("latest run exited 65: fix or re-export") == true)
    }

    /// The same broken shard beside another shard's rows still owed: the page's one next step
    /// said only to send those rows, and left the broken export out (a diff review).
    @Test func theMergedPageNamesABrokenShardBesideRowsStillOwed() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let broken = workspace.csv("broken.csv", rows: [("p-sheet-1", "2.00000000000001E+15")])
        let a = workspace.file("a.sqlite")
        let b = workspace.file("b.sqlite")
        let first = try botsi(
            ["run", workspace.csv(Pair.generate(2, prefix: "b"), name: "b.csv"), broken, "--journal", b]
                + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 65, "stderr: \(first.stderr)")
        // A's run, the merged journal's latest, leaves its rows pending.
        let second = try botsi(
            ["run", workspace.csv(Pair.generate(2, prefix: "a"), name: "a.csv"), "--journal", a]
                + ["--base-url", failing.baseURL, "--quiet", "--max-attempts", "1"], key: Simulator.defaultKey,
            in: workspace)
        #expect(second.status == 75, "stderr: \(second.stderr)")
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged, b, a], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let page = try botsi(
            ["report", "--journal", merged, "--format", "html", "--output", workspace.file("page.html")], key: nil,
            in: workspace)
        #expect(page.status == 0, "stderr: \(page.stderr)")
        let html = workspace.text("page.html") ?? ""
        #expect(
            html.contains(
                "shard b.sqlite&#39;s latest run exited 65 on a broken input (its status says what to fix); "
                    + "send the 2 pending rows"), "page: \(html)")
    }

    /// The page of a merged journal counts the rows that changed as `report --changes` does: from
    /// before each shard's latest run (an operator review: it compared the latest run with the
    /// run before it, another shard's, and counted one shard's rows).
    @Test func theMergedPageCountsChangesAsReportChangesDoes() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        var shards: [String] = []
        for (index, count) in [3, 4].enumerated() {
            let shard = workspace.file("s\(index).sqlite")
            let rows = workspace.csv(Pair.generate(count, prefix: "s\(index)"), name: "s\(index).csv")
            let run = try botsi(
                ["run", rows, "--journal", shard, "--base-url", simulator.baseURL, "--quiet"],
                key: Simulator.defaultKey, in: workspace)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            shards.append(shard)
        }
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged] + shards, key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let changes = try botsi(
            ["report", "--journal", merged, "--changes", "--format", "jsonl"], key: nil, in: workspace)
        #expect(changes.stdout.split(separator: "\n").count == 7, "\(changes.stdout)")
        let page = try botsi(
            ["report", "--journal", merged, "--format", "html", "--output", workspace.file("page.html")], key: nil,
            in: workspace)
        #expect(page.status == 0, "stderr: \(page.stderr)")
        #expect(
            workspace.text("page.html")?.contains("Rows that changed in run 2 against run 0: 7") == true,
            "\(workspace.text("page.html") ?? "")")
    }

    /// A merge into a disk that fills: exit 73, the merge's own words (it named its temporary file
    /// and said "outcomes already committed are safe — run again to continue"), nothing left there.
    @Test(.canMountTmpfs) func aMergeIntoAFullDiskSaysSoAndLeavesNothing() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        var shards: [String] = []
        for name in ["a", "b"] {
            let journal = workspace.file("\(name).sqlite")
            let run = try botsi(
                ["run", workspace.csv(Pair.generate(2000, prefix: name), name: "\(name).csv"), "--journal", journal]
                    + ["--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey, in: workspace)
            #expect(run.status == 0, "\(run.stderr)")
            shards.append(journal)
        }
        let disk = try Tmpfs(at: workspace.file("disk"), sizeKiB: 256)
        defer { disk.unmount() }
        let output = disk.path + "/merged.sqlite"
        let merge = try botsi(["merge", output] + shards, key: nil, in: workspace)
        #expect(merge.status == 73, "\(merge.stderr)")
        #expect(merge.stderr.contains("the disk holding \(output) is full; nothing was merged"), "\(merge.stderr)")
        #expect(!merge.stderr.contains("run again to continue"), "\(merge.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).isEmpty, "left behind")
    }

    /// A merge stopped by SIGTERM while it wrote the new journal left its hidden temporary file and
    /// its -wal and -shm beside the output (2.8 MB a time), though the docs promise nothing is left
    /// behind. Now the stop removes them and ends the process by the signal (as a shell loop expects);
    /// a SIGINT ignored when merge started (a script's background job) stays ignored.
    @Test func aMergeStoppedBySIGTERMLeavesNothingBehind() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(rows: (0..<10_000).map { ("stop-\($0)", "\(2_100_000_000_000_000 + $0)") })
        let a = workspace.file("a.sqlite")
        let b = workspace.file("b.sqlite")
        let run = try botsi(
            ["run", input, "--journal", a, "--base-url", simulator.baseURL, "--quiet"], key: Simulator.defaultKey,
            in: workspace)
        #expect(run.status == 0, "\(run.stderr)")
        try FileManager.default.copyItem(atPath: a, toPath: b)
        let output = workspace.file("merged.sqlite")
        func leftovers() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: workspace.path)) ?? []).filter {
                $0.hasPrefix(".merged.sqlite.")
            }
        }
        // Started with SIGINT ignored, as a script's background job is: that one must not stop it.
        let merge = try Child(
            ["merge", output, a, b], key: nil, in: workspace,
            launcher: ["/bin/sh", "-c", "trap '' INT; exec \"$0\" \"$@\""])
        // Stopped once the temporary journal exists: the stop must find it, whatever it holds yet.
        let seen = eventually(timeout: 30) { !leftovers().isEmpty || !merge.isRunning }
        try #require(seen && merge.isRunning, "the merge ended before its temporary file was seen")
        merge.send(SIGINT)
        #expect(!merge.hasExited(within: 0.05) || merge.wait().status == 0, "an ignored SIGINT stopped the merge")
        merge.send(SIGTERM)
        let finished = merge.wait()
        if finished.killedBySignal || finished.status != 0 {
            #expect(finished.killedBySignal && finished.status == SIGTERM, "\(finished.stderr)")
            #expect(leftovers().isEmpty, "left behind: \(leftovers())")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }

    /// The same shard named twice was refused with exit 73 and advice to check the directory's
    /// permissions: it is a mistake on the command line (64), whatever name the second time.
    @Test func aShardNamedTwiceIsAUsageError() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let a = workspace.file("a.sqlite")
        let run = try botsi(
            ["run", workspace.csv(Pair.generate(3, prefix: "twice")), "--journal", a, "--base-url", simulator.baseURL],
            key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "\(run.stderr)")
        symlink(a, workspace.file("again.sqlite"))
        for second in [a, workspace.file("again.sqlite")] {
            let merge = try botsi(["merge", workspace.file("m.sqlite"), a, second], key: nil, in: workspace)
            #expect(merge.status == 64, "\(merge.stderr)")
            #expect(merge.stderr.contains("is named twice") && !merge.stderr.contains("permissions"), "\(merge.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.file("m.sqlite")))
    }

    /// `status` and the page of a merged journal name each shard's latest run beside the journal's
    /// latest, one shard's (an operator review: its `run` and `this run` lines read as the whole job's, and a
    /// shard that stopped with rows owed showed nowhere).
    @Test func theMergedStatusAndPageNameTheLatestRunOfEachShard() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let input = workspace.csv(Pair.generate(10))
        let shards = [workspace.file("s0.sqlite"), workspace.file("s1.sqlite")]
        for (index, server) in [failing, simulator].enumerated() {
            let run = try botsi(
                ["run", input, "--journal", shards[index], "--shard", "\(index)/2", "--base-url", server.baseURL]
                    + ["--quiet", "--max-attempts", "1"], key: Simulator.defaultKey, in: workspace)
            #expect(run.status == (index == 0 ? 75 : 0), "stderr: \(run.stderr)")
        }
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(["merge", merged] + shards, key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let text = try botsi(["status", "--journal", merged], key: nil, in: workspace)
        let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("merged ") }.map(String.init) ?? ""
        #expect(line.contains("from 2 shard journals"), "status: \(text.stdout)")
        #expect(line.contains("s0.sqlite run 1 (finished, exit 75)"), "status: \(text.stdout)")
        #expect(line.contains("s1.sqlite run 2 (finished, exit 0)"), "status: \(text.stdout)")
        #expect(line.hasSuffix("are run 2's alone"), "status: \(text.stdout)")
        let json = try botsi(["status", "--journal", merged, "--format", "json"], key: nil, in: workspace)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let shardRuns = try #require(object["mergedShards"] as? [[String: Any]], "\(json.stdout)")
        #expect(shardRuns.map { $0["latestRun"] as? Int } == [1, 2])
        #expect(shardRuns.map { $0["exitCode"] as? Int } == [75, 0])
        #expect(shardRuns.map { ($0["journal"] as? String)?.hasSuffix("s0.sqlite") } == [true, false])
        // The page says the same of its latest run, by the shards' file names.
        let page = try botsi(
            ["report", "--journal", merged, "--format", "html", "--output", workspace.file("page.html")], key: nil,
            in: workspace)
        #expect(page.status == 0, "stderr: \(page.stderr)")
        let html = workspace.text("page.html") ?? ""
        #expect(
            html.contains(
                "<dd data-fact=\"shards\">merged from 2 shard journals; the latest run of each: s0.sqlite run 1 "
                    + "(finished, exit 75), s1.sqlite run 2 (finished, exit 0). The latest run below is one shard"),
            "page: \(html)")
        // A journal no merge made has no such line and no such field.
        let single = try botsi(["status", "--journal", shards[1], "--format", "json"], key: nil, in: workspace)
        #expect(!single.stdout.contains("mergedShards"), "\(single.stdout)")
    }
}
