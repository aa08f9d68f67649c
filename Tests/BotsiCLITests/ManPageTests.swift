import Foundation
import Testing

@testable import BotsiCLI

/// The manual comes from the table: every option of every command is in it, and the checked-in
/// copy is what the table says today (scripts/docs.sh regenerates it).
@Suite struct ManPageTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/botsi-restore.1").path

    @Test func theCheckedInPageIsCurrent() throws {
        let checkedIn = try String(contentsOfFile: Self.page, encoding: .utf8)
        #expect(checkedIn == ManPage.roff(), "docs/botsi-restore.1 is stale: run 'bash scripts/docs.sh' and commit it")
    }

    @Test func everyCommandOptionAndJobKeyIsInThePage() {
        let roff = ManPage.roff()
        for command in CLI.commands {
            #expect(roff.contains(".SS \"\(ManPage.text(command.name))"), "no section for \(command.name)")
            for spec in command.optionSpecs {
                #expect(roff.contains("\\fB\(ManPage.text(spec.long))\\fR"), "\(command.name) \(spec.long) is missing")
                if let key = spec.jobKey.name { #expect(roff.contains(".B \(key)\n"), "job key \(key) is missing") }
            }
        }
    }

    @Test func textIsEscapedForRoff() {
        #expect(ManPage.text(".starts a request") == "\\&.starts a request")
        #expect(ManPage.text("a\\b --x") == "a\\eb \\-\\-x")
        #expect(ManPage.text("é — x") == "\\[u00E9] \\[u2014] x")
    }
}
