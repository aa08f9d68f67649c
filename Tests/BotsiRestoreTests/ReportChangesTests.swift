import BotsiRestore
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiJournal

/// Access levels JSON as the runner journals it.
func levels(_ active: Bool, expires: String = "2027-01-01T00:00:00.000Z") -> String {
    #"{"premium":{"expiresAt":"\#(expires)","isActive":\#(active),"willRenew":true}}"#
}

func state(_ status: ItemStatus, run: Int64 = 1, levels: String? = nil) -> RowState {
    RowState(
        status: status, code: nil, httpStatus: nil, runID: run, attemptedAt: "",
        profileState: levels == nil ? nil : "x",
        accessLevels: levels)
}

struct ClassifyCase: Sendable, CustomTestStringConvertible {
    let before: RowState?
    let after: RowState
    let expected: ChangeKind
    var testDescription: String { expected.rawValue }
}

@Suite struct ReportChangeKindTests {
    static let cases: [ClassifyCase] = [
        ClassifyCase(before: nil, after: state(.restored, levels: levels(true)), expected: .newlyRestored),
        ClassifyCase(before: nil, after: state(.failed), expected: .newlyFailing),
        ClassifyCase(before: nil, after: state(.nothingToRestore), expected: .new),
        ClassifyCase(
            before: state(.pending), after: state(.restored, levels: levels(true)), expected: .newlyRestored),
        ClassifyCase(before: state(.restored, levels: levels(true)), after: state(.pending), expected: .newlyFailing),
        ClassifyCase(
            before: state(.restored, levels: levels(true)), after: state(.restored, levels: levels(false)),
            expected: .lostAccess),
        ClassifyCase(
            before: state(.restored, levels: levels(false)), after: state(.restored, levels: levels(true)),
            expected: .gainedAccess),
        ClassifyCase(
            before: state(.restored, levels: levels(true)),
            after: state(.restored, levels: levels(true, expires: "2028-01-01T00:00:00.000Z")),
            expected: .snapshotChanged),
        ClassifyCase(before: state(.failed), after: state(.profileNotFound), expected: .recovered),
        ClassifyCase(
            before: state(.restored, levels: levels(true)), after: state(.nothingToRestore),
            expected: .statusChanged),
        ClassifyCase(
            before: RowState(
                status: .pending, code: "http_503", httpStatus: 503, runID: 1, attemptedAt: "", profileState: nil,
                accessLevels: nil),
            after: RowState(
                status: .pending, code: "timeout", httpStatus: nil, runID: 2, attemptedAt: "", profileState: nil,
                accessLevels: nil), expected: .codeChanged),
        // Rows in flight and rows Botsi rejected are failing too.
        ClassifyCase(before: state(.restored, levels: levels(true)), after: state(.inFlight), expected: .newlyFailing),
        ClassifyCase(before: state(.nothingToRestore), after: state(.rejected), expected: .newlyFailing),
        // Restored now, after any answer that was not a restore.
        ClassifyCase(
            before: state(.nothingToRestore), after: state(.restored, levels: levels(true)), expected: .newlyRestored),
        // One active level for another: the one lost is what matters, though as many are active.
        ClassifyCase(
            before: state(.restored, levels: levels(true)),
            after: state(.restored, levels: levels(true).replacingOccurrences(of: "premium", with: "gold")),
            expected: .lostAccess),
        // Another status with another code is a change of status, not of code.
        ClassifyCase(
            before: RowState(
                status: .profileNotFound, code: "not_found", httpStatus: 404, runID: 1, attemptedAt: "",
                profileState: nil, accessLevels: nil),
            after: RowState(
                status: .nothingToRestore, code: "nothing_to_restore", httpStatus: 200, runID: 2, attemptedAt: "",
                profileState: nil, accessLevels: nil), expected: .statusChanged),
    ]

    @Test(arguments: cases)
    func eachKindIsRecognised(_ testCase: ClassifyCase) {
        #expect(ChangeKind.classify(before: testCase.before, after: testCase.after) == testCase.expected)
    }

    /// Each "before" column is the earlier run's, each "after" column the later one's, and each
    /// of the pair's columns its own field: every value differs from the others.
    @Test func eachSideOfAChangeIsWrittenInItsOwnColumns() throws {
        let before = levels(true).replacingOccurrences(of: "premium", with: "gold")
        let after = #"{"premium":{"expiresAt":"2028-01-01T00:00:00.000Z","isActive":true,"willRenew":false}}"#
        let change = RowChange(
            profileId: "p", originalTransactionId: "2000000000000012", source: "in.csv:2",
            before: RowState(
                status: .restored, code: "code-1", httpStatus: 200, runID: 1, attemptedAt: "",
                profileState: "state-1", accessLevels: before),
            after: RowState(
                status: .restored, code: "code-2", httpStatus: 200, runID: 2, attemptedAt: "",
                profileState: "state-2", accessLevels: after))
        var lines: [String] = []
        let writer = ChangeWriter(format: .csv) { lines.append($0) }
        writer.header()
        writer.write(change)
        writer.finish()
        let row = try #require(csvRecord(lines), "\(lines)")
        #expect(
            row == [
                "profileId": "p", "originalTransactionId": "2000000000000012", "change": "lost_access",
                "statusBefore": "restored", "statusAfter": "restored", "codeBefore": "code-1", "codeAfter": "code-2",
                "profileStateBefore": "state-1", "profileStateAfter": "state-2", "activeAccessLevelsBefore": "gold",
                "activeAccessLevelsAfter": "premium", "expiresAtBefore": "2027-01-01T00:00:00.000Z",
                "expiresAtAfter": "2028-01-01T00:00:00.000Z", "willRenewBefore": "true", "willRenewAfter": "false",
                "runBefore": "1", "runAfter": "2", "source": "in.csv:2",
            ], "\(row)")
    }
}

/// A journal written through the journal's own API, one attempt at a time.
struct JournalBuilder {
    let journal: Journal
    var items: [String: Int64] = [:]
    var clock = Date(timeIntervalSince1970: 1_800_000_000)

    init(path: String) throws {
        journal = try Journal(path: path)
    }

    mutating func startRun() throws -> Int64 {
        clock += 60
        return try journal.startRun(
            startedAt: clock, toolVersion: "test", host: "test", pid: 1, optionsJSON: "{}")
    }

    /// One attempt for `profile` in `run`; `outcome` is a status or `retry`. `httpStatus` defaults
    /// to 200 for a restore and 503 for anything else; `access` is the reply's snapshot.
    mutating func attempt(
        _ profile: String, run: Int64, outcome: String, code: String? = nil, access: String? = nil,
        httpStatus: Int? = -1
    ) throws {
        clock += 1
        let now = Timestamp.string(clock)
        if items[profile] == nil {
            let admission = try journal.admit(
                profileId: profile, originalTransactionId: "2000000000000002", source: "in.csv:1", runID: run,
                now: now)
            guard case .send(let itemID, _) = admission else { throw CancellationError() }
            items[profile] = itemID
        }
        let itemID = items[profile]!
        let profileRecord = access.map { ProfileRecord(state: "subscribed", accessLevelsJSON: $0) }
        try journal.recordAttempt(
            itemID: itemID, runID: run, number: 1, startedAt: clock, durationMilliseconds: 5,
            httpStatus: httpStatus == -1 ? (outcome == "restored" ? 200 : 503) : httpStatus, code: code,
            outcome: try #require(AttemptOutcome(rawValue: outcome)), profile: profileRecord)
        if outcome != "retry" {
            try journal.recordOutcome(
                itemID: itemID, status: ItemStatus(rawValue: outcome)!, code: code, httpStatus: nil, message: nil,
                now: now, profile: profileRecord)
        }
    }
}

func changes(_ path: String, since: Int64, until: Int64) throws -> [String: (RowChange, ChangeKind)] {
    let journal = try Journal(path: path, create: false, readOnly: true)
    defer { journal.close() }
    var result: [String: (RowChange, ChangeKind)] = [:]
    try journal.forEachChange(since: since, until: until) { change in
        result[change.profileId] = (change, ChangeKind.classify(before: change.before, after: change.after))
    }
    return result
}

@Suite struct ReportChangesTests {
    @Test func aRowsStateAsOfARunIsItsLastAttemptUpToThatRun() throws {
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        let first = try builder.startRun()
        try builder.attempt("same", run: first, outcome: "restored", access: levels(true))
        try builder.attempt("loses", run: first, outcome: "restored", access: levels(true))
        try builder.attempt("recovers", run: first, outcome: "retry", code: "http_503")
        try builder.attempt("recovers", run: first, outcome: "pending", code: "http_503")
        try builder.attempt("breaks", run: first, outcome: "restored", access: levels(true))
        try builder.attempt("untouched", run: first, outcome: "restored", access: levels(true))
        try builder.attempt("renews", run: first, outcome: "restored", access: levels(true))
        let second = try builder.startRun()
        try builder.attempt("same", run: second, outcome: "restored", access: levels(true))
        try builder.attempt("loses", run: second, outcome: "restored", access: levels(false))
        try builder.attempt("recovers", run: second, outcome: "retry", code: "timeout")
        try builder.attempt("recovers", run: second, outcome: "restored", access: levels(true))
        try builder.attempt("breaks", run: second, outcome: "failed", code: "http_418")
        try builder.attempt("appears", run: second, outcome: "nothing_to_restore", code: "nothing_to_restore")
        try builder.attempt("renews", run: second, outcome: "restored", access: levels(true, expires: "2030-01-01"))
        let third = try builder.startRun()
        try builder.attempt("same", run: third, outcome: "failed", code: "http_418")
        builder.journal.close()

        let between = try changes(path, since: first, until: second)
        #expect(Set(between.keys) == ["loses", "recovers", "breaks", "appears", "renews"])
        #expect(between["loses"]?.1 == .lostAccess)
        #expect(between["recovers"]?.1 == .newlyRestored)
        #expect(between["recovers"]?.0.before?.status == .pending)
        #expect(between["recovers"]?.0.before?.code == "http_503")
        #expect(between["breaks"]?.1 == .newlyFailing)
        #expect(between["breaks"]?.0.after.code == "http_418")
        #expect(between["appears"]?.1 == .new)
        #expect(between["appears"]?.0.before == nil)
        #expect(between["renews"]?.1 == .snapshotChanged)

        let lastNight = try changes(path, since: second, until: third)
        #expect(Set(lastNight.keys) == ["same"])
        #expect(lastNight["same"]?.1 == .newlyFailing)
        #expect(lastNight["same"]?.0.before?.runID == second)
        #expect(lastNight["same"]?.0.after.runID == third)
    }

    @Test func realRunsThatFailThenRecoverShowAsNewlyFailingThenNewlyRestored() throws {
        let directory = Workspace()
        let journal = directory.file("nightly.sqlite")
        let input = directory.csv(
            "in.csv", rows: [("p-restored", "2000000000000002"), ("p-nothing", "2000000000000010")])
        let healthy = try startSimulator()
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
            options.retryAfterSeconds = 0
        }
        let first = try runJob([input], journal: journal, baseURL: failing.baseURL) { $0.maxAttempts = 2 }
        #expect(first.exitCode == 75)
        #expect(try runJob([input], journal: journal, baseURL: healthy.baseURL).exitCode == 0)
        // A refresh that gets no answer keeps every row as it was: no change to report.
        let third = try runJob([input], journal: journal, baseURL: failing.baseURL) { options in
            options.refreshOlderThan = 0
            options.maxAttempts = 2
        }
        #expect(third.requests == 4)
        #expect(third.kept == 2)

        let failed = try changes(journal, since: 0, until: 1)
        #expect(failed["p-restored"]?.1 == .newlyFailing)
        #expect(failed["p-restored"]?.0.after.status == .pending)
        #expect(failed["p-restored"]?.0.after.code == "http_503")
        var recovered = try changes(journal, since: 1, until: 2)
        #expect(recovered["p-restored"]?.1 == .newlyRestored)
        #expect(recovered["p-restored"]?.0.after.accessLevels?.contains("isActive") == true)
        #expect(recovered["p-nothing"]?.1 == .recovered)
        #expect(try changes(journal, since: 2, until: 3).isEmpty)
        _ = recovered.removeValue(forKey: "p-nothing")

        var lines: [String] = []
        let writer = ChangeWriter(format: .csv) { lines.append($0) }
        writer.header()
        for (change, _) in recovered.values { writer.write(change) }
        writer.finish()
        #expect(lines.first == ChangeWriter.columns.joined(separator: ",") + "\r\n")
        #expect(lines.count == 2)
        #expect(lines.last?.contains(",newly_restored,pending,restored,http_503,") == true)
    }

    /// A change names where its row was read last: the input the later run read it from, at its
    /// line there, not the file it first came from.
    @Test func aChangeNamesTheInputItsRowWasReadFromLast() throws {
        let directory = Workspace()
        let journal = directory.file("moved.sqlite")
        let first = directory.csv("first.csv", rows: [("p-a", "2000000000000002"), ("p-b", "2000000000000010")])
        let moved = directory.csv(
            "moved.csv", rows: [("p-c", "2000000000000028"), ("p-b", "2000000000000010"), ("p-a", "2000000000000002")])
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.unavailable]
            options.retryAfterSeconds = 0
        }
        #expect(try runJob([first], journal: journal, baseURL: failing.baseURL) { $0.maxAttempts = 1 }.exitCode == 75)
        let healthy = try startSimulator()
        #expect(try runJob([moved], journal: journal, baseURL: healthy.baseURL).exitCode == 0)
        let found = try changes(journal, since: 1, until: 2)
        #expect(found["p-a"]?.0.source == moved + ":4")
        #expect(found["p-b"]?.0.source == moved + ":3")
        #expect(found["p-c"]?.0.source == moved + ":2")
    }
}
