import BotsiSimulator
import Foundation
import Testing

/// Everything the tool prints for people goes through one choke point that shows control
/// characters and bidi overrides as visible escapes, whatever the text came from.
@Suite("no raw terminal escapes on stderr")
struct TerminalEscapeTests {
    static let hostile = "\u{1B}]0;owned\u{07}\u{1B}[2J\u{202E}txt.exe\u{9B}1m"

    static func expectNoRawControls(_ text: String, _ context: String) {
        let raw = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }
        #expect(raw.isEmpty, "\(context) carries raw controls \(raw.map { $0.value }): \(text.debugDescription)")
        #expect(!text.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0 == "\u{202E}" }, "\(context)")
    }

    /// The issue's reproduction: the lock holder's host is read from the lock file, which another
    /// process wrote, and was printed raw in "in use by another run".
    @Test func theLockHoldersHostIsShownEscaped() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let lockPath = workspace.journal + ".lock"
        let holder = #"{"pid":4242,"host":"\#(Self.jsonEscaped(Self.hostile))","startedAt":"2026-01-01T00:00:00Z"}"#
        try holder.write(toFile: lockPath, atomically: false, encoding: .utf8)
        let descriptor = open(lockPath, O_RDWR | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let input = workspace.csv(Pair.generate(3))
        for extra in [[], ["--log-format", "json"]] {
            let finished = try botsi(
                runArguments([input], workspace, simulator, extra), key: Simulator.defaultKey, in: workspace)
            #expect(finished.status == 75, "stderr: \(finished.stderr)")
            #expect(finished.stderr.contains("4242"), "the holder is still named: \(finished.stderr)")
            #expect(finished.stderr.contains(#"\u001B]0;owned\u0007"#) || finished.stderr.contains(#"\u001b]0;owned"#))
            Self.expectNoRawControls(finished.stderr, "stderr \(extra)")
        }
    }

    @Test func fileNamesInErrorsAreShownEscaped() throws {
        let workspace = Workspace()
        let finished = try botsi(
            ["run", workspace.file("in\(Self.hostile).csv"), "--journal", workspace.journal, "--dry-run"], key: nil,
            in: workspace)
        #expect(finished.status == 66, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(#"in\u001B]0;owned\u0007\u001B[2J\u202Etxt.exe\u009B1m.csv"#))
        Self.expectNoRawControls(finished.stderr, "stderr")
    }

    private static func jsonEscaped(_ text: String) -> String {
        text.unicodeScalars.map { $0.value < 0x20 ? String(format: "\\u%04x", $0.value) : String($0) }.joined()
    }
}
