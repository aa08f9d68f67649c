import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

/// A transaction id as written in a CSV field, and what must come of it.
struct TransactionCase: Sendable, CustomTestStringConvertible {
    let field: String
    /// The accepted id, or nil when the row is rejected with `reason`.
    let accepted: String?
    let reason: RejectionReason?
    let messageFragment: String?

    static func valid(_ field: String, _ accepted: String) -> Self {
        Self(field: field, accepted: accepted, reason: nil, messageFragment: nil)
    }

    static func rejected(_ field: String, _ reason: RejectionReason, _ fragment: String? = nil) -> Self {
        Self(field: field, accepted: nil, reason: reason, messageFragment: fragment)
    }

    var testDescription: String { "originalTransactionId \(field.debugDescription)" }
}

struct ProfileCase: Sendable, CustomTestStringConvertible {
    let field: String
    let accepted: String?
    let reason: RejectionReason?

    var testDescription: String { "profileId \(field.debugDescription)" }
}

@Suite struct RowValidationTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    /// Reads one row through the CSV reader, the field quoted so that it arrives as written.
    func readOne(profile: String, transaction: String) throws -> InputRecord {
        func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        let path = directory.write(
            "rows.csv", "profileId,originalTransactionId\n\(quoted(profile)),\(quoted(transaction))\n")
        let records = try readAll(path)
        try #require(records.count == 1)
        return records[0]
    }

    static let transactionCases: [TransactionCase] = [
        .valid("2000000261699248", "2000000261699248"),
        .valid("  2000000261699248\t", "2000000261699248"),
        .valid("\u{A0}1000000000000001\u{A0}", "1000000000000001"),
        .valid("1", "1"),
        .valid("18446744073709551615", "18446744073709551615"),
        .rejected("", .missingTransactionId),
        .rejected("   ", .missingTransactionId),
        .rejected("2.00000E+15", .scientificNotation, "export the column as text"),
        .rejected("2E15", .scientificNotation),
        .rejected("2.000002617e+15", .scientificNotation),
        .rejected("2,00000E+15", .scientificNotation),
        .rejected("18446744073709551616", .invalidTransactionId, "larger"),
        .rejected("123456789012345678901", .invalidTransactionId, "larger"),
        .rejected("0123", .invalidTransactionId, "starts with 0"),
        .rejected("0", .invalidTransactionId, "starts with 0"),
        .rejected("-2000000261699248", .invalidTransactionId, "sign"),
        .rejected("+2000000261699248", .invalidTransactionId, "sign"),
        .rejected("2000000261699248.0", .invalidTransactionId, "spreadsheet"),
        .rejected("2,000,000,261,699,248", .invalidTransactionId, "spreadsheet"),
        .rejected("2000 0002 6169 9248", .invalidTransactionId, "whitespace"),
        .rejected("２０００００", .invalidTransactionId, "full-width"),
        .rejected("abc", .invalidTransactionId, "letters"),
        .rejected("1; DROP TABLE items", .invalidTransactionId),
        .rejected("12\u{0}3", .invalidTransactionId),
        .rejected("E15", .invalidTransactionId),
        // A sign before something that is not all digits is not "has a sign"; a dash with no
        // decimal separator is no spreadsheet's formatting.
        .rejected("-12a4", .invalidTransactionId, "letters"),
        .rejected("12-34", .invalidTransactionId, "must be 1-20 digits (0-9) and nothing else"),
    ]

    @Test(arguments: transactionCases)
    func transactionIds(_ testCase: TransactionCase) throws {
        let record = try readOne(profile: "p1", transaction: testCase.field)
        if let accepted = testCase.accepted {
            #expect(record == row("p1", accepted, line: 2))
        } else {
            let rejected = try #require(record.asRejected)
            #expect(rejected.reason == testCase.reason)
            #expect(rejected.line == 2)
            #expect(rejected.originalTransactionId == testCase.field)
            #expect(rejected.profileId == "p1")
            if let fragment = testCase.messageFragment {
                #expect(rejected.message.contains(fragment), "\(rejected.message)")
            }
        }
    }

    static let profileCases: [ProfileCase] = [
        ProfileCase(
            field: "fff3c120-0ca8-480f-9b19-3955a5428e39", accepted: "fff3c120-0ca8-480f-9b19-3955a5428e39", reason: nil
        ),
        ProfileCase(field: "  p1 \t", accepted: "p1", reason: nil),
        ProfileCase(field: "Ωmega café", accepted: "Ωmega café", reason: nil),
        ProfileCase(
            field: String(repeating: "a", count: 128), accepted: String(repeating: "a", count: 128), reason: nil),
        ProfileCase(
            field: String(repeating: "é", count: 128), accepted: String(repeating: "é", count: 128), reason: nil),
        ProfileCase(field: "'; DROP TABLE items; --", accepted: "'; DROP TABLE items; --", reason: nil),
        ProfileCase(field: "", accepted: nil, reason: .missingProfileId),
        ProfileCase(field: " \u{3000} ", accepted: nil, reason: .missingProfileId),
        ProfileCase(field: String(repeating: "a", count: 129), accepted: nil, reason: .invalidProfileId),
        ProfileCase(field: String(repeating: "é", count: 129), accepted: nil, reason: .invalidProfileId),
        ProfileCase(field: "a\u{7}b", accepted: nil, reason: .invalidProfileId),
        ProfileCase(field: "a\nb", accepted: nil, reason: .invalidProfileId),
        ProfileCase(field: "a\u{85}b", accepted: nil, reason: .invalidProfileId),
        ProfileCase(field: "a\u{7F}", accepted: nil, reason: .invalidProfileId),
    ]

    @Test(arguments: profileCases)
    func profileIds(_ testCase: ProfileCase) throws {
        let record = try readOne(profile: testCase.field, transaction: "123")
        if let accepted = testCase.accepted {
            #expect(record == row(accepted, "123", line: 2))
        } else {
            let rejected = try #require(record.asRejected)
            #expect(rejected.reason == testCase.reason)
            #expect(rejected.profileId == testCase.field)
        }
    }

    @Test func theScientificNotationMessageExplainsWhatHappened() throws {
        let rejected = try #require(try readOne(profile: "p", transaction: "2.00000E+15").asRejected)
        #expect(
            rejected.message
                == "originalTransactionId '2.00000E+15' is in scientific notation: a spreadsheet probably rewrote the id; export the column as text."
        )
    }

    @Test func aProfileProblemIsReportedBeforeATransactionProblem() throws {
        let rejected = try #require(try readOne(profile: "", transaction: "x").asRejected)
        #expect(rejected.reason == .missingProfileId)
        #expect(rejected.originalTransactionId == "x")
    }

    @Test func rawValuesAreCutForTheJournal() throws {
        let long = String(repeating: "z", count: 1000)
        let rejected = try #require(try readOne(profile: long, transaction: "1").asRejected)
        #expect(rejected.profileId == String(repeating: "z", count: 256) + "…")
        #expect(rejected.message.count < 200)
        // At the limit exactly the value is kept whole; one scalar more and it is cut.
        let atLimit = String(repeating: "é", count: 256)
        #expect(RowValidation.truncated(atLimit) == atLimit)
        #expect(RowValidation.truncated(atLimit + "z") == atLimit + "…")
    }

    /// A signed transaction or receipt rejected before it gave an id is shown by its opening: the
    /// first 24 scalars, whole when it is no longer.
    @Test func aProofIsShownByItsOpening() {
        func shown(_ text: String) -> String? {
            var text = text
            return text.withUTF8 { RowValidation.proofOpening(.text($0)) }
        }
        let opening = "eyJhbGciOiJFUzI1NiIsIng1"
        #expect(opening.count == RowValidation.maxProofOpeningScalars)
        #expect(shown(opening) == opening)
        #expect(shown(opening + "Y") == opening + "…")
    }

    @Test func messagesEscapeControlCharacters() throws {
        let rejected = try #require(try readOne(profile: "a\u{1B}[31mred", transaction: "1").asRejected)
        #expect(!rejected.message.contains("\u{1B}"))
        #expect(rejected.message.contains("\\u001B"))
    }

    @Test func everyReasonHasTheDocumentedCode() {
        #expect(
            RejectionReason.allCases.map(\.rawValue) == [
                "missing_profile_id", "missing_transaction_id", "invalid_profile_id", "invalid_transaction_id",
                "scientific_notation", "malformed_csv", "malformed_json", "line_too_long", "duplicate_key",
                "invalid_signed_transaction", "invalid_receipt", "receipt_without_purchases", "wrong_bundle_id",
                "wrong_environment",
            ])
    }

    @Test(arguments: ["2.00000E+15", "2E15", "2e-3", "+1.5E+15", ".5e10", "2,5e+15"])
    func scientificNotationIsRecognised(_ text: String) {
        #expect(RowValidation.looksLikeScientificNotation(text))
    }

    @Test(arguments: ["E15", "2E", "2.5", "2E15x", "e", "", "1.2.3e4", "--1e5"])
    func otherTextIsNotScientificNotation(_ text: String) {
        #expect(!RowValidation.looksLikeScientificNotation(text))
    }
}
