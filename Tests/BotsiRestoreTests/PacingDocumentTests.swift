import Foundation
import Testing

@testable import BotsiRestore

/// docs/pacing.md's table of constants is the code's: every `RateController.Tuning` default and
/// every static constant the pacing uses is listed there with the value in force.
@Suite struct PacingDocumentTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/pacing.md")

    /// The rows "| `name` | value | reason |" of the section "## Constants".
    static func documented() throws -> [String: Double] {
        let text = try String(contentsOf: document, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Constants").dropFirst().first)
        var values: [String: Double] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let value = Double(cells[1]) else { continue }
            values[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = value
        }
        return values
    }

    static func inCode() -> [String: Double] {
        var values: [String: Double] = [:]
        for child in Mirror(reflecting: RateController.Tuning()).children {
            guard let label = child.label else { continue }
            switch child.value {
            case let number as Double: values[label] = number
            case let whole as Int: values[label] = Double(whole)
            default: values[label] = .nan
            }
        }
        values["unavailableBurst"] = Double(RateController.unavailableBurst)
        values["unavailableShare"] = RateController.unavailableShare
        values["unavailableBackoff"] = RateController.unavailableBackoff
        values["resetRise"] = StatedWindow.resetRise
        values["allowedLag"] = Pacer.allowedLag
        return values
    }

    @Test func everyConstantIsDocumentedWithTheValueInForce() throws {
        let documented = try Self.documented()
        let code = Self.inCode()
        for (name, value) in code.sorted(by: { $0.key < $1.key }) {
            #expect(documented[name] == value, "docs/pacing.md: `\(name)` is \(value) in the code")
        }
        for name in documented.keys.sorted() where code[name] == nil {
            Issue.record("docs/pacing.md lists `\(name)`, which the code does not have")
        }
    }
}
