/// Why a signed transaction or a receipt could not be read: the end of a sentence that starts
/// with the field's name ("signedTransaction is not…").
struct PurchaseProofError: Error, Equatable {
    let problem: String
}

/// What a StoreKit 2 signed transaction says about itself.
struct SignedTransactionPayload: Equatable {
    /// As written in the payload (a string, or a number token), not yet validated.
    let originalTransactionId: String
    let bundleId: String?
    /// `Production`, `Sandbox`, `Xcode`… as Apple writes it.
    let environment: String?
}

/// Reads a StoreKit 2 signed transaction: a JWS in compact form (`header.payload.signature`,
/// each part base64url), whose payload is the transaction as JSON.
///
/// The signature is **not** verified: Botsi asks Apple about the transaction itself, and a
/// forged payload only names an id that Apple then does not know for this app. The JWS must
/// still be whole: three parts, a header that is a JSON object with an `alg`, a payload that
/// is a JSON object with an `originalTransactionId`, and a non-empty signature.
///
/// One reader serves a whole input: one app's transactions share one header (its certificate
/// chain, 2 KB), so the last header that passed is remembered and not decoded again.
final class SignedTransaction {
    private static let headerParser = JSONLineParser(groups: [["alg"]], ignoringCase: false)
    private static let payloadParser = JSONLineParser(
        groups: [["originalTransactionId"], ["bundleId"], ["environment"]], ignoringCase: false)
    /// The last header that passed; nil until one has (an empty part is no header).
    private var acceptedHeader: [UInt8]?
    private let scratch = ScratchBuffer()

    /// A one-off decode (tests, fuzzing).
    static func decode(_ field: UnsafeBufferPointer<UInt8>) -> Result<SignedTransactionPayload, PurchaseProofError> {
        SignedTransaction().decode(field)
    }

    func decode(_ field: UnsafeBufferPointer<UInt8>) -> Result<SignedTransactionPayload, PurchaseProofError> {
        func failure(_ problem: String) -> Result<SignedTransactionPayload, PurchaseProofError> {
            .failure(PurchaseProofError(problem: problem))
        }
        var lower = 0
        var upper = field.count
        while lower < upper && field[lower] <= ASCII.space { lower += 1 }
        while upper > lower && field[upper - 1] <= ASCII.space { upper -= 1 }
        let text = UnsafeBufferPointer(rebasing: field[lower..<upper])
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return failure(
                "is not a compact JWS (three base64url parts joined by dots; this has \(parts.count)); give StoreKit 2's jwsRepresentation unchanged"
            )
        }
        let scratch = self.scratch
        func json(_ part: Slice<UnsafeBufferPointer<UInt8>>, name: String, parser: JSONLineParser)
            -> Result<([UInt8], JSONObjectLine), PurchaseProofError>
        {
            guard !part.isEmpty, let bytes = Base64.decode(UnsafeBufferPointer(rebasing: part), alphabet: .url) else {
                return .failure(
                    PurchaseProofError(problem: "has a \(name) that is not base64url (cut short or changed?)"))
            }
            do {
                let object = try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
                    try parser.parse(buffer, collectingKeys: false, scratch: scratch)
                }
                return .success((bytes, object))
            } catch {
                return .failure(
                    PurchaseProofError(problem: "has a \(name) that is not a JSON object (\(error.problem))"))
            }
        }
        if acceptedHeader.map({ parts[0].elementsEqual($0) }) != true {
            let header: JSONObjectLine
            switch json(parts[0], name: "header", parser: Self.headerParser) {
            case .failure(let error): return .failure(error)
            case .success(let decoded): header = decoded.1
            }
            guard case .string = header[0] else {
                return failure("has a header without an \"alg\" string, so it is not a JWS")
            }
            acceptedHeader = Array(parts[0])
        }
        let payloadBytes: [UInt8]
        let payload: JSONObjectLine
        switch json(parts[1], name: "payload", parser: Self.payloadParser) {
        case .failure(let error): return .failure(error)
        case .success(let decoded): (payloadBytes, payload) = decoded
        }
        if let duplicate = payload.duplicate {
            return failure("has a payload that holds \(RowValidation.display(duplicate.first)) twice")
        }
        guard !parts[2].isEmpty else { return failure("has an empty signature (an unsigned token, not Apple's)") }
        guard Base64.isValid(UnsafeBufferPointer(rebasing: parts[2]), alphabet: .url) else {
            return failure("has a signature that is not base64url (cut short or changed?)")
        }
        return payloadBytes.withUnsafeBufferPointer { bytes in
            func string(_ group: Int, _ name: String) -> Result<String?, PurchaseProofError> {
                switch payload[group] {
                case nil, .null: return .success(nil)
                case .string(let start, let end, let hasEscapes):
                    let content = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    let decoded = hasEscapes ? JSONStrings.decode(content, into: scratch) : content
                    return .success(String(decoding: decoded, as: UTF8.self))
                case .number(let start, let end) where group == 0:
                    return .success(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
                case .number, .other:
                    return .failure(PurchaseProofError(problem: "has a payload whose \(name) is not a string"))
                }
            }
            let id: String?
            let bundleId: String?
            let environment: String?
            do throws(PurchaseProofError) {
                id = try string(0, "originalTransactionId").get()
                bundleId = try string(1, "bundleId").get()
                environment = try string(2, "environment").get()
            } catch {
                return .failure(error)
            }
            guard let id else {
                return .failure(
                    PurchaseProofError(
                        problem:
                            "has a payload without an originalTransactionId (is it a StoreKit 2 signed transaction?)"
                    ))
            }
            return .success(
                SignedTransactionPayload(originalTransactionId: id, bundleId: bundleId, environment: environment))
        }
    }
}
