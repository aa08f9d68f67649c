import Foundation
import Testing

@testable import BotsiInput

/// StoreKit 2 signed transactions and App Store receipts, on the fixtures that
/// scripts/make-purchase-fixtures.sh made (see Tests/Fixtures/purchases/MANIFEST).
@Suite struct PurchaseProofTests {
    func signed(_ name: String) throws -> Result<SignedTransactionPayload, PurchaseProofError> {
        try purchaseFixture(name).withUnsafeBufferPointer { SignedTransaction.decode($0) }
    }

    func receipt(_ name: String) throws -> Result<AppReceiptContents, PurchaseProofError> {
        try purchaseFixture(name).withUnsafeBufferPointer { AppReceipt.decode(base64: $0) }
    }

    func problem<T>(_ result: Result<T, PurchaseProofError>) -> String? {
        if case .failure(let error) = result { return error.problem }
        return nil
    }

    // MARK: signed transactions

    @Test func aSignedTransactionGivesItsIdBundleAndEnvironment() throws {
        let production = try signed("jws-production.jws").get()
        #expect(
            production
                == SignedTransactionPayload(
                    originalTransactionId: "2000000600000011", bundleId: "com.example.botsi", environment: "Production")
        )
        #expect(try signed("jws-sandbox.jws").get().environment == "Sandbox")
        #expect(try signed("jws-other-bundle.jws").get().bundleId == "com.example.other")
        #expect(try signed("jws-numeric-id.jws").get().originalTransactionId == "2000000600000055")
    }

    @Test(arguments: [
        ("jws-truncated.jws", "three base64url parts"), ("jws-two-parts.jws", "this has 2"),
        ("jws-standard-base64.jws", "not base64url"), ("jws-empty-signature.jws", "an empty signature"),
        ("jws-no-alg.jws", "without an \"alg\""), ("jws-payload-not-json.jws", "not a JSON object"),
        ("jws-no-original-id.jws", "without an originalTransactionId"), ("jws-duplicate-id.jws", "twice"),
        ("jws-deep-payload.jws", "nested deeper"),
    ])
    func aDamagedSignedTransactionSaysWhatIsWrong(name: String, expected: String) throws {
        let message = problem(try signed(name))
        #expect(message?.contains(expected) == true, "\(name): \(message ?? "decoded")")
    }

    @Test func aRememberedHeaderNeverLetsAnotherOneThrough() throws {
        let reader = SignedTransaction()
        for name in ["jws-production.jws", "jws-no-alg.jws", "jws-sandbox.jws", "jws-no-alg.jws"] {
            let result = try purchaseFixture(name).withUnsafeBufferPointer { reader.decode($0) }
            #expect(
                problem(result)
                    == (name == "jws-no-alg.jws" ? "has a header without an \"alg\" string, so it is not a JWS" : nil))
        }
    }

    @Test func surroundingWhitespaceIsIgnored() throws {
        let padded = Array(" \n".utf8) + (try purchaseFixture("jws-production.jws")) + Array("\r\n".utf8)
        let payload = try padded.withUnsafeBufferPointer { SignedTransaction.decode($0) }.get()
        #expect(payload.originalTransactionId == "2000000600000011")
    }

    // MARK: receipts

    @Test func aReceiptGivesEachOriginalTransactionIdOnceAndItsBundle() throws {
        let contents = try receipt("receipt-two-purchases.b64").get()
        #expect(contents.bundleId == "com.example.botsi")
        #expect(Set(contents.originalTransactionIds) == ["2000000600000101", "2000000600000112"])
        #expect(contents.originalTransactionIds.count == 2)
        #expect(try receipt("receipt-der.b64").get().originalTransactionIds == ["2000000600000123"])
        #expect(try receipt("receipt-wrapped.b64").get().originalTransactionIds == ["2000000600000123"])
        #expect(try receipt("receipt-no-purchases.b64").get().originalTransactionIds == [])
        #expect(try receipt("receipt-other-bundle.b64").get().bundleId == "com.example.other")
        #expect(try receipt("receipt-id-letters.b64").get().originalTransactionIds == ["TX-2000000600000156"])
    }

    @Test(arguments: [
        ("receipt-truncated.b64", "not a PKCS#7 container"), ("receipt-bare-payload.b64", "not a PKCS#7 container"),
        ("receipt-detached.b64", "without its content"), ("receipt-not-base64.b64", "not base64"),
        ("receipt-lying-length.b64", "not one ASN.1 SET"), ("receipt-payload-not-set.b64", "not one ASN.1 SET"),
        ("receipt-in-app-without-id.b64", "without an original transaction id"),
    ])
    func aDamagedReceiptSaysWhatIsWrong(name: String, expected: String) throws {
        let message = problem(try receipt(name))
        #expect(message?.contains(expected) == true, "\(name): \(message ?? "decoded")")
    }

    @Test func aReceiptThatIsASignedTransactionIsNotAReceipt() throws {
        let jws = try purchaseFixture("jws-production.jws")
        #expect(problem(jws.withUnsafeBufferPointer { AppReceipt.decode(base64: $0) }) != nil)
    }

    /// Every fuzz seed of the two parsers decodes or is refused, without a crash.
    @Test func everyFuzzSeedOfTheParsersDecodesOrIsRefused() throws {
        let corpus = repositoryRoot + "/Tests/FuzzCorpus/"
        let signedSeeds = try FileManager.default.contentsOfDirectory(atPath: corpus + "jws")
        let receiptSeeds = try FileManager.default.contentsOfDirectory(atPath: corpus + "receipt")
        #expect(signedSeeds.count >= 10 && receiptSeeds.count >= 10)
        var decoded = 0
        for seed in signedSeeds {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: corpus + "jws/" + seed)))
            if case .success = bytes.withUnsafeBufferPointer({ SignedTransaction.decode($0) }) { decoded += 1 }
        }
        for seed in receiptSeeds {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: corpus + "receipt/" + seed)))
            if case .success = AppReceipt.decode(der: bytes) { decoded += 1 }
        }
        #expect(decoded >= 10, "the seeds should hold readable proofs too")
    }

    // MARK: through the reader

    func readRows(_ text: String, name: String = "rows.csv", options: InputOptions = .init()) throws -> [InputRecord] {
        try readBytes(Array(text.utf8), name: name, options: options).records
    }

    @Test func aRowWithASignedTransactionIsSentAsItsOriginalTransactionId() throws {
        let jws = String(decoding: try purchaseFixture("jws-production.jws"), as: UTF8.self)
        let csv = try readRows("profileId,signedTransaction\np1,\(jws)\n")
        #expect(csv == [row("p1", "2000000600000011", line: 2)])
        let json = try readRows("{\"profileId\":\"p1\",\"signedTransaction\":\"\(jws)\"}\n", name: "rows.jsonl")
        #expect(json == [row("p1", "2000000600000011", line: 1)])
    }

    @Test func aReceiptYieldsARowPerPurchaseOnItsLine() throws {
        let receipt = String(decoding: try purchaseFixture("receipt-two-purchases.b64"), as: UTF8.self)
        let records = try readRows("profileId,receipt\np0,\np1,\(receipt)\n")
        #expect(records.count == 3)
        #expect(records[0].asRejected?.reason == .missingTransactionId)
        #expect(
            Set(records.dropFirst().compactMap(\.asRow)) == [
                InputRow(profileId: "p1", originalTransactionId: "2000000600000101", line: 3),
                InputRow(profileId: "p1", originalTransactionId: "2000000600000112", line: 3),
            ])
    }

    @Test func anOriginalTransactionIdInTheRowWinsOverTheOthers() throws {
        let jws = String(decoding: try purchaseFixture("jws-production.jws"), as: UTF8.self)
        let records = try readRows("profileId,originalTransactionId,signedTransaction\np1,42,\(jws)\np2,,\(jws)\n")
        #expect(records == [row("p1", "42", line: 2), row("p2", "2000000600000011", line: 3)])
    }

    @Test func bundleAndEnvironmentRejectWhatDoesNotMatch() throws {
        func text(_ name: String) throws -> String { String(decoding: try purchaseFixture(name), as: UTF8.self) }
        let input = """
            profileId,signedTransaction,receipt
            p1,\(try text("jws-production.jws")),
            p2,\(try text("jws-sandbox.jws")),
            p3,\(try text("jws-other-bundle.jws")),
            p4,,\(try text("receipt-other-bundle.b64"))
            p5,,\(try text("receipt-der.b64"))
            p6,\(try text("jws-xcode.jws")),

            """
        let options = InputOptions(bundleId: "com.example.botsi", environment: .production)
        let records = try readRows(input, options: options)
        #expect(
            records.map { $0.asRejected?.reason.rawValue ?? "row" } == [
                "row", "wrong_environment", "wrong_bundle_id", "wrong_bundle_id", "row", "wrong_environment",
            ])
        #expect(records[1].asRejected?.originalTransactionId == "2000000600000022")
        #expect(records[1].asRejected?.message.contains("'Sandbox'") == true)
        let sandbox = try readRows(input, options: InputOptions(environment: .sandbox))
        #expect(
            sandbox.map { $0.asRejected?.reason.rawValue ?? "row" } == [
                "wrong_environment", "row", "wrong_environment", "row", "row", "wrong_environment",
            ])
        // Without the options every readable one is a row, but Xcode's local test transaction.
        #expect(
            try readRows(input).map { $0.asRejected?.reason.rawValue ?? "row" } == [
                "row", "row", "row", "row", "row", "wrong_environment",
            ])
    }

    /// Xcode's StoreKit testing signs transactions locally, with ids counted from 0: Apple's
    /// servers do not know them (issue 19, item 16).
    @Test func anXcodeTestTransactionIsRejectedSayingWhatItIs() throws {
        let xcode = String(decoding: try purchaseFixture("jws-xcode.jws"), as: UTF8.self).split(separator: ".")
        let payload =
            #"{"transactionId":"0","originalTransactionId":"0","bundleId":"com.example.botsi","environment":"Xcode"}"#
        let encoded = Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let jws = [String(xcode[0]), encoded, String(xcode[2])].joined(separator: ".")
        let records = try readRows("profileId,signedTransaction\np1,\(jws)\n")
        let rejected = try #require(records.first?.asRejected)
        #expect(rejected.reason == .wrongEnvironment)
        #expect(rejected.message.contains("Xcode's StoreKit testing"), "\(rejected.message)")
        #expect(rejected.message.contains("Apple's servers do not know"), "\(rejected.message)")
        #expect(!rejected.message.contains("padded"), "\(rejected.message)")
        #expect(rejected.originalTransactionId == "0")
    }

    @Test func unreadableProofsAreRejectedWithTheirReason() throws {
        func text(_ name: String) throws -> String { String(decoding: try purchaseFixture(name), as: UTF8.self) }
        let input = """
            profileId,signedTransaction,receipt
            p1,\(try text("jws-truncated.jws")),
            p2,\(try text("jws-id-letters.jws")),
            p3,,\(try text("receipt-truncated.b64"))
            p4,,\(try text("receipt-no-purchases.b64"))
            p5,,\(try text("receipt-id-letters.b64"))
            ,\(try text("jws-production.jws")),

            """
        let records = try readRows(input)
        #expect(
            records.map { $0.asRejected?.reason.rawValue ?? "row" } == [
                "invalid_signed_transaction", "invalid_signed_transaction", "invalid_receipt",
                "receipt_without_purchases",
                "invalid_receipt", "missing_profile_id",
            ])
        #expect(records[1].asRejected?.originalTransactionId == "TX-2000000600000099")
        #expect(records[1].asRejected?.message.contains("contains letters") == true)
        #expect(records[0].asRejected?.originalTransactionId?.hasPrefix("eyJ") == true)
        // Issue 19, item 15: 257 characters of base64 filled the transaction column of a report;
        // a proof that gave no id keeps its opening only.
        for index in [0, 2, 3, 5] {
            let shown = try #require(records[index].asRejected?.originalTransactionId, "record \(index)")
            #expect(shown.count <= 25 && shown.hasSuffix("…"), "record \(index): \(shown)")
        }
    }

    @Test func aHeaderWithOnlyAReceiptColumnIsEnough() throws {
        let records = try readRows(
            "profileId,receipt_data\np,\(String(decoding: try purchaseFixture("receipt-der.b64"), as: UTF8.self))\n")
        #expect(records == [row("p", "2000000600000123", line: 2)])
    }
}
