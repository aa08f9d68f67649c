import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Transactions claimed by several profiles (issue 10), with the real binary and the simulator:
/// the summary's counts, `report --conflicts`, `--on-conflict hold` and `--release-held`.
@Suite("transactions claimed by several profiles, end to end")
struct ConflictTests {
    /// Transaction ...02 is claimed by three profiles (one of them a spreadsheet formula), ...04 by
    /// two; ...03 by one.
    static let input = """
        profileId,originalTransactionId
        p-a,2000000000000002
        p-c,2000000000000003
        =HYPERLINK(1),2000000000000002
        p-d,2000000000000004
        p-e,2000000000000004
        p-b,2000000000000002

        """

    static let later = [
        Pair("=HYPERLINK(1)", "2000000000000002"), Pair("p-e", "2000000000000004"),
        Pair("p-b", "2000000000000002"),
    ]

    private func summary(_ stderr: String) -> [String: Any]? { ModelSequence.summary(stderr) }

    @Test func sendingRestoresEveryClaimAndTheReportListsTheGroups() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.write("in.csv", Self.input)
        let run = try botsi(
            runArguments([input], workspace, simulator, ["--log-format", "json"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(simulator.requestsByPair().count == 6, "send (the default) restores every claim")
        let counts = summary(run.stderr)?["conflicts"] as? [String: Int]
        #expect(counts == ["groups": 2, "rows": 5], "\(run.stderr)")
        let message = summary(run.stderr)?["message"] as? String ?? ""
        #expect(message.contains("transactions claimed by several profiles: 2 (5 rows in the journal)"), "\(message)")
        #expect(message.contains("--conflicts"))

        let csv = try botsi(
            ["report", "--journal", workspace.journal, "--conflicts", "--format", "csv"], key: nil, in: workspace)
        #expect(csv.status == 0, "stderr: \(csv.stderr)")
        let table = parseCSV(csv.stdout)
        #expect(
            table.first == [
                "originalTransactionId", "profiles", "claim", "profileId", "status", "code", "attempts", "firstSource",
                "lastSource", "updatedAt",
            ])
        let body = Array(table.dropFirst())
        #expect(
            body.map { $0[0] } == Array(repeating: "2000000000000002", count: 3) + [
                "2000000000000004", "2000000000000004",
            ])
        #expect(
            body.map { $0[3] } == ["p-a", "'=HYPERLINK(1)", "p-b", "p-d", "p-e"], "a formula is defused: \(csv.stdout)")
        #expect(body.map { $0[2] } == ["1", "2", "3", "1", "2"])
        #expect(body.map { $0[1] } == ["3", "3", "3", "2", "2"])
        #expect(body.allSatisfy { $0[4] == "restored" })
        #expect(body.map { $0[8] } == ["\(input):2", "\(input):4", "\(input):7", "\(input):5", "\(input):6"])

        let jsonl = try botsi(["report", "--journal", workspace.journal, "--conflicts"], key: nil, in: workspace)
        let records = ModelSequence.jsonObjects(jsonl.stdout)
        #expect(records.count == 5)
        #expect(records.first?["profiles"] as? Int == 3 && records.first?["claim"] as? Int == 1)
        #expect(records[1]["profileId"] as? String == "=HYPERLINK(1)", "JSON keeps the id as it is")

        let table2 = try botsi(
            ["report", "--journal", workspace.journal, "--conflicts", "--format", "table"], key: nil, in: workspace)
        #expect(table2.status == 0)
        #expect(table2.stdout.contains("originalTransactionId") && table2.stdout.contains("p-e"))

        let misuse = try botsi(
            ["report", "--journal", workspace.journal, "--conflicts", "--status", "held"], key: nil, in: workspace)
        #expect(misuse.status == 64, "filters do not apply: \(misuse.stderr)")
    }

    @Test func holdingSendsOnlyEachTransactionsFirstClaimUntilReleased() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.write("in.csv", Self.input)
        let rehearsal = try botsi(
            runArguments([input], workspace, simulator, ["--on-conflict", "hold", "--dry-run"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(rehearsal.status == 0, "stderr: \(rehearsal.stderr)")
        #expect(rehearsal.stderr.contains("would send: 3 (3 new, 0 from the journal)"), "\(rehearsal.stderr)")
        #expect(rehearsal.stderr.contains("would hold (transaction claimed by another profile): 3"))
        #expect(rehearsal.stderr.contains("transactions claimed by several profiles: 2 (5 rows in the journal)"))
        #expect(!FileManager.default.fileExists(atPath: workspace.journal), "a dry run writes nothing")
        let held = try botsi(
            runArguments([input], workspace, simulator, ["--on-conflict", "hold", "--log-format", "json"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(held.status == 0, "only held rows unsent: exit 0; stderr: \(held.stderr)")
        let sent = Set(simulator.requestsByPair().keys)
        #expect(
            sent == [Pair("p-a", "2000000000000002"), Pair("p-c", "2000000000000003"), Pair("p-d", "2000000000000004")])
        let statuses = summary(held.stderr)?["statuses"] as? [String: Int]
        #expect(statuses?["held"] == 3 && statuses?["restored"] == 3, "\(held.stderr)")
        let message = summary(held.stderr)?["message"] as? String ?? ""
        #expect(message.contains("held 3 rows"), "\(message)")
        #expect(message.contains("--release-held"))
        let view = try #require(JournalView.read(workspace.journal))
        for pair in Self.later {
            #expect(view.items[pair]?.status == .held)
            #expect(view.items[pair]?.code == "transaction_claimed_by_other_profile")
        }

        // status says what the summary said (a review: it gave no next line for held rows).
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        let next = status.stdout.split(separator: "\n").first { $0.hasPrefix("next ") } ?? ""
        #expect(next.contains("review the 3 held rows (botsi-restore report --journal"), "\(status.stdout)")
        #expect(next.contains("--conflicts), then send them with: botsi-restore run --journal"), "\(next)")
        #expect(next.hasSuffix("--release-held --on-conflict hold --base-url \(simulator.baseURL)"), "\(next)")

        // A plain run leaves held rows: nothing owed, nothing sent.
        let plain = try botsi(runArguments([], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        // It says where they are (a first-day review: "nothing owed", and not a word of them).
        #expect(
            plain.stderr.contains("it holds 3 rows for review (claimed by another profile; not owed)")
                && plain.stderr.contains("--release-held"), "stderr: \(plain.stderr)")
        #expect(simulator.stats().requests == 3)
        // So does the same input again (the pairs are in the journal), and a new claim of a
        // transaction the journal holds is held too.
        let more = workspace.csv([Pair("p-f", "2000000000000003")], name: "more.csv")
        let again = try botsi(
            runArguments([input, more], workspace, simulator, ["--on-conflict", "hold"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(simulator.stats().requests == 3)
        #expect(JournalView.read(workspace.journal)?.items[Pair("p-f", "2000000000000003")]?.status == .held)

        let report = try botsi(["report", "--journal", workspace.journal, "--conflicts"], key: nil, in: workspace)
        let outcomes = ModelSequence.jsonObjects(report.stdout).map {
            "\($0["profileId"] as? String ?? "")=\($0["status"] as? String ?? "")"
        }
        #expect(
            outcomes == [
                "p-a=restored", "=HYPERLINK(1)=held", "p-b=held", "p-c=restored", "p-f=held", "p-d=restored",
                "p-e=held",
            ])

        // With a row left pending too, status gives its command and still says the held rows wait.
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
        }
        defer { failing.stop() }
        let pendingRow = workspace.csv([Pair("p-g", "2000000000000007")], name: "pending.csv")
        let left = try botsi(
            runArguments([pendingRow], workspace, failing, ["--max-attempts", "1"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(left.status == 75, "stderr: \(left.stderr)")
        let both = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace).stdout
        #expect(both.contains("next      send the 1 pending row with: "), "\(both)")
        #expect(
            both.contains("held      4 rows claimed by another profile wait for review (botsi-restore report --journal")
                && both.contains("--conflicts); then send them with: botsi-restore run --journal"), "\(both)")

        // After review: --release-held sends them (and the pending row: owed to every run).
        let release = try botsi(
            runArguments([], workspace, simulator, ["--release-held"]), key: Simulator.defaultKey, in: workspace)
        #expect(release.status == 0, "stderr: \(release.stderr)")
        #expect(simulator.stats().requests == 8)
        let after = try #require(JournalView.read(workspace.journal))
        for pair in Self.later + [Pair("p-f", "2000000000000003")] {
            #expect(after.items[pair]?.status == .restored, "\(pair)")
        }
    }

    /// A first-day review: `--on-conflict hold` on shards restored one transaction for two profiles,
    /// each shard seeing its own claim first. Said at the start, also under --quiet; not unsharded.
    @Test func holdOnAShardSaysItSeesThatShardOnly() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.write("in.csv", Self.input)
        let shard = try botsi(
            runArguments([input], workspace, simulator, ["--on-conflict", "hold", "--shard", "0/2", "--quiet"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(shard.status == 0, "stderr: \(shard.stderr)")
        #expect(shard.stderr.contains("--on-conflict hold sees this shard's journal only"), "\(shard.stderr)")
        let other = Workspace()
        let alone = try botsi(
            runArguments([input], other, simulator, ["--on-conflict", "hold"]), key: Simulator.defaultKey, in: other)
        #expect(alone.status == 0 && !alone.stderr.contains("shard's journal only"), "\(alone.stderr)")
    }
}
