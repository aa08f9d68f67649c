import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("report, end to end")
struct ReportTests {
    /// A mixed run: restored, nothing_to_restore, an unknown profile, and three rows the input checks
    /// refuse (lines 5, 6 and 7 of in.csv).
    static let mixedInput = """
        profileId,originalTransactionId
        p-restored,2000000000000002
        p-nothing,2000000000000010
        unknown-profile,2000000000000004
        ,2000000000000006
        p-letters,12ab
        p-sheet,2.00000000000001E+15
        p-restored-2,2000000000000008

        """

    /// Issue 19, item 15: a receipt the checks refused put 257 characters of base64 in the
    /// transaction column; the report keeps its opening, the file and line say where the rest is.
    @Test func aRejectedReceiptShowsOnlyItsOpeningInTheTransactionColumn() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let receipt = String(repeating: "MIIT8wYJKoZIhvcNAQcCoIIT5DCCE+ACAQExCzAJBgUrDgMCGgUA", count: 20) + "!"
        let input = workspace.write("in.csv", "profileId,receipt\np-receipt,\(receipt)\n")
        let run = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 65, "its one row rejected; stderr: \(run.stderr)")
        let csv = try botsi(
            ["report", "--journal", workspace.journal, "--format", "csv", "--columns", "originalTransactionId,source"],
            key: nil, in: workspace)
        let rows = parseCSV(csv.stdout).dropFirst()
        #expect(rows.count == 1, "\(csv.stdout)")
        let shown = rows.first?.first ?? ""
        #expect(shown.hasPrefix("MIIT8wYJ") && shown.count <= 25, "\(shown)")
        #expect(rows.first?.last?.hasSuffix("in.csv:2") == true, "\(csv.stdout)")
    }

    /// Two shards, two nights each, merged: the shards' runs interleave by start time, so the run
    /// before the latest is the other shard's second night. `--changes` compares from before each
    /// shard's latest run: both shards' new rows of the second night, and nothing of the first
    /// (it listed only the last shard's).
    @Test func changesOfAMergedJournalCoverEveryShardsLatestRun() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let first = Pair.generate(40)
        let added = Array(Pair.generate(80).dropFirst(40))
        let nights = [workspace.csv(first, name: "night1.csv"), workspace.csv(first + added, name: "night2.csv")]
        for night in nights {
            for shard in 0..<2 {
                let run = try botsi(
                    [
                        "run", night, "--journal", workspace.file("s\(shard).sqlite"), "--base-url", simulator.baseURL,
                        "--shard", "\(shard)/2",
                    ], key: Simulator.defaultKey, in: workspace)
                #expect(run.status == 0, "stderr: \(run.stderr)")
            }
        }
        let merged = workspace.file("merged.sqlite")
        let merge = try botsi(
            ["merge", merged, workspace.file("s0.sqlite"), workspace.file("s1.sqlite")], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let report = try botsi(
            ["report", "--journal", merged, "--changes", "--format", "csv", "--columns", "profileId,change"], key: nil,
            in: workspace)
        #expect(report.status == 0, "stderr: \(report.stderr)")
        let lines = parseCSV(report.stdout).dropFirst()
        #expect(Set(lines.map { $0.first ?? "" }) == Set(added.map(\.profileId)), "\(report.stdout)")
        #expect(lines.allSatisfy { ["new", "newly_restored"].contains($0.last ?? "") }, "\(report.stdout)")
        // `--run latest` is the default spelled out: the same comparison.
        let latest = try botsi(
            [
                "report", "--journal", merged, "--changes", "--run", "latest", "--format", "csv", "--columns",
                "profileId,change",
            ],
            key: nil, in: workspace)
        #expect(latest.stdout == report.stdout, "\(latest.stdout)")
    }

    /// A merged journal is a copy: `status` on it advised `run --journal merged.sqlite`, which sent
    /// the rows a stopped shard still owed while that shard's journal kept owing them (its next
    /// run sent them again). It points at the shard journals instead, by absolute paths.
    @Test func statusOfAMergedJournalSendsOwedRowsThroughTheShardJournals() throws {
        let workspace = Workspace()
        let elsewhere = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(20000))
        let full = try botsi(
            ["run", input, "--journal", "s1.sqlite", "--base-url", simulator.baseURL, "--shard", "1/2", "-j", "32"],
            key: Simulator.defaultKey, in: workspace)
        #expect(full.status == 0, "stderr: \(full.stderr)")
        let stopped = try botsi(
            [
                "run", input, "--journal", "s0.sqlite", "--base-url", simulator.baseURL, "--shard", "0/2",
                "--max-duration", "0.3s",
            ],
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let merge = try botsi(["merge", "merged.sqlite", "s0.sqlite", "s1.sqlite"], key: nil, in: workspace)
        #expect(merge.status == 0, "stderr: \(merge.stderr)")
        let status = try botsi(["status", "--journal", workspace.file("merged.sqlite")], key: nil, in: elsewhere)
        let next = try #require(
            status.stdout.split(separator: "\n").first { $0.hasPrefix("next") }, "no advice: \(status.stdout)")
        #expect(!next.contains("botsi-restore run"), "\(next)")
        #expect(
            next.contains("botsi-restore status --journal \(workspace.file("s0.sqlite"))")
                && next.contains("botsi-restore status --journal \(workspace.file("s1.sqlite"))"), "\(next)")
    }

    @Test func csvJSONLinesStatusAndRunFilters() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.write("in.csv", Self.mixedInput)
        let run = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")

        let csv = try botsi(["report", "--journal", workspace.journal, "--format", "csv"], key: nil, in: workspace)
        #expect(csv.status == 0, "stderr: \(csv.stderr)")
        let table = parseCSV(csv.stdout)
        let header = try #require(table.first)
        #expect(
            Array(header.prefix(8)) == [
                "profileId", "originalTransactionId", "status", "code", "httpStatus", "attempts", "source", "updatedAt",
            ])
        let body = table.dropFirst()
        #expect(body.count == 7, "one line per row: \(csv.stdout)")
        #expect(body.allSatisfy { $0.count == header.count }, "ragged CSV: \(csv.stdout)")
        let statusByProfile = Dictionary(body.map { ($0[0], $0[2]) }, uniquingKeysWith: { first, _ in first })
        #expect(statusByProfile["p-restored"] == "restored")
        #expect(statusByProfile["p-nothing"] == "nothing_to_restore")
        #expect(statusByProfile["unknown-profile"] == "profile_not_found")
        #expect(statusByProfile["p-letters"] == "rejected")
        #expect(statusByProfile["p-sheet"] == "rejected")

        let rejected = try botsi(
            ["report", "--journal", workspace.journal, "--status", "rejected"], key: nil, in: workspace)
        #expect(rejected.status == 0, "stderr: \(rejected.stderr)")
        let rejectedRecords = try jsonLines(rejected.stdout)
        let sources = Set(rejectedRecords.compactMap { $0["source"] as? String })
        #expect(sources == ["\(input):5", "\(input):6", "\(input):7"], "sources: \(sources)")
        let codes = Set(rejectedRecords.compactMap { $0["code"] as? String })
        #expect(codes == ["missing_profile_id", "invalid_transaction_id", "scientific_notation"], "codes: \(codes)")

        let jsonl = try botsi(["report", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        #expect(jsonl.status == 0, "stderr: \(jsonl.stderr)")
        let records = try jsonLines(jsonl.stdout)
        #expect(records.count == 7)
        for record in records {
            #expect(Set(header).isSubset(of: Set(record.keys)), "keys differ from the CSV header: \(record.keys)")
            #expect(record.keys.allSatisfy { !$0.contains("_") }, "not camelCase: \(record.keys)")
        }

        // A second run with new rows only: `--run latest` shows just those.
        let more = workspace.csv(Pair.generate(3, prefix: "later"), name: "more.csv")
        let second = try botsi(runArguments([more], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let latest = try botsi(["report", "--journal", workspace.journal, "--run", "latest"], key: nil, in: workspace)
        #expect(latest.status == 0, "stderr: \(latest.stderr)")
        let latestProfiles = try jsonLines(latest.stdout).compactMap { $0["profileId"] as? String }
        #expect(latestProfiles.sorted() == ["later-0", "later-1", "later-2"], "latest: \(latest.stdout)")
        let first = try botsi(["report", "--journal", workspace.journal, "--run", "1"], key: nil, in: workspace)
        #expect(try jsonLines(first.stdout).count == 7, "run 1: \(first.stdout)")
    }

    private func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not a JSON object: \(line)")
        }
    }
}
