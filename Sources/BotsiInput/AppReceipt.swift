internal import CCrypto

/// What an App Store receipt says about its app and purchases.
struct AppReceiptContents: Equatable {
    let bundleId: String?
    /// Every in-app purchase's original transaction id, each once, in the receipt's order; not
    /// yet validated.
    let originalTransactionIds: [String]
}

/// Reads an App Store receipt (the app's `appStoreReceiptURL` content, base64): a PKCS#7
/// signedData container whose content is an ASN.1 SET of attributes
/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`. Type 2 is the bundle id,
/// type 17 an in-app purchase, itself a SET of such attributes in which type 1705 is the
/// original transaction id (the numbers Apple documents, and that Apple's own server library's
/// `ReceiptUtility` reads). OpenSSL's libcrypto parses the container and every ASN.1 element.
///
/// Like Apple's utility, this does **not** verify the signature: Botsi asks Apple about each
/// transaction itself, so a forged receipt only names ids that Apple does not know for the app.
enum AppReceipt {
    static let bundleIdType: Int64 = 2
    static let inAppType: Int64 = 17
    static let originalTransactionIdType: Int64 = 1705

    /// A receipt as it travels: base64, possibly wrapped over lines.
    static func decode(base64 field: UnsafeBufferPointer<UInt8>) -> Result<AppReceiptContents, PurchaseProofError> {
        guard let der = Base64.decode(field, alphabet: .standard), !der.isEmpty else {
            return .failure(PurchaseProofError(problem: "is not base64 (cut short or changed?)"))
        }
        return decode(der: der)
    }

    /// A receipt's bytes (DER or BER).
    static func decode(der: [UInt8]) -> Result<AppReceiptContents, PurchaseProofError> {
        der.withUnsafeBufferPointer { buffer in
            var next = buffer.baseAddress
            guard let container = d2i_PKCS7(nil, &next, buffer.count) else {
                ERR_clear_error()
                return .failure(
                    PurchaseProofError(problem: "is not a PKCS#7 container (cut short, or not an App Store receipt)"))
            }
            defer { PKCS7_free(container) }
            var content: UnsafePointer<UInt8>?
            var length = 0
            switch ccrypto_pkcs7_signed_content(container, &content, &length) {
            case CCRYPTO_CONTENT_OK:
                break
            case CCRYPTO_CONTENT_NOT_SIGNED:
                return .failure(
                    PurchaseProofError(problem: "is PKCS#7 but not signed data, so not an App Store receipt"))
            case CCRYPTO_CONTENT_NOT_DATA:
                return .failure(PurchaseProofError(problem: "is signed PKCS#7 whose content is not data"))
            default:
                return .failure(
                    PurchaseProofError(problem: "is signed PKCS#7 without its content (a detached signature?)"))
            }
            guard let content, length > 0 else {
                return .failure(PurchaseProofError(problem: "has an empty payload"))
            }
            return payload(UnsafeBufferPointer(start: content, count: length))
        }
    }

    private static func payload(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<AppReceiptContents, PurchaseProofError> {
        var bundleId: String?
        var ids: [String] = []
        var seen = Set<String>()
        var inAppCount = 0
        let outcome = attributes(in: bytes, what: "a payload") { type, value in
            switch type {
            case bundleIdType:
                guard let text = string(in: value) else { return "has a bundle id that is not a UTF8String" }
                bundleId = text
            case inAppType:
                inAppCount += 1
                var originalId: String?
                let inner = attributes(in: value, what: "an in-app purchase \(inAppCount)") { type, value in
                    guard type == originalTransactionIdType else { return nil }
                    guard let text = string(in: value) else {
                        return
                            "has an original transaction id that is not a UTF8String in in-app purchase \(inAppCount)"
                    }
                    originalId = text
                    return nil
                }
                if let inner { return inner }
                guard let originalId else {
                    return "lists in-app purchase \(inAppCount) without an original transaction id"
                }
                if seen.insert(originalId).inserted { ids.append(originalId) }
            default:
                break
            }
            return nil
        }
        if let outcome { return .failure(PurchaseProofError(problem: outcome)) }
        return .success(AppReceiptContents(bundleId: bundleId, originalTransactionIds: ids))
    }

    /// Walks a DER `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`,
    /// calling `visit` with each type and value; returns the first problem, or nil.
    private static func attributes(
        in bytes: UnsafeBufferPointer<UInt8>, what: String,
        visit: (Int64, UnsafeBufferPointer<UInt8>) -> String?
    ) -> String? {
        var outer = ASN1Reader(bytes)
        guard let set = outer.next(), set.tag == V_ASN1_SET, set.isConstructed, outer.isAtEnd else {
            return "has \(what) that is not one ASN.1 SET of attributes"
        }
        var elements = ASN1Reader(set.content)
        while !elements.isAtEnd {
            guard let sequence = elements.next(), sequence.tag == V_ASN1_SEQUENCE, sequence.isConstructed else {
                return "has \(what) whose attributes are not ASN.1 SEQUENCEs"
            }
            var fields = ASN1Reader(sequence.content)
            guard let type = fields.integer(), fields.integer() != nil, let value = fields.next(),
                value.tag == V_ASN1_OCTET_STRING, !value.isConstructed, fields.isAtEnd
            else {
                return "has \(what) attribute that is not (type, version, value)"
            }
            if let problem = visit(type, value.content) { return problem }
        }
        return nil
    }

    /// The text of a DER UTF8String (or IA5String) that fills `bytes`, or nil.
    private static func string(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var reader = ASN1Reader(bytes)
        guard let element = reader.next(), reader.isAtEnd, !element.isConstructed,
            element.tag == V_ASN1_UTF8STRING || element.tag == V_ASN1_IA5STRING
        else { return nil }
        return String(validating: element.content, as: UTF8.self)
    }
}

/// Steps through DER elements with libcrypto's `ASN1_get_object`, never past the buffer.
private struct ASN1Reader {
    struct Element {
        let tag: Int32
        let isConstructed: Bool
        let content: UnsafeBufferPointer<UInt8>
    }

    private var position: UnsafePointer<UInt8>?
    private let end: UnsafePointer<UInt8>?

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        position = bytes.baseAddress
        end = bytes.baseAddress.map { $0 + bytes.count }
    }

    var isAtEnd: Bool { position == end }

    private var remaining: Int {
        guard let position, let end else { return 0 }
        return end - position
    }

    /// The next universal-class element with a definite length, or nil (and no move).
    mutating func next() -> Element? {
        guard remaining > 0 else { return nil }
        var cursor = position
        var length = 0
        var tag: Int32 = 0
        var tagClass: Int32 = 0
        let flags = ASN1_get_object(&cursor, &length, &tag, &tagClass, remaining)
        // 0x80: malformed or longer than the buffer; 0x21: BER's indefinite length.
        guard flags & CCRYPTO_ASN1_ERROR == 0, flags != CCRYPTO_ASN1_INDEFINITE, tagClass == V_ASN1_UNIVERSAL,
            let start = cursor, let end, length >= 0, length <= end - start
        else {
            ERR_clear_error()
            return nil
        }
        position = start + length
        return Element(
            tag: tag, isConstructed: flags & V_ASN1_CONSTRUCTED != 0,
            content: UnsafeBufferPointer(start: start, count: length))
    }

    /// The next element as an INTEGER that fits 64 bits, decoded by libcrypto.
    mutating func integer() -> Int64? {
        guard remaining > 0 else { return nil }
        var cursor = position
        guard let integer = d2i_ASN1_INTEGER(nil, &cursor, remaining) else {
            ERR_clear_error()
            return nil
        }
        defer { ASN1_INTEGER_free(integer) }
        var value: Int64 = 0
        guard ASN1_INTEGER_get_int64(&value, integer) == 1 else {
            ERR_clear_error()
            return nil
        }
        position = cursor
        return value
    }
}
