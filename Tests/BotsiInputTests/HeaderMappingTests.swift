import Foundation
import Testing

@testable import BotsiInput

/// Which column of a CSV header holds each field, and what the reader says when the header does
/// not name them plainly: the choice between look-alike names, and the hints of a refused header.
@Suite struct HeaderMappingTests {
    func read(_ text: String, options: InputOptions = .init()) throws -> [InputRecord] {
        try readBytes(Array(text.utf8), name: "input.csv", options: options).records
    }

    func missingMessage(_ text: String, options: InputOptions = .init()) -> String {
        expectInputError(.missingColumns) { _ = try read(text, options: options) }?.message ?? ""
    }

    @Test func theTransactionColumnMayComeFirst() throws {
        #expect(try read("originalTransactionId,profileId\n1,p\n") == [row("p", "1", line: 2)])
    }

    // MARK: picking one of several

    @Test func aPickedNameIsComparedWithoutItsSurroundingSpaces() throws {
        let options = InputOptions(columns: ColumnNames(profile: " PROFILEID "))
        let records = try read("profileId,PROFILEID,originalTransactionId\np,q,1\n", options: options)
        #expect(records == [row("q", "1", line: 2)])
    }

    @Test func aPickedNameSpeltLikeNeitherColumnLeavesThemAmbiguous() throws {
        // It matches both once case is ignored and neither as written: naming either would be a guess.
        let options = InputOptions(columns: ColumnNames(profile: "ProfileID"))
        let error = expectInputError(.notTabular) {
            _ = try read("profileId,PROFILEID,originalTransactionId\np,q,1\n", options: options)
        }
        #expect(error?.message.contains("'profileId' (column 1) and 'PROFILEID' (column 2)") == true)
    }

    @Test func threeColumnsForOneFieldAreListedInOrder() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("profileId,profile_id,originalTransactionId,Profile ID\np,q,1,r\n")
        }
        #expect(
            error?.message.contains(
                "has 3 columns for the profile id in its header on line 1: 'profileId' (column 1), 'profile_id' (column 2) and 'Profile ID' (column 4)."
            ) == true, "\(error?.message ?? "")")
    }

    // MARK: hints of a refused header

    @Test func aNearMissIsSuggestedForTheMissingFieldOnly() {
        let transaction = missingMessage("profile_id,original_transaction\np,1\n")
        #expect(!transaction.contains("for the profile id"), "\(transaction)")
        let profile = missingMessage("profil_id,originalTransactionId\np,1\n")
        #expect(
            profile.contains("Did you mean 'profil_id' for the profile id? If so, pass --profile-column profil_id."),
            "\(profile)")
        #expect(!profile.contains("for the original transaction id"), "\(profile)")
    }

    @Test func anEmptyColumnNameIsNeverSuggested() {
        // A trailing delimiter gives an empty name, one edit from a one-letter column name.
        let message = missingMessage("profileId,\np,1\n", options: InputOptions(columns: ColumnNames(transaction: "t")))
        #expect(!message.contains("Did you mean"), "\(message)")
    }

    @Test(arguments: [
        "original_transaction0", "original_transaction9", "original.transaction", "original_transaction_az",
        "ORIGINAL_TRANSACTION_AZ", "original-transaction-i",
    ])
    func aSuggestedNameOfPlainCharactersIsGivenBare(name: String) {
        let message = missingMessage("profileId,\(name)\np,1\n")
        #expect(message.contains("pass --transaction-column \(name)."), "\(message)")
    }

    @Test(arguments: [
        ("original transaction", "'original transaction'"), ("original_transaction's", #"'original_transaction'\''s'"#),
    ])
    func aSuggestedNameIsQuotedForTheShell(name: String, word: String) {
        let message = missingMessage("profileId,\(name)\np,1\n")
        #expect(message.contains("pass --transaction-column \(word)."), "\(message)")
    }

    @Test func aLongHeaderIsShownUpToTwentyNames() {
        let names = (1...21).map { "c\($0)" }
        let twentyOne = missingMessage(names.joined(separator: ",") + "\n")
        #expect(twentyOne.contains("'c19', 'c20' and 1 more;"), "\(twentyOne)")
        let twenty = missingMessage(names.dropLast().joined(separator: ",") + "\n")
        #expect(twenty.contains("'c19', 'c20';"), "\(twenty)")
    }

    @Test func aNameOfSixOrMoreDigitsSuggestsTheFileHasNoHeader() {
        #expect(missingMessage("u,900000\n").contains("--no-header"))
        #expect(!missingMessage("u,90000\n").contains("--no-header"))
    }

    @Test func theDelimiterHintNeedsAOneColumnHeaderAndAnotherDelimiter() {
        #expect(!missingMessage("profileId;originalTransactionId,x\n").contains("--delimiter"))
        // Quoted, the name holds the delimiter given: that is no reason to suggest it again.
        let quoted = missingMessage(
            "\"profileId;originalTransactionId\"\n", options: InputOptions(delimiter: UInt8(ascii: ";")))
        #expect(!quoted.contains("--delimiter"), "\(quoted)")
    }

    @Test(arguments: [("\t", "tabs; pass --delimiter tab."), ("|", "pipes (|); pass --delimiter '|'.")])
    func theDelimiterHintNamesTheDelimiterAndItsFlagValue(separator: String, hint: String) {
        let message = missingMessage(
            "profileId\(separator)originalTransactionId\np\(separator)1\n",
            options: InputOptions(delimiter: ASCII.comma))
        #expect(message.contains("The header seems to be separated by \(hint)"), "\(message)")
    }
}
