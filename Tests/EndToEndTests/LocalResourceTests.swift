import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// What the machine lacks is said as the machine's, not the user's or the server's (issue 20,
/// item 8; issue 18, item 7): the run fits its concurrency to the descriptor limit, and refuses a
/// limit no run fits in, exit 71, naming it.
@Suite(
    "local resources, end to end",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
struct LocalResourceTests {
    /// `run` under `prlimit --nofile=limit` (soft and hard), on a journal of its own.
    private func run(
        _ input: String, journal: String, limit: Int, _ workspace: Workspace, _ simulator: Simulator,
        _ extra: [String] = []
    ) throws -> Finished {
        let arguments =
            [
                "run", input, "--journal", journal, "--base-url", simulator.baseURL, "--timeout", "10",
                "--backoff-base", "0.01", "--backoff-cap", "0.05",
            ] + extra
        let child = try Child(
            arguments, key: Simulator.defaultKey, in: workspace,
            launcher: ["/usr/bin/prlimit", "--nofile=\(limit)", "--"])
        let finished = child.wait(timeout: 60)
        #expect(!finished.timedOut, "--nofile=\(limit) ran past 60 s")
        return finished
    }

    /// The issue's reproduction: `ulimit -n 64` with `-j 256` was "92% of the 1000 rows sent failed …
    /// the service was failing most requests", exit 69, every message "Couldn't connect to server".
    @Test func aRunUnderALowDescriptorLimitFitsItsConcurrencyAndSaysSo() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 20 }
        defer { simulator.stop() }
        let rows = Pair.generate(1000)
        let input = workspace.csv(rows)
        // --quiet too: the run does not do what was asked, which a quiet run must still say.
        let finished = try run(
            input, journal: workspace.journal, limit: 64, workspace, simulator, ["-j", "256", "--quiet"])
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains("may open at most 64 files (ulimit -n)")
                && finished.stderr.contains("instead of --concurrency 256"), "stderr: \(finished.stderr)")
        let notices = finished.stderr.components(separatedBy: "may open at most").count - 1
        #expect(notices == 1, "said \(notices) times: \(finished.stderr)")
        let view = try #require(JournalView.read(workspace.journal))
        #expect(view.items.count == 1000 && view.pairs(where: { $0 == "pending" }).isEmpty)
        let stats = simulator.stats()
        #expect(stats.requests == 1000, "every row once, no retry: \(stats.requests)")
        #expect(stats.maxInFlight <= 10 && stats.maxInFlight > 1, "in flight at most: \(stats.maxInFlight)")
    }

    /// Every limit either runs or is refused up front with 71 naming it: before, a limit near the
    /// edge ended as a "read-only" journal (73), a client failure called a usage error (64), or a run
    /// that waited forever once Dispatch could not get a timer's descriptor.
    @Test func everyDescriptorLimitEitherRunsOrIsRefusedNamingIt() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(5))
        var refused = 0
        for limit in 6...48 {
            let finished = try run(
                input, journal: workspace.file("j\(limit).sqlite"), limit: limit, workspace, simulator)
            #expect([0, 71].contains(finished.status), "--nofile=\(limit): \(finished.stderr)")
            if finished.status == 71 {
                refused += 1
                #expect(
                    finished.stderr.contains("at most \(limit) files (ulimit -n)")
                        && finished.stderr.contains("nothing was sent"), "--nofile=\(limit): \(finished.stderr)")
                #expect(!FileManager.default.fileExists(atPath: workspace.file("j\(limit).sqlite")))
            }
        }
        #expect(refused > 0 && refused < 43, "refused \(refused) of 43 limits")
        #expect(simulator.stats().pairCount == 5)
    }
}
