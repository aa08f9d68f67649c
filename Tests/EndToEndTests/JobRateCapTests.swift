import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// A shard's share of `--job-rate` is a cap as `--rate` is, and shows as one: an operator review
/// found a `--shard 0/2 --job-rate 100` run paced at ~49/s while its journal's samples held no
/// limit, its metrics file had no `botsi_restore_send_rate_limit_requests_per_second`, its page
/// said "no rate cap" and "rate limit none", and its progress line named no cap.
@Suite("the --job-rate cap, shown")
struct JobRateCapTests {
    @Test func aShardsShareOfTheJobRateIsRecordedAndShownAsItsLimit() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let metricsFile = workspace.file("job.prom")
        // 40/s for the job, 20/s for this shard of two: ~150 rows take over the 5 s between the
        // journal's pacer samples.
        let finished = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(300))], workspace, simulator,
                [
                    "--shard", "0/2", "--job-rate", "40", "--metrics-file", metricsFile, "--log-interval", "0.5s",
                ]),
            key: Simulator.defaultKey, in: workspace, timeout: 120)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")

        // The journal's pacer samples hold the share as the limit in force.
        let limits = try JournalTables.rows(workspace.journal, "SELECT send_rate_limit FROM run_samples")
        try #require(!limits.isEmpty, "the run took no pacer sample")
        #expect(limits.allSatisfy { $0.first.flatMap { $0.flatMap(Double.init) } == 20 }, "samples: \(limits)")

        // The metrics file has the gauge, at the share.
        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        #expect(
            MetricsTests.value(of: "botsi_restore_send_rate_limit_requests_per_second", in: text) == 20, "\(text)")

        // The progress lines name the cap.
        let progress = finished.stderr.split(separator: "\n").filter { $0.contains(" progress: ") }
        try #require(!progress.isEmpty, "no progress line: \(finished.stderr)")
        #expect(progress.allSatisfy { $0.contains("rate cap 20.0/s") }, "\(progress)")

        // The page: the run history says the rate, the chart's table the limit.
        let page = workspace.file("page.html")
        let report = try botsi(
            ["report", "--journal", workspace.journal, "--format", "html", "--output", page], key: nil, in: workspace)
        #expect(report.status == 0, "stderr: \(report.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("rate 20/s · concurrency"), "the run history names no rate")
        #expect(!html.contains("no rate cap"))
        // A row of the pace chart's table: the interval's time, the rate sent, the limit, the concurrency.
        let limitCell = #"UTC</td><td class="num">[0-9.,]+</td><td class="num">20</td><td class="num">\d+</td></tr>"#
        #expect(html.range(of: limitCell, options: .regularExpression) != nil, "the chart's table shows no limit")
    }
}
