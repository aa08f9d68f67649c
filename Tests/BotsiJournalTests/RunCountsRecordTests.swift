import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// The run's record (`runs.counts`) is one type for the writer and every reader; these prove it
/// reads what earlier versions wrote, field by field, so a field renamed on one side only (or on
/// both, which old journals cannot follow) fails here.
@Suite struct RunCountsRecordTests {
    private static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/journals")

    /// Fields a version added after c6f06ff: absent from its records (`unrecordedRequests` is
    /// written only after a journal failure lost a reply's outcome).
    private static let newerThanC6f06ff: Set<String> = [
        "owedNotTakenUp", "stoppedAt", "rejectedInputs", "owedUnanswered", "otherShardsOwed",
        "unrecordedRequests",
    ]

    private func runs(of version: String) throws -> [RunRecord] {
        let workspace = Workspace()
        let copy = workspace.file("journal.sqlite")
        try FileManager.default.copyItem(
            atPath: Self.fixtures.appendingPathComponent("\(version)/journal.sqlite").path, toPath: copy)
        // A run's open upgrades it (schema 4 to 5); the records of its runs are carried as written.
        try Journal(path: copy, create: false).close()
        let journal = try Journal(path: copy, create: false, readOnly: true)
        defer { journal.close() }
        return try journal.runs()
    }

    @Test func everyFieldOfTheRecordReadsFromWhatC6f06ffWrote() throws {
        let runs = try runs(of: "c6f06ff")
        try #require(runs.count == 3, "the fixture's three runs (Tests/Fixtures/journals/c6f06ff/made-by.txt)")
        let stopped = runs[2].counts
        for child in Mirror(reflecting: stopped).children {
            guard let name = child.label, !Self.newerThanC6f06ff.contains(name) else { continue }
            let isNil =
                Mirror(reflecting: child.value).displayStyle == .optional
                && Mirror(reflecting: child.value).children.isEmpty
            #expect(!isNil, "runs.counts as c6f06ff wrote it has no '\(name)': renamed on one side only?")
        }
        #expect(stopped.stopCause == .windowEnd)
        #expect(stopped.statuses == [.restored: 5, .nothingToRestore: 1, .pending: 2])
        #expect(stopped.codes?[StatusCode(.pending, "internal_error")] == 2)
        #expect(stopped.codes?[StatusCode(.restored, nil)] == 5)
        #expect(stopped.rejectedByReason == ["missing_profile_id": 1, "scientific_notation": 1])
        #expect(stopped.alreadyFinished == [.profileNotFound: 1])
        #expect(stopped.owedRows == 8 && stopped.inputComplete == true)
        #expect(runs[0].counts.stopCause == nil && runs[0].counts.requests == 7)
    }

    @Test func whatTheRunWritesReadsBackAsItWasWritten() throws {
        var counts = RunCounts()
        counts.statuses = [.restored: 2, .pending: 1]
        counts.codes = [StatusCode(.restored, nil): 2, StatusCode(.pending, "http_503"): 1]
        counts.rejectedByReason = ["line_too_long": 1]
        counts.stopCause = .journalFailure
        counts.owedNotTakenUp = 4
        counts.rejectedInputs = ["/exports/b.csv"]
        let text = ColumnJSON.encode(counts)
        #expect(try ColumnJSON.decode(RunCounts.self, text, path: "j", column: "counts", row: 1) == counts)
        #expect(text.contains(#""pending\/http_503":1"#) || text.contains(#""pending/http_503":1"#), "\(text)")
    }

    @Test func aStopCauseThisVersionDoesNotKnowIsAClearErrorNotAGuess() {
        #expect(throws: JournalError.self) {
            try ColumnJSON.decode(RunCounts.self, #"{"stopCause":"meteor"}"#, path: "j", column: "counts", row: 3)
        }
    }
}
