import Testing

@testable import BotsiInput

/// RFC 4648 as receipts (standard, wrapped) and signed transactions (base64url, bare) write it.
@Suite struct Base64Tests {
    func decode(_ text: String, _ alphabet: Base64.Alphabet = .standard) -> [UInt8]? {
        let bytes = Array(text.utf8)
        let decoded = bytes.withUnsafeBufferPointer { Base64.decode($0, alphabet: alphabet) }
        let valid = bytes.withUnsafeBufferPointer { Base64.isValid($0, alphabet: alphabet) }
        #expect(valid == (decoded != nil), "isValid agrees with decode on \(text.debugDescription)")
        return decoded
    }

    @Test func paddingIsOptionalButMustBeRight() {
        #expect(decode("QQ==") == Array("A".utf8))
        #expect(decode("QQ") == Array("A".utf8))
        #expect(decode("QUI=") == Array("AB".utf8))
        #expect(decode("QUI") == Array("AB".utf8))
        #expect(decode("QUJD") == Array("ABC".utf8))
        #expect(decode("QUJDREVGRw") == Array("ABCDEFG".utf8))
        #expect(decode("") == [])
        for wrong in ["QQ=", "QUI==", "QQ===", "QQ======", "QQ=A", "QQ==QUJD", "QUJDR", "Q", "="] {
            #expect(decode(wrong) == nil, "\(wrong)")
        }
    }

    @Test func eachAlphabetHasItsOwnTwoLastDigits() {
        #expect(decode("+/8=") == [0xFB, 0xFF])
        #expect(decode("-_8=", .url) == [0xFB, 0xFF])
        #expect(decode("-_8=") == nil)
        #expect(decode("+/8=", .url) == nil)
        #expect(decode("AAEC", .url) == [0, 1, 2])
    }

    @Test(arguments: [" ", "\t", "\n", "\u{0B}", "\u{0C}", "\r"])
    func receiptsMayBeWrappedByAnyASCIISpaceButSignedTransactionsNot(space: String) {
        #expect(decode("QU\(space)JD\(space)") == Array("ABC".utf8))
        #expect(decode("QU\(space)JD", .url) == nil)
    }

    @Test func otherControlCharactersAreNotSpaces() {
        for byte in [0x00, 0x08, 0x0E, 0x1F, 0x7F] {
            #expect(decode("QU" + String(UnicodeScalar(UInt8(byte))) + "JD") == nil, "byte \(byte)")
        }
    }
}
