import Foundation
import Testing

@testable import BotsiInput

/// Ids holding characters that print as nothing made separate pairs that looked identical (issue
/// 20, item 5): `c1`, `c\u{200B}1`, `c\u{200E}1`… were six requests and six `restored` rows, one
/// "conflict group" whose rows all read `c1`. Every reader rejects them now, naming the code point.
@Suite struct InvisibleCharacterTests {
    /// One of every class the issue names, and the name the message gives it.
    static let invisible: [(scalar: String, named: String)] = [
        ("\u{200B}", "U+200B ZERO WIDTH SPACE"), ("\u{200C}", "U+200C ZERO WIDTH NON-JOINER"),
        ("\u{200D}", "U+200D ZERO WIDTH JOINER"), ("\u{200E}", "U+200E LEFT-TO-RIGHT MARK"),
        ("\u{200F}", "U+200F RIGHT-TO-LEFT MARK"), ("\u{202E}", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u{2066}", "U+2066 LEFT-TO-RIGHT ISOLATE"), ("\u{2060}", "U+2060 WORD JOINER"),
        ("\u{FEFF}", "U+FEFF ZERO WIDTH NO-BREAK SPACE"), ("\u{061C}", "U+061C ARABIC LETTER MARK"),
        ("\u{00AD}", "U+00AD SOFT HYPHEN"), ("\u{180E}", "U+180E MONGOLIAN VOWEL SEPARATOR"),
        ("\u{034F}", "U+034F COMBINING GRAPHEME JOINER"), ("\u{E0041}", "U+E0041 TAG LATIN CAPITAL LETTER A"),
        ("\u{E007F}", "U+E007F CANCEL TAG"), ("\u{2028}", "U+2028 LINE SEPARATOR"),
        ("\u{2029}", "U+2029 PARAGRAPH SEPARATOR"), ("\u{FE0F}", "U+FE0F VARIATION SELECTOR-16"),
        ("\u{E0100}", "U+E0100 VARIATION SELECTOR-17"), ("\u{3164}", "U+3164 HANGUL FILLER"),
    ]

    /// The same two rows in every reader: `c<invisible>1` on line 2, plain `c1` on line 3.
    static func inputs(_ invisible: String) -> [(name: String, bytes: [UInt8])] {
        let id = "c\(invisible)1"
        let escaped = id.unicodeScalars.map { $0.isASCII ? String($0) : JSONEscape.of($0) }.joined()
        return [
            ("in.csv", Array("profileId,originalTransactionId\n\(id),2000\nc1,2000\n".utf8)),
            ("in.txt", Array("profile_id;original_transaction_id\n\(id);2000\nc1;2000\n".utf8)),
            ("in.tsv", Array("profileId\toriginalTransactionId\n\(id)\t2000\nc1\t2000\n".utf8)),
            (
                "in.jsonl",
                Array(
                    "{\"profileId\":\"\(id)\",\"originalTransactionId\":\"2000\"}\n{\"profileId\":\"c1\",\"originalTransactionId\":2000}\n"
                        .utf8)
            ),
            (
                "escaped.jsonl",
                Array(
                    "{\"profileId\":\"\(escaped)\",\"originalTransactionId\":\"2000\"}\n{\"profileId\":\"c1\",\"originalTransactionId\":2000}\n"
                        .utf8)
            ),
            (
                "in.json",
                Array(
                    "[\n{\"profileId\":\"\(escaped)\",\"originalTransactionId\":2000},\n{\"profileId\":\"c1\",\"originalTransactionId\":2000}]"
                        .utf8)
            ),
            ("utf16le.csv", EncodingTests.utf16("profileId,originalTransactionId\r\n\(id),2000\r\nc1,2000\r\n")),
            (
                "utf16be.csv",
                EncodingTests.utf16("profileId,originalTransactionId\r\n\(id),2000\r\nc1,2000\r\n", bigEndian: true)
            ),
        ]
    }

    @Test(arguments: 0..<invisible.count)
    func anIdHoldingAnInvisibleCharacterIsRejectedNamingItInEveryReader(_ index: Int) throws {
        let (scalar, named) = Self.invisible[index]
        for (name, bytes) in Self.inputs(scalar) {
            for readLimit in [Int.max, 3] {
                let (records, _) = try readBytes(bytes, name: name, readLimit: readLimit)
                try #require(records.count == 2, "\(name): \(records)")
                let rejected = try #require(records[0].asRejected, "\(name) \(named): accepted as \(records[0])")
                #expect(rejected.reason == .invalidProfileId, "\(name)")
                #expect(rejected.line == (name.hasSuffix(".jsonl") ? 1 : 2), "\(name)")
                #expect(
                    rejected.message.contains("contains \(named), an invisible character"),
                    "\(name): \(rejected.message)")
                // The message shows it escaped; the raw value is kept as read.
                #expect(!rejected.message.unicodeScalars.contains(scalar.unicodeScalars.first!), "\(name)")
                #expect(rejected.profileId == "c\(scalar)1", "\(name)")
                #expect(records[1].asRow?.profileId == "c1", "\(name)")
            }
        }
    }

    @Test(arguments: 0..<invisible.count)
    func aTransactionIdHoldingOneSaysWhichInsteadOfJustNotDigits(_ index: Int) throws {
        let (scalar, named) = Self.invisible[index]
        let text = "profileId,originalTransactionId\np,20\(scalar)00\n"
        let (records, _) = try readBytes(Array(text.utf8), name: "in.csv")
        let rejected = try #require(records.first?.asRejected, "\(records)")
        #expect(rejected.reason == .invalidTransactionId)
        #expect(rejected.message.contains("contains \(named), an invisible character"), "\(rejected.message)")
    }

    @Test func ordinaryLettersSpacesAndEmojiStayValid() throws {
        for id in ["müller", "漢字", "Zoë-🎉", "a b", "a\u{00A0}b", "カタカナ", "👍🏽", "𝔘"] {
            let (records, _) = try readBytes(
                Array("profileId,originalTransactionId\n\(id),2000\n".utf8), name: "in.csv")
            #expect(records.first?.asRow?.profileId == id, "\(id): \(records)")
        }
    }

    /// `cat a.csv b.csv` of exports with a byte-order mark each: the second mark begins a line in
    /// the middle of the file and was read as part of that row's first id.
    @Test func aByteOrderMarkAtTheStartOfALineIsNotPartOfTheId() throws {
        let bom = "\u{FEFF}"
        let cases: [(String, [UInt8], InputOptions)] = [
            ("in.csv", Array("p1,2001\n\(bom)p2,2002\n\(bom)\(bom)p3,2003\n".utf8), Self.noHeader),
            ("in.csv", Array("profileId,originalTransactionId\np1,2001\n\(bom)p2,2002\n\(bom)p3,2003".utf8), .init()),
            (
                "in.jsonl",
                Array(
                    "{\"profileId\":\"p1\",\"originalTransactionId\":2001}\n\(bom){\"profileId\":\"p2\",\"originalTransactionId\":2002}\r\n\(bom){\"profileId\":\"p3\",\"originalTransactionId\":2003}\n"
                        .utf8), .init()
            ),
            (
                "in.csv",
                EncodingTests.utf16("profileId,originalTransactionId\r\np1,2001\r\n\(bom)p2,2002\r\n\(bom)p3,2003\r\n"),
                .init()
            ),
        ]
        for (name, bytes, options) in cases {
            for readLimit in [Int.max, 1, 2, 4] {
                let (records, _) = try readBytes(bytes, name: name, options: options, readLimit: readLimit)
                #expect(
                    records.map { $0.asRow?.profileId } == ["p1", "p2", "p3"], "\(name) by \(readLimit): \(records)")
            }
        }
        // Anywhere else it is an invisible character like any other.
        let (records, _) = try readBytes(
            Array("profileId,originalTransactionId\n p\(bom)1,2001\n".utf8), name: "in.csv")
        #expect(records.first?.asRejected?.reason == .invalidProfileId)
    }

    static let noHeader: InputOptions = {
        var options = InputOptions()
        options.hasHeader = false
        return options
    }()
}

enum JSONEscape {
    /// `\uXXXX` (a UTF-16 pair beyond U+FFFF), as a JSON export writes a character.
    static func of(_ scalar: Unicode.Scalar) -> String {
        String(scalar).utf16.map { "\\u" + String(format: "%04X", $0) }.joined()
    }
}
