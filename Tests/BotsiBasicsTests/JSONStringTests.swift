import BotsiBasics
import Foundation
import Testing

@Suite struct JSONStringTests {
    @Test func plainTextIsOnlyQuoted() {
        #expect(JSONString.quoted("fff3c120") == #""fff3c120""#)
        #expect(JSONString.quoted("") == #""""#)
        #expect(JSONString.quoted("café €5 😀") == "\"café €5 😀\"")
    }

    @Test func quotesBackslashesAndControlsUseJSONsEscapes() {
        #expect(JSONString.quoted(#"a"b\c"#) == #""a\"b\\c""#)
        #expect(
            JSONString.quoted("line\nbreak\ttab\r\u{0}\u{1F}\u{7F}\u{8}\u{C}")
                == #""line\nbreak\ttab\r\u0000\u001f\u007f\b\f""#)
    }

    /// What a terminal would act on (C1 controls, bidi overrides and isolates) and what breaks
    /// JavaScript (U+2028, U+2029) never appears raw, in a report or anywhere else.
    @Test func terminalAndJavaScriptHazardsAreEscaped() {
        #expect(JSONString.quoted("x\u{1B}]0;owned\u{7}") == #""x\u001b]0;owned\u0007""#)
        #expect(JSONString.quoted("\u{9B}1m\u{202E}txt\u{2066}") == #""\u009b1m\u202etxt\u2066""#)
        #expect(JSONString.quoted("a\u{2028}b\u{2029}") == #""a\u2028b\u2029""#)
    }

    @Test func bytesAndTextAgreeAndRoundTrip() throws {
        let samples = ["plain", "q\"b\\", "ctl\u{1}\u{7F}\u{85}", "bidi\u{202A}\u{2069}", "ls\u{2028}", "€\u{E000}😀"]
        for sample in samples {
            var bytes: [UInt8] = [UInt8(ascii: "[")]
            JSONString.append(sample, to: &bytes)
            #expect(String(decoding: bytes.dropFirst(), as: UTF8.self) == JSONString.quoted(sample))
            bytes.append(UInt8(ascii: "]"))
            let decoded = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String]
            #expect(decoded == [sample])
            #expect(!JSONString.quoted(sample).unicodeScalars.contains { VisibleText.isActive($0) })
        }
    }

    /// Each scalar that is escaped, alone, first and last in otherwise plain text: the check that
    /// lets plain text through unescaped must never let one of them through.
    @Test func everyEscapedScalarIsEscapedWherever() throws {
        let escaped: [Unicode.Scalar] =
            (0..<0x20).compactMap(Unicode.Scalar.init) + ["\"", "\\", "\u{7F}"]
            + (0x80...0x9F).compactMap(Unicode.Scalar.init)
            + ["\u{202A}", "\u{202E}", "\u{2066}", "\u{2069}", "\u{2028}", "\u{2029}"]
        for scalar in escaped {
            for sample in ["\(scalar)", "\(scalar)plain", "plain text\(scalar)"] {
                let quoted = JSONString.quoted(sample)
                #expect(quoted != "\"\(sample)\"", "U+\(scalar.value) went through unescaped")
                let decoded = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
                #expect(decoded == [sample])
            }
        }
    }

    /// Bytes read from outside are written as their String would be: plain ones copied, escapes
    /// escaped, and bytes that are not UTF-8 repaired as `String(decoding:)` repairs them.
    @Test(
        arguments: [
            [], Array("plain-id_2000000000000002".utf8), Array("é€ ü".utf8), Array("a\"b\\c\n".utf8),
            [0x41, 0x1B, 0x5B], [0xC2, 0x9B], [0xE2, 0x80, 0xAE], [0xE2, 0x80, 0xA8], [0x7F],
            [0x41, 0xFF, 0x42], [0xC0, 0xAF], [0xE2, 0x82], [0x80], [0xC3], [0xED, 0xA0, 0x80], [0x00, 0x41],
        ] as [[UInt8]])
    func bytesAreWrittenAsTheirStringIs(_ sample: [UInt8]) {
        var fromBytes: [UInt8] = []
        sample.withUnsafeBufferPointer { JSONString.append(utf8: $0, to: &fromBytes) }
        var fromString: [UInt8] = []
        JSONString.append(String(decoding: sample, as: UTF8.self), to: &fromString)
        #expect(fromBytes == fromString)
        #expect(String(validating: fromBytes, as: UTF8.self) != nil)
    }
}
