import Testing

@testable import BotsiInput

/// Decoding a JSON string's content as the readers do for a field with escapes: every escape
/// JSON has, surrogate pairs joined, and an unpaired surrogate turned into a byte no UTF-8
/// check accepts, so that the field is refused rather than changed.
@Suite struct JSONStringsTests {
    /// The decoded bytes, copied while the scratch buffer that holds them is alive. A small
    /// buffer, so that growing it is part of every case.
    private func decoded(_ content: String) -> [UInt8] {
        let scratch = ScratchBuffer(capacity: 4)
        return withExtendedLifetime(scratch) {
            Array(content.utf8).withUnsafeBufferPointer { Array(JSONStrings.decode($0, into: scratch)) }
        }
    }

    @Test func everyTwoCharacterEscapeIsItsByte() {
        #expect(decoded(#"a\"b\\c\/d\be\ff\ng\rh\ti"#) == Array("a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti".utf8))
        #expect(decoded("plain é") == Array("plain é".utf8))
    }

    /// Hex digits in either case, every digit's value: `\u0009`, `\u00e9`, `\u00E9`, `\u20AC`, `\u7fFf`.
    @Test func aUnicodeEscapeIsItsScalarInUTF8() {
        #expect(decoded(#"\u0009\u0041\u00e9\u00E9\u20AC\u7fFf\u0123"#) == Array("\tAéé€\u{7FFF}\u{123}".utf8))
        #expect(decoded(#"\u00bA\u00cD"#) == Array("\u{BA}\u{CD}".utf8))
    }

    @Test func aSurrogatePairIsOneScalar() {
        #expect(decoded(#"\uD83D\uDE00"#) == Array("😀".utf8))
        #expect(decoded(#"\uD800\uDC00"#) == Array("\u{10000}".utf8))
        #expect(decoded(#"\uDBFF\uDFFF!"#) == Array("\u{10FFFF}!".utf8))
    }

    /// An unpaired surrogate becomes 0xFF, and what follows it is decoded as it would be anyway.
    @Test func anUnpairedSurrogateBecomesAByteNoUTF8CheckAccepts() {
        #expect(decoded(#"\uD83D"#) == [0xFF])
        #expect(decoded(#"\uD83Dx"#) == [0xFF, 0x78])
        #expect(decoded(#"\uDBFF\u0041"#) == [0xFF, 0x41])
        #expect(decoded(#"\uDE00"#) == [0xFF])
        #expect(decoded(#"\uDC00a"#) == [0xFF, 0x61])
        #expect(decoded(#"\uDFFF"#) == [0xFF])
        // What follows a high surrogate pairs with it only as a \u escape of a low one.
        #expect(decoded(#"\uD83D\nDE00"#) == [0xFF, 0x0A] + Array("DE00".utf8))
        #expect(decoded(#"\uD83DxuDE00"#) == [0xFF] + Array("xuDE00".utf8))
    }

    /// Content the scanner did not check (never given, but never read past): a backslash that
    /// ends it is kept as it is, and a `\u` escape without four hex digits is refused.
    @Test func uncheckedContentIsNeverReadPastNorTakenForAScalar() {
        #expect(decoded(#"a\"#) == Array(#"a\"#.utf8))
        #expect(decoded(#"\u12"#) == [0xFF] + Array("12".utf8), "a \\u escape cut short is no scalar")
    }

    @Test func hexValuesCoverEveryDigit() {
        let digits = Array("0123456789abcdefABCDEF".utf8)
        #expect(digits.map { JSONStrings.hexValue($0) } == (0...15).map(UInt32.init) + (10...15).map(UInt32.init))
        #expect([UInt8]("/:@G`g".utf8).allSatisfy { JSONStrings.hexValue($0) == nil })
    }
}
