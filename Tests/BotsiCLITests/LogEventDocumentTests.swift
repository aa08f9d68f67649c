import BotsiBasics
import BotsiRestore
import Foundation
import Testing

@testable import BotsiCLI

/// docs/metrics.md names every field the JSON log events carry: a reviewer found the summary's
/// fields pointed at a command that does not show them.
@Suite struct LogEventDocumentTests {
    static let section: String = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/metrics.md").path
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.components(separatedBy: "## Log events").dropFirst().first ?? ""
    }()

    @Test func everySummaryFieldIsDocumented() throws {
        var summary = RunSummary()
        summary.stopCause = .signal
        summary.stopMessage = "stopped"
        summary.stoppedAt = "2026-12-06T00:00:00.000Z"
        summary.nextCommand = "botsi-restore run --journal j.sqlite"
        let data = try JSONEncoder().encode(summary)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let keys = Set(object.keys).union(["event", "journal", "message", "time"])
        let missing = keys.filter { !Self.section.contains("`\($0)`") }.sorted()
        #expect(missing.isEmpty, "docs/metrics.md does not name: \(missing)")
    }

    @Test func everyProgressFieldIsDocumented() {
        var progress = ProgressLineTests.busy(slow: 2)
        progress.longestWait = 12
        let keys = Set(ProgressPrinter.fields(progress).keys)
        let missing = keys.filter { !Self.section.contains("`\($0)`") }.sorted()
        #expect(!keys.isEmpty && missing.isEmpty, "docs/metrics.md does not name: \(missing)")
    }
}
