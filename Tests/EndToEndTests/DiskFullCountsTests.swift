import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A run stopped by a full disk sent requests whose outcomes the journal could not record: its
/// summary, its `runs` line and `status` afterwards give the same number of requests, and say how
/// many of them went unrecorded (an operator's chaos review: the summary counted one request
/// more than `status`). A real tmpfs filled by the real binary.
@Suite("a run stopped by a full disk counts its requests once, everywhere")
struct DiskFullCountsTests {
    @Test(.canMountTmpfs) func theSummaryRunsAndStatusGiveTheSameRequestsAndNameTheUnrecordedOnes() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        // The disk may fill where no reply is lost (a mark's write): then it is filled again.
        var disks: [Tmpfs] = []
        defer { for disk in disks { disk.unmount() } }
        var found: (journal: String, summary: [String: Any], requests: Int, unrecorded: Int)?
        for attempt in 0..<3 where found == nil {
            let disk = try Tmpfs(at: workspace.file("small-\(attempt)"), sizeKiB: 3072, mode: 0o700)
            disks.append(disk)
            let journal = disk.path + "/journal.sqlite"
            let run = try botsi(
                [
                    "run", workspace.csv(Pair.generate(4000)), "--journal", journal, "--base-url", simulator.baseURL,
                    "--log-format", "json",
                ], key: Simulator.defaultKey, in: workspace)
            #expect(run.status == 73, "\(run.stderr)")
            let summary = try #require(ModelSequence.summary(run.stderr), "\(run.stderr)")
            let requests = try #require(summary["requests"] as? Int, "\(summary)")
            let recorded =
                Int(try JournalTables.rows(journal, "SELECT count(*) FROM attempts").first?[0] ?? "") ?? -1
            if requests > recorded { found = (journal, summary, requests, requests - recorded) }
        }
        let (journal, summary, requests, unrecorded) = try #require(found, "the disk never filled with a reply lost")
        #expect(summary["unrecordedRequests"] as? Int == unrecorded, "\(summary)")
        let words = ", \(unrecorded) of them sent but not recorded (the journal failed before"

        let runs = try botsi(["runs", "--journal", journal, "--format", "jsonl"], key: nil, in: workspace)
        #expect(ModelSequence.jsonObjects(runs.stdout).first?["requests"] as? Int == requests, "\(runs.stdout)")
        let status = try botsi(["status", "--journal", journal, "--format", "json"], key: nil, in: workspace)
        let object = try #require(ModelSequence.jsonObjects(status.stdout).first, "\(status.stdout)\(status.stderr)")
        #expect(object["requests"] as? Int == requests, "status: \(status.stdout)")
        #expect(object["unrecordedRequests"] as? Int == unrecorded, "status: \(status.stdout)")
        let text = try botsi(["status", "--journal", journal], key: nil, in: workspace)
        #expect(text.stdout.contains("this run  \(requests) requests\(words)"), "status: \(text.stdout)")

        // The text summary says it as status does.
        let other = try Tmpfs(at: workspace.file("other"), sizeKiB: 3072, mode: 0o700)
        defer { other.unmount() }
        let otherJournal = other.path + "/journal.sqlite"
        let plain = try botsi(
            ["run", workspace.csv(Pair.generate(4000)), "--journal", otherJournal, "--base-url", simulator.baseURL],
            key: Simulator.defaultKey, in: workspace)
        #expect(plain.status == 73, "\(plain.stderr)")
        let firstLine = plain.stderr.split(separator: "\n").first { $0.hasPrefix("run stopped after") } ?? ""
        let said = firstLine.split(separator: " ").firstIndex(of: "requests").flatMap { index in
            Int(firstLine.split(separator: " ")[index - 1])
        }
        let plainRecorded =
            Int(try JournalTables.rows(otherJournal, "SELECT count(*) FROM attempts").first?[0] ?? "") ?? -1
        let plainUnrecorded = (said ?? -1) - plainRecorded
        if plainUnrecorded > 0 {
            #expect(
                firstLine.contains(", \(plainUnrecorded) of them sent but not recorded (the journal failed before"),
                "\(plain.stderr)")
        } else {
            #expect(plainUnrecorded == 0 && !firstLine.contains("not recorded"), "\(plain.stderr)")
        }
    }
}
