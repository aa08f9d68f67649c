import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
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

    /// The issue's reproduction: a host name read from the journal (written by whatever process
    /// recorded the run) was printed raw. `status` of a run that never ended, as text and as JSON.
    @Test func aRecordedHostIsShownEscaped() throws {
        let workspace = Workspace()
        let journal = try Journal(path: workspace.journal)
        try journal.transaction { () throws(JournalError) in
            _ = try journal.startRun(
                startedAt: Date(), toolVersion: "0.1.0", host: Self.hostile, pid: 4242, optionsJSON: "{}")
        }
        journal.close()
        for extra in [[], ["--format", "json"]] {
            let finished = try botsi(["status", "--journal", workspace.journal] + extra, key: nil, in: workspace)
            #expect(finished.status == 0, "stderr: \(finished.stderr)")
            let shown = finished.stdout + finished.stderr
            if !extra.isEmpty {
                #expect(shown.contains("4242"), "the run's pid is still named: \(shown)")
                #expect(shown.contains(#"\u001B]0;owned\u0007"#) || shown.contains(#"\u001b]0;owned"#), "\(shown)")
            }
            Self.expectNoRawControls(shown, "status \(extra)")
        }
    }

    @Test func fileNamesInErrorsAreShownEscaped() throws {
        let workspace = Workspace()
        let finished = try botsi(
            ["run", workspace.file("in\(Self.hostile).csv"), "--journal", workspace.journal, "--dry-run"], key: "k",
            in: workspace)
        #expect(finished.status == 66, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(#"in\u001B]0;owned\u0007\u001B[2J\u202Etxt.exe\u009B1m.csv"#))
        Self.expectNoRawControls(finished.stderr, "stderr")
    }
}
