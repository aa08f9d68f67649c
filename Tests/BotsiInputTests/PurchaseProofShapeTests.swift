import Foundation
import Testing

@testable import BotsiInput

/// Receipts and signed transactions of shapes the fixtures do not have, each the smallest one
/// that shows a decision of the readers (a mutation sweep found these unpinned).
@Suite struct PurchaseProofShapeTests {
    func problem<T>(_ result: Result<T, PurchaseProofError>) -> String? {
        if case .failure(let error) = result { return error.problem }
        return nil
    }

    // MARK: receipts

    /// DER by hand: a receipt payload is a few nested SETs and SEQUENCEs, so each refusal can be
    /// shown on the smallest receipt that needs it.
    enum DER {
        static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            if content.count < 128 { return [tag, UInt8(content.count)] + content }
            var length: [UInt8] = []
            var rest = content.count
            while rest > 0 {
                length.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            return [tag, 0x80 | UInt8(length.count)] + length + content
        }

        /// A non-negative INTEGER, in as few bytes as DER wants.
        static func integer(_ value: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            var rest = value
            repeat {
                bytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            } while rest > 0
            if bytes[0] >= 0x80 { bytes.insert(0, at: 0) }
            return tlv(0x02, bytes)
        }

        static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
        static func set(_ elements: [UInt8]...) -> [UInt8] { tlv(0x31, elements.flatMap { $0 }) }

        /// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
        static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
            tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
        }

        static let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        static let dataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

        /// PKCS#7 signedData around `payload`, without signers (the reader checks no signature).
        static func receipt(_ payload: [UInt8], contentType: [UInt8] = dataOID) -> [UInt8] {
            let content = tlv(0x30, contentType + tlv(0xA0, tlv(0x04, payload)))
            let signedData = tlv(0x30, integer(1) + set() + content + set())
            return tlv(0x30, signedDataOID + tlv(0xA0, signedData))
        }
    }

    func decode(der: [UInt8]) -> Result<AppReceiptContents, PurchaseProofError> { AppReceipt.decode(der: der) }

    @Test func aReceiptReadsIA5StringsAndSkipsTheAttributesItDoesNotUse() throws {
        let purchase = DER.set(
            DER.attribute(1703, DER.utf8("2000000600000999")),
            DER.attribute(1705, DER.tlv(0x16, Array("2000000600000201".utf8))),
            DER.attribute(1706, DER.tlv(0x16, Array("2025-11-01T00:00:00Z".utf8))),
            DER.attribute(1708, DER.utf8("2025-12-01T00:00:00Z")))
        let payload = DER.set(
            DER.attribute(0, DER.utf8("Production")), DER.attribute(2, DER.tlv(0x16, Array("com.example.botsi".utf8))),
            DER.attribute(3, DER.utf8("3082")), DER.attribute(17, purchase),
            DER.attribute(17, DER.set(DER.attribute(1705, DER.utf8("2000000600000212")))),
            DER.attribute(19, DER.integer(7)))
        #expect(
            try decode(der: DER.receipt(payload)).get()
                == AppReceiptContents(
                    bundleId: "com.example.botsi", originalTransactionIds: ["2000000600000201", "2000000600000212"]))
    }

    @Test func aReceiptWhoseContainerIsNotSignedDataSaysSo() {
        let payload = DER.set(DER.attribute(2, DER.utf8("com.example.botsi")))
        let unsigned = DER.tlv(0x30, DER.dataOID + DER.tlv(0xA0, DER.tlv(0x04, payload)))
        #expect(problem(decode(der: unsigned)) == "is PKCS#7 but not signed data, so not an App Store receipt")
        let otherContent = DER.receipt(payload, contentType: [0x06, 0x03, 0x2A, 0x03, 0x04])
        #expect(problem(decode(der: otherContent)) == "is signed PKCS#7 whose content is not data")
        #expect(problem(decode(der: DER.receipt([]))) == "has an empty payload")
        #expect(problem(decode(der: DER.receipt([0x31]))) == "has a payload that is not one ASN.1 SET of attributes")
    }

    @Test func anEmptyReceiptFieldIsNotBase64() {
        for text in ["", " \n\t "] {
            let result = Array(text.utf8).withUnsafeBufferPointer { AppReceipt.decode(base64: $0) }
            #expect(problem(result) == "is not base64 (cut short or changed?)", "\(text.debugDescription)")
        }
    }

    static let bundle = DER.attribute(2, DER.utf8("com.example.botsi"))
    static let purchase = DER.attribute(17, DER.set(DER.attribute(1705, DER.utf8("2000000600000201"))))
    static let notASet = "has a payload that is not one ASN.1 SET of attributes"
    static let notSequences = "has a payload whose attributes are not ASN.1 SEQUENCEs"
    static let notAnAttribute = "has a payload attribute that is not (type, version, value)"
    static let notAString = "has a bundle id that is not a UTF8String"

    /// Each receipt is one change away from a readable one (`bundle` and `purchase` in a SET).
    @Test(arguments: [
        ("a SEQUENCE, not a SET", DER.tlv(0x30, bundle + purchase), notASet),
        ("a SET not marked constructed", DER.tlv(0x11, bundle + purchase), notASet),
        ("a SET of context class", DER.tlv(0xB1, bundle + purchase), notASet),
        ("a byte after the SET", DER.set(bundle, purchase) + [0x05], notASet),
        ("an attribute in a SET", DER.set(DER.tlv(0x31, Array(bundle.dropFirst(2))), purchase), notSequences),
        (
            "an attribute not marked constructed", DER.set(DER.tlv(0x10, Array(bundle.dropFirst(2))), purchase),
            notSequences
        ),
        (
            "an attribute of indefinite length",
            DER.set([0x30, 0x80] + Array(bundle.dropFirst(2)) + [0, 0], purchase), notSequences
        ),
        (
            "an attribute without its version",
            DER.set(DER.tlv(0x30, DER.integer(2) + DER.tlv(0x04, DER.utf8("com.example.botsi"))), purchase),
            notAnAttribute
        ),
        (
            "a value that is not an OCTET STRING",
            DER.set(DER.tlv(0x30, DER.integer(4) + DER.integer(1) + DER.utf8("x")), purchase), notAnAttribute
        ),
        (
            "a value in a constructed OCTET STRING",
            DER.set(DER.tlv(0x30, DER.integer(4) + DER.integer(1) + DER.tlv(0x24, DER.tlv(0x04, [1]))), purchase),
            notAnAttribute
        ),
        (
            "an attribute with a fourth field",
            DER.set(DER.tlv(0x30, Array(bundle.dropFirst(2)) + [0x05, 0x00]), purchase), notAnAttribute
        ),
        (
            "a type beyond 64 bits",
            DER.set(
                DER.tlv(0x30, DER.tlv(0x02, [1, 0, 0, 0, 0, 0, 0, 0, 2]) + DER.integer(1) + DER.tlv(0x04, [])), purchase
            ),
            notAnAttribute
        ),
        ("a bundle id that is an INTEGER", DER.set(DER.attribute(2, DER.integer(5)), purchase), notAString),
        (
            "a bundle id with a byte after it", DER.set(DER.attribute(2, DER.utf8("a") + [0x05, 0x00]), purchase),
            notAString
        ),
        (
            "a bundle id in a constructed string", DER.set(DER.attribute(2, DER.tlv(0x2C, DER.utf8("a"))), purchase),
            notAString
        ),
        (
            "a bundle id that is not UTF-8", DER.set(DER.attribute(2, DER.tlv(0x0C, [0x61, 0xFF])), purchase),
            notAString
        ),
        (
            "an original id that is an INTEGER",
            DER.set(bundle, DER.attribute(17, DER.set(DER.attribute(1705, DER.integer(42))))),
            "has an original transaction id that is not a UTF8String in in-app purchase 1"
        ),
        (
            "an in-app purchase that is not a SET",
            DER.set(bundle, DER.attribute(17, DER.utf8("2000000600000201"))),
            "has an in-app purchase 1 that is not one ASN.1 SET of attributes"
        ),
        (
            "a second in-app purchase without an original id",
            DER.set(bundle, purchase, DER.attribute(17, DER.set(DER.attribute(1703, DER.utf8("1"))))),
            "lists in-app purchase 2 without an original transaction id"
        ),
    ])
    func aReceiptOneChangeFromReadableSaysWhatIsWrong(change: String, payload: [UInt8], expected: String) {
        #expect(problem(decode(der: DER.receipt(payload))) == expected, "\(change)")
        #expect(throws: Never.self, "\(change): the unchanged one reads") {
            try decode(der: DER.receipt(DER.set(Self.bundle, Self.purchase))).get()
        }
    }

    // MARK: signed transactions

    typealias Decoded = Result<SignedTransactionPayload, PurchaseProofError>

    /// A signed transaction with `payload` (JSON) in place of a fixture's (the reader does not
    /// check signatures), and `signature` in place of its signature when given.
    func signed(payload: String, signature: String? = nil) throws -> Decoded {
        let parts = String(decoding: try purchaseFixture("jws-production.jws"), as: UTF8.self).split(separator: ".")
        let encoded = Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let jws = [String(parts[0]), encoded, signature ?? String(parts[2])].joined(separator: ".")
        return Array(jws.utf8).withUnsafeBufferPointer { SignedTransaction.decode($0) }
    }

    @Test func aSignedTransactionsStringsAreUnescapedAndOnlyItsIdMayBeANumber() throws {
        let escaped = try signed(
            payload:
                #"{"originalTransactionId":"2000000600000\u0030","bundleId":"com.example\/botsi","environment":null}"#)
        #expect(
            try escaped.get()
                == SignedTransactionPayload(
                    originalTransactionId: "20000006000000", bundleId: "com.example/botsi", environment: nil))
        #expect(
            problem(try signed(payload: #"{"originalTransactionId":"1","bundleId":5}"#))
                == "has a payload whose bundleId is not a string")
        #expect(
            problem(try signed(payload: #"{"originalTransactionId":"1","environment":true}"#))
                == "has a payload whose environment is not a string")
        #expect(
            problem(try signed(payload: #"{"originalTransactionId":null}"#))
                == "has a payload without an originalTransactionId (is it a StoreKit 2 signed transaction?)")
    }

    @Test func aSignatureMustBeBase64url() throws {
        #expect(
            problem(try signed(payload: #"{"originalTransactionId":"1"}"#, signature: "ab+c"))
                == "has a signature that is not base64url (cut short or changed?)")
        #expect(
            try signed(payload: #"{"originalTransactionId":"1"}"#, signature: "ab-_").get().originalTransactionId == "1"
        )
    }

    @Test func aSignedTransactionWithoutThreeWholePartsSaysWhatIsWrong() throws {
        let jws = String(decoding: try purchaseFixture("jws-production.jws"), as: UTF8.self)
        func decoded(_ text: String) -> Decoded {
            Array(text.utf8).withUnsafeBufferPointer { SignedTransaction.decode($0) }
        }
        #expect(problem(decoded(jws + ".e30"))?.contains("this has 4") == true)
        #expect(problem(decoded(" \n\t "))?.contains("this has 1") == true)
        #expect(
            problem(decoded("." + jws.split(separator: ".").dropFirst().joined(separator: ".")))
                == "has a header that is not base64url (cut short or changed?)")
        #expect(try decoded("\t" + jws + " \u{0B}").get().originalTransactionId == "2000000600000011")
    }
}
