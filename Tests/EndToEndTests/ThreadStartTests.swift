import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

/// Under an address-space limit too small for a thread's stack, Dispatch retried its thread
/// forever and the run hung, deaf to SIGTERM (issue 20, item 3: `ulimit -v 100000`, one copy ran
/// 11 minutes). The tool now asks once, first, whether a thread can start, and exits 71 saying
/// which limits to change.
@Suite struct ThreadStartTests {
    @Test func aThreadStartsUnderTheUsualLimits() {
        #expect(ThreadStart.problem() == nil)
    }

    @Test(.disabled(if: Sanitizer.isActive, "a sanitizer's shadow memory does not fit a lowered RLIMIT_AS"))
    func noRoomForAThreadsStackIsSaidInProcess() async {
        await #expect(processExitsWith: .exitCode(71), observing: [\.standardErrorContent]) {
            // Less than a thread's 8 MiB stack left.
            ResourceLimits.leaveAddressSpace(2 << 20)
            guard let problem = ThreadStart.problem() else { exit(0) }
            FileHandle.standardError.write(Data(problem.utf8))
            exit(71)
        }
    }

    @Test(.disabled(if: Sanitizer.isActive, "a sanitizer's shadow memory does not fit a lowered RLIMIT_AS"))
    func aRunUnderUlimitVExits71NamingTheLimitInsteadOfHanging() throws {
        let workspace = Workspace()
        let input = workspace.csv(rows: [("p1", "2000000000000002")])
        let child = try Child(
            ["run", input, "--journal", workspace.journal, "--base-url", "http://127.0.0.1:9"], key: "k",
            in: workspace, launcher: ["/usr/bin/prlimit", "--as=100000000", "--"])
        let ended = child.wait(timeout: 30)
        #expect(!ended.timedOut, "hung under the limit: \(ended.stderr)")
        #expect(ended.status == 71, "stderr: \(ended.stderr)")
        #expect(ended.stderr.contains("cannot start a thread") && ended.stderr.contains("ulimit -v"), "\(ended.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.journal), "nothing was opened before the check")
    }
}
