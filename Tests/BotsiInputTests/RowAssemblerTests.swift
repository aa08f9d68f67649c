import Foundation
import Testing

@testable import BotsiInput

/// The rows of a record that carries a signed transaction or a receipt instead of (or beside)
/// an original transaction id: which field wins, and what a rejection shows of each.
@Suite struct RowAssemblerTests {
    func fixture(_ name: String) throws -> String { String(decoding: try purchaseFixture(name), as: UTF8.self) }

    /// A signed transaction with `payload` (JSON) in place of a fixture's; the reader does not
    /// check signatures, so the fixture's header and signature do.
    func signed(payload: String) throws -> String {
        let parts = try fixture("jws-production.jws").split(separator: ".")
        let encoded = Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return [String(parts[0]), encoded, String(parts[2])].joined(separator: ".")
    }

    func read(_ text: String, name: String = "rows.csv", options: InputOptions = .init()) throws -> [InputRecord] {
        try readBytes(Array(text.utf8), name: name, options: options).records
    }

    // MARK: which field gives the id

    @Test func aTransactionFieldOfBlanksLeavesTheIdToTheSignedTransaction() throws {
        let records = try read(
            "profileId,originalTransactionId,signedTransaction\np1,  ,\(try fixture("jws-production.jws"))\n")
        #expect(records == [row("p1", "2000000600000011", line: 2)])
    }

    @Test func anOriginalTransactionIdOfTheWrongTypeStillWinsAndIsRejected() throws {
        // The user's own id is what they meant, even when it is not usable: the proof beside it
        // is not read in its place.
        let jws = try fixture("jws-production.jws")
        let records = try read(
            "{\"profileId\":\"p1\",\"originalTransactionId\":true,\"signedTransaction\":\"\(jws)\"}\n",
            name: "rows.jsonl")
        #expect(records.first?.asRejected?.reason == .invalidTransactionId)
        #expect(records.first?.asRejected?.originalTransactionId == "true")
    }

    @Test func aProofThatIsNotAStringIsRejectedAsThatProof() throws {
        let records = try read(
            "{\"profileId\":\"p1\",\"signedTransaction\":true}\n{\"profileId\":\"p2\",\"receipt\":{\"data\":\"x\"}}\n",
            name: "rows.jsonl")
        #expect(records.count == 2)
        #expect(records[0].asRejected?.reason == .invalidSignedTransaction)
        #expect(records[0].asRejected?.message == "signedTransaction must be a string (a JWS).")
        #expect(records[1].asRejected?.reason == .invalidReceipt)
        #expect(records[1].asRejected?.message == "receipt must be a string (base64).")
    }

    // MARK: what a rejection shows

    @Test func aBadProfileBesideAProofKeepsTheProfileAsRead() throws {
        let records = try read(
            "{\"profileId\":true,\"signedTransaction\":\"\(try fixture("jws-production.jws"))\"}\n", name: "rows.jsonl")
        let rejected = try #require(records.first?.asRejected)
        #expect(rejected.reason == .invalidProfileId)
        #expect(rejected.profileId == "true")
        #expect(rejected.originalTransactionId?.hasPrefix("eyJ") == true)
    }

    @Test func anIdFromAProofIsShownCutLikeAnyValue() throws {
        let long = String(repeating: "x", count: 300)
        let records = try read(
            "profileId,signedTransaction\np1,\(try signed(payload: "{\"originalTransactionId\":\"\(long)\"}"))\n")
        let rejected = try #require(records.first?.asRejected)
        #expect(rejected.reason == .invalidSignedTransaction)
        #expect(rejected.originalTransactionId == String(repeating: "x", count: 256) + "…")
    }

    @Test func aReceiptIdThatIsNotDigitsIsShownAndAWrongBundleShowsTheReceiptsOpening() throws {
        let letters = try read("profileId,receipt\np1,\(try fixture("receipt-id-letters.b64"))\n")
        #expect(letters.first?.asRejected?.reason == .invalidReceipt)
        #expect(letters.first?.asRejected?.originalTransactionId == "TX-2000000600000156")
        let other = try read(
            "profileId,receipt\np2,\(try fixture("receipt-other-bundle.b64"))\n",
            options: InputOptions(bundleId: "com.example.botsi"))
        #expect(other.first?.asRejected?.reason == .wrongBundleId)
        // The receipt gave no id that was sent, so its opening says which one it was.
        let receipt = try fixture("receipt-other-bundle.b64")
        #expect(other.first?.asRejected?.originalTransactionId == String(receipt.prefix(24)) + "…")
    }

    // MARK: bundle and environment

    @Test func aSignedTransactionThatNamesNoBundleOrEnvironmentFailsTheOptionsThatAskForThem() throws {
        let bare = try signed(payload: "{\"originalTransactionId\":\"2000000600000200\"}")
        let input = "profileId,signedTransaction\np1,\(bare)\n"
        let bundle = try read(input, options: InputOptions(bundleId: "com.example.botsi"))
        #expect(bundle.first?.asRejected?.reason == .wrongBundleId)
        #expect(
            bundle.first?.asRejected?.message
                == "signedTransaction names no bundle id, not 'com.example.botsi' (--bundle-id).")
        #expect(bundle.first?.asRejected?.originalTransactionId == "2000000600000200")
        let environment = try read(input, options: InputOptions(environment: .production))
        #expect(environment.first?.asRejected?.reason == .wrongEnvironment)
        #expect(
            environment.first?.asRejected?.message.hasPrefix(
                "signedTransaction names no environment, not production (--environment);") == true,
            "\(environment)")
        #expect(try read(input) == [row("p1", "2000000600000200", line: 2)])
    }
}
