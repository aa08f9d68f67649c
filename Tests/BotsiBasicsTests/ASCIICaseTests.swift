import BotsiBasics
import Testing

@Suite struct ASCIICaseTests {
    @Test func onlyTheASCIICapitalsChange() {
        for byte in UInt8.min...UInt8.max {
            let expected = (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
            #expect(ASCIICase.lowercased(byte) == expected, "byte \(byte)")
        }
    }

    @Test func textKeepsEveryOtherCharacterAndItsLength() {
        #expect(ASCIICase.lowercased("PROFILE_ID") == "profile_id")
        #expect(ASCIICase.lowercased("OriginalTransactionId@[`{") == "originaltransactionid@[`{")
        // Not Unicode case folding: the dotted capital I and Ä stay as they are.
        #expect(ASCIICase.lowercased("İÄ-Z") == "İÄ-z")
    }
}
