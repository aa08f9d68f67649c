import BotsiBasics

/// Builds the rows of a record that may carry a StoreKit 2 signed transaction or an App Store
/// receipt instead of an original transaction id.
///
/// A record's own `originalTransactionId`, when it has one, is used as is and the other two
/// are not read. Otherwise the signed transaction, then the receipt, gives the id: one row from
/// a signed transaction, one row per distinct original transaction id from a receipt (all with
/// the record's line). `bundleId` and `environment`, when set, reject what does not match.
struct RowAssembler {
    let bundleId: String?
    let environment: PurchaseEnvironment?
    private let signedTransactions = SignedTransaction()

    init(bundleId: String?, environment: PurchaseEnvironment?) {
        self.bundleId = bundleId
        self.environment = environment
    }

    func records(
        line: Int, profile: FieldInput, transaction: FieldInput, signedTransaction: FieldInput, receipt: FieldInput,
        more: inout [InputRecord]
    ) -> InputRecord {
        let signed = Self.presentText(signedTransaction)
        let receiptText = Self.presentText(receipt)
        if Self.isPresent(transaction) || (signed == nil && receiptText == nil) {
            return RowValidation.record(line: line, profile: profile, transaction: transaction)
        }
        let profileId: String
        switch RowValidation.checkProfile(profile) {
        case .rejected(let reason, let message):
            return .rejected(
                RejectedRow(
                    line: line, reason: reason, message: message, profileId: RowValidation.rawValue(profile),
                    originalTransactionId: RowValidation.proofOpening(signed != nil ? signedTransaction : receipt)))
        case .valid(let value):
            profileId = value
        }
        func reject(_ reason: RejectionReason, _ message: String, id: String?, field: FieldInput) -> InputRecord {
            .rejected(
                RejectedRow(
                    line: line, reason: reason, message: message, profileId: profileId,
                    originalTransactionId: id.map(RowValidation.truncated) ?? RowValidation.proofOpening(field)))
        }
        if let signed {
            guard case .text(let bytes) = signed else {
                return reject(
                    .invalidSignedTransaction, "signedTransaction must be a string (a JWS).", id: nil,
                    field: signedTransaction)
            }
            switch signedTransactions.decode(bytes) {
            case .failure(let error):
                return reject(
                    .invalidSignedTransaction, "signedTransaction \(error.problem).", id: nil, field: signedTransaction)
            case .success(let payload):
                if let environment = payload.environment, ASCIICase.lowercased(environment) == "xcode" {
                    return reject(
                        .wrongEnvironment,
                        "signedTransaction comes from Xcode's StoreKit testing (environment 'Xcode'): a local test "
                            + "transaction that Apple's servers do not know, so it cannot be restored; "
                            + "restore sandbox or production purchases.", id: payload.originalTransactionId,
                        field: signedTransaction)
                }
                if let problem = mismatch(
                    bundle: payload.bundleId, environment: .some(payload.environment), what: "signedTransaction")
                {
                    return reject(problem.0, problem.1, id: payload.originalTransactionId, field: signedTransaction)
                }
                switch Self.checkId(payload.originalTransactionId) {
                case .rejected(_, let message):
                    return reject(
                        .invalidSignedTransaction, "signedTransaction's payload: \(message)",
                        id: payload.originalTransactionId, field: signedTransaction)
                case .valid(let id):
                    return .row(InputRow(profileId: profileId, originalTransactionId: id, line: line))
                }
            }
        }
        guard case .text(let bytes) = receiptText else {
            return reject(.invalidReceipt, "receipt must be a string (base64).", id: nil, field: receipt)
        }
        switch AppReceipt.decode(base64: bytes) {
        case .failure(let error):
            return reject(.invalidReceipt, "receipt \(error.problem).", id: nil, field: receipt)
        case .success(let contents):
            if let problem = mismatch(bundle: contents.bundleId, environment: nil, what: "receipt") {
                return reject(problem.0, problem.1, id: nil, field: receipt)
            }
            var rows: [InputRecord] = []
            for id in contents.originalTransactionIds {
                switch Self.checkId(id) {
                case .rejected(_, let message):
                    return reject(
                        .invalidReceipt, "receipt lists an in-app purchase whose \(message)", id: id, field: receipt)
                case .valid(let valid):
                    rows.append(.row(InputRow(profileId: profileId, originalTransactionId: valid, line: line)))
                }
            }
            guard let first = rows.first else {
                return reject(
                    .receiptWithoutPurchases,
                    "receipt lists no in-app purchase, so it names no transaction to restore.", id: nil, field: receipt)
            }
            more.append(contentsOf: rows.dropFirst())
            return first
        }
    }

    /// Why the bundle id or environment does not match the options, or nil. `environment` is
    /// nil for a receipt, which does not say (only a signed transaction's is checked).
    private func mismatch(bundle: String?, environment found: String??, what: String) -> (RejectionReason, String)? {
        if let bundleId, bundle != bundleId {
            let named = bundle.map { "is for the app \(RowValidation.display($0))" } ?? "names no bundle id"
            return (.wrongBundleId, "\(what) \(named), not \(RowValidation.display(bundleId)) (--bundle-id).")
        }
        if let environment, let found, found?.lowercased() != environment.rawValue {
            let named =
                found.map { "comes from the \(RowValidation.display($0)) environment" } ?? "names no environment"
            return (
                .wrongEnvironment,
                "\(what) \(named), not \(environment.rawValue) (--environment); Apple would answer nothing_to_restore for it there."
            )
        }
        return nil
    }

    private static func checkId(_ id: String) -> RowValidation.Check {
        var text = id
        return text.withUTF8 { RowValidation.checkTransaction(.text($0)) }
    }

    /// A field with something in it other than whitespace.
    private static func isPresent(_ field: FieldInput) -> Bool {
        switch field {
        case .absent, .null: false
        case .wrongType: true
        case .text(let bytes): bytes.contains { $0 > ASCII.space }
        }
    }

    private static func presentText(_ field: FieldInput) -> FieldInput? {
        isPresent(field) ? field : nil
    }
}
