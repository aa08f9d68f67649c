import BotsiAPI
import Foundation
import Testing

@testable import BotsiRestore

/// The access-level snapshot the journal keeps per row: what `report`, `--changes` and the
/// metrics read back, so its bytes are the contract.
@Suite struct AccessLevelsJSONTests {
    @Test func levelsInNameOrderWithFieldsInKeyOrderAndNullsLeftOut() {
        let levels = [
            "vip": AccessLevelSnapshot(isActive: false),
            "premium": AccessLevelSnapshot(
                isActive: true, expiresAt: "2026-12-31T00:00:00Z", willRenew: false, sourceProductId: "com.app.year"),
            "empty": AccessLevelSnapshot(),
        ]
        #expect(
            RunJournalWriter.accessLevelsJSON(levels)
                == #"{"empty":{},"premium":{"expiresAt":"2026-12-31T00:00:00Z","isActive":true,"#
                + #""sourceProductId":"com.app.year","willRenew":false},"vip":{"isActive":false}}"#)
    }

    @Test func noLevelsIsAnEmptyObjectAndOneLevelNeedsNoSort() {
        #expect(RunJournalWriter.accessLevelsJSON([:]) == "{}")
        #expect(
            RunJournalWriter.accessLevelsJSON(["pro": AccessLevelSnapshot(willRenew: true)])
                == #"{"pro":{"willRenew":true}}"#)
        let all = AccessLevelSnapshot(isActive: false, expiresAt: "2027-01-01", willRenew: true, sourceProductId: "m")
        #expect(
            RunJournalWriter.accessLevelsJSON(["pro": all])
                == #"{"pro":{"expiresAt":"2027-01-01","isActive":false,"sourceProductId":"m","willRenew":true}}"#)
    }

    @Test func namesAndValuesAreEscapedAndReadBackByFoundation() throws {
        let levels = ["a\"b\n": AccessLevelSnapshot(expiresAt: "x\\y\u{1b}", sourceProductId: "p\u{202e}")]
        let json = RunJournalWriter.accessLevelsJSON(levels)
        let decoded = try JSONDecoder().decode([String: AccessLevelSnapshot].self, from: Data(json.utf8))
        #expect(decoded == levels)
        #expect(!json.contains("\u{1b}") && !json.contains("\u{202e}"))
    }
}
