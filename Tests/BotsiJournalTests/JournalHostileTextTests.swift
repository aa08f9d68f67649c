import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Ids are data, never SQL: whatever text an input holds is bound as a parameter and comes back
/// byte for byte.
@Suite struct JournalHostileTextTests {
    static let hostileProfiles = [
        "x'); DROP TABLE items;--",
        "'; DELETE FROM items WHERE '1'='1",
        "Robert\"); DROP TABLE runs; --",
        "p1' OR '1'='1",
        "%_\\' ; PRAGMA user_version=0; --",
        "２０００ ﬁ \u{202E}reversed",
    ]

    @Test func sqlTextInIdsIsStoredLiterallyAndTheTablesSurvive() throws {
        let directory = Workspace()
        let path = directory.file("j.sqlite")
        let journal = try Journal(path: path)
        let run = try StressFixture.startRun(journal)
        let now = Timestamp.string(Date())
        try journal.transaction { () throws(JournalError) in
            for (index, profile) in Self.hostileProfiles.enumerated() {
                let admission = try journal.admit(
                    profileId: profile, originalTransactionId: String(1000 + index), source: "in.csv:\(index + 2)",
                    runID: run, now: now)
                let expected = Admission.send(
                    itemID: Int64(index + 1),
                    mark: .admitted(itemID: Int64(index + 1), at: Timestamp.milliseconds(now) ?? 0))
                #expect(admission == expected)
            }
            // An input rejection keeps the raw text, NUL byte and all.
            try journal.recordRejection(
                file: "in.csv", line: 99, reason: "invalid_profile_id", message: "m",
                profileId: "a\u{0}b'); DROP TABLE rejections;--", originalTransactionId: "1; DROP TABLE attempts",
                runID: run, now: now)
        }
        journal.close()

        let reader = try Journal(path: path, create: false, readOnly: true)
        defer { reader.close() }
        #expect(try reader.integrityCheck() == "ok")
        var records: [ReportRecord] = []
        try reader.forEachReportRecord(ReportFilter()) { records.append($0) }
        #expect(records.prefix(Self.hostileProfiles.count).map(\.profileId) == Self.hostileProfiles)
        #expect(records.last?.profileId == "a\u{0}b'); DROP TABLE rejections;--")
        #expect(records.last?.originalTransactionId == "1; DROP TABLE attempts")
        let tables = try reader.connection.scalarInt(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', 'items', 'attempts', 'rejections')"
        )
        #expect(tables == 4)
        #expect(try reader.connection.scalarInt("PRAGMA user_version") == Schema.currentVersion)

        // Admitting the same text again finds the same row: lookups bind it too.
        let again = try Journal(path: path)
        defer { again.close() }
        let nextRun = try StressFixture.startRun(again)
        let admission = try again.transaction { () throws(JournalError) in
            try again.admit(
                profileId: Self.hostileProfiles[0], originalTransactionId: "1000", source: "in.csv:2", runID: nextRun,
                now: now)
        }
        // Found, not new: a pending row is sent as an owed row, before the input is read.
        #expect(admission == .finished(.pending))
    }
}
