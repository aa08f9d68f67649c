import BotsiBasics
import Foundation
import Testing

@Suite struct VisibleTextTests {
    /// The first look (`mayContainActive`, and the byte tables built from `mayStartActive`) must
    /// never let an active scalar through: every one of them, checked against the table.
    @Test func everyActiveScalarStartsWithAByteTheTableFlags() {
        var missing: [String] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value), VisibleText.isActive(scalar) else { continue }
            let lead = Array(String(scalar).utf8)[0]
            if !VisibleText.mayStartActive[Int(lead)] { missing.append(VisibleText.describe(scalar)) }
        }
        #expect(missing.isEmpty, "lead bytes missing for \(missing.prefix(10))")
    }

    @Test func invisibleMeansFormatSeparatorsAndDefaultIgnorables() {
        for value: UInt32 in [
            0x00AD, 0x034F, 0x061C, 0x180E, 0x200B, 0x200E, 0x200F, 0x202A, 0x202E, 0x2028, 0x2029, 0x2060, 0x2066,
            0x2069, 0xFE0F, 0xFEFF, 0x3164, 0xE0001, 0xE0041, 0xE007F, 0xE0100,
        ] {
            let scalar = Unicode.Scalar(value)!
            #expect(VisibleText.isInvisible(scalar) && VisibleText.isActive(scalar), "\(VisibleText.describe(scalar))")
        }
        for text in ["a", " ", "é", "\u{00A0}", "\u{3000}", "漢", "😀", "🏽", "𝔘", "\u{0301}"] {
            let scalar = text.unicodeScalars.first!
            #expect(!VisibleText.isActive(scalar), "\(VisibleText.describe(scalar))")
        }
    }

    @Test func escapesAreVisibleAndValidJSONEscapes() throws {
        #expect(VisibleText.escaped("a\u{1B}b\u{200E}c\u{E0041}") == #"a\u001Bb\u200Ec\uDB40\uDC41"#)
        #expect(VisibleText.escaped("ok\tline\n", keeping: [.tab, .lineFeed]) == "ok\tline\n")
        let json = "\"" + VisibleText.escaped("x\u{200F}\u{E0100}y") + "\""
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed) as? String
        #expect(decoded == "x\u{200F}\u{E0100}y")
        #expect(JSONString.quoted("x\u{061C}\u{E0041}") == #""x\u061c\udb40\udc41""#)
        #expect(VisibleText.describe("\u{200B}") == "U+200B ZERO WIDTH SPACE")
        #expect(VisibleText.describe("\u{E0FFF}") == "U+E0FFF")
    }

    @Test func quotedAndOneLineKeepTheirRules() {
        #expect(VisibleText.quoted("a\u{1B}b") == #"'a\u001Bb'"#)
        #expect(VisibleText.quoted(String(repeating: "z", count: 70)) == "'" + String(repeating: "z", count: 64) + "…'")
        #expect(VisibleText.oneLine("a\r\nb\u{85}c\u{200B}") == "a  b c\u{200B}")
        #expect(VisibleText.oneLine(String(repeating: "y", count: 600)) == String(repeating: "y", count: 500) + "…")
    }

    /// At the limit exactly nothing is cut, so no ellipsis; one scalar more and it is cut there.
    @Test func aValueIsCutOnlyPastItsLimit() {
        let atLimit = String(repeating: "é", count: 64)
        #expect(VisibleText.quoted(atLimit) == "'" + atLimit + "'")
        #expect(VisibleText.quoted(atLimit + "z") == "'" + atLimit + "…'")
        let line = String(repeating: "y", count: 500)
        #expect(VisibleText.oneLine(line) == line)
        #expect(VisibleText.oneLine(line + "z") == line + "…")
        #expect(VisibleText.oneLine("") == "")
    }
}
