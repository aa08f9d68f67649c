import BotsiAPI
import BotsiJournal
import Foundation
import Testing

@testable import BotsiRestore

/// `held` in the lifecycle table (issue 10): not final, not owed; only `--release-held` sends it,
/// and once sent it is a pending row. No SQLite here: the table alone.
@Suite struct HeldPolicyTests {
    typealias Policy = OutcomePolicy

    private static let now = Date()

    private static func mode(releaseHeld: Bool = false, retryFailed: Bool = false, refresh: Double? = nil)
        -> Policy.RunMode
    {
        var mode = Policy.RunMode()
        mode.releaseHeld = releaseHeld
        mode.retryFailed = retryFailed
        mode.refreshOlderThan = refresh
        return mode
    }

    @Test func aHeldRowIsNeitherFinalNorOwedByAPlainRun() {
        #expect(!ItemStatus.held.isFinal)
        #expect(Policy.selection(of: .held, mode: Self.mode()) == .notSent)
        #expect(!Policy.isOwed(status: .held, answeredAt: nil, profileId: "p", mode: Self.mode(), now: Self.now))
        #expect(!Policy.owedSelection(mode: Self.mode(), now: Self.now).statuses.contains(.held))
    }

    @Test func noOtherOptionSendsAHeldRow() {
        let others = Self.mode(retryFailed: true, refresh: 0)
        #expect(Policy.selection(of: .held, mode: others) == .notSent)
        let selection = Policy.owedSelection(mode: others, now: Self.now)
        #expect(!selection.statuses.contains(.held) && !selection.refreshStatuses.contains(.held))
    }

    @Test func releaseHeldSendsHeldRowsAndOnlyAddsThem() {
        let release = Self.mode(releaseHeld: true)
        #expect(Policy.selection(of: .held, mode: release) == .owed)
        #expect(Policy.isOwed(status: .held, answeredAt: nil, profileId: "p", mode: release, now: Self.now))
        #expect(Policy.owedSelection(mode: release, now: Self.now).statuses == [.pending, .held])
        for status in ItemStatus.allCases where status != .held {
            #expect(Policy.selection(of: status, mode: release) == Policy.selection(of: status, mode: Self.mode()))
        }
        #expect(release.selectors == [.plain, .releaseHeld])
    }

    @Test func aReleasedHeldRowWithoutADefinitiveAnswerBecomesPendingNotHeldAgain() {
        #expect(Policy.RowClass(.held) == .pending)
        let exhausted = Policy.action(for: .reply(.retriesExhausted), row: Policy.RowClass(.held))
        #expect(exhausted.write == .lastError)
        #expect(exhausted.attemptOutcome == .status(.pending))
        #expect(Policy.action(for: .killed, row: Policy.RowClass(.held)).write == .recoverPending)
        #expect(Policy.action(for: .reply(.restored), row: Policy.RowClass(.held)).write == .settle(.restored))
    }

    @Test func theRunOptionsCarryReleaseHeldIntoTheMode() {
        var options = RunOptions()
        #expect(options.onConflict == .send)
        #expect(!Policy.RunMode(options).releaseHeld)
        options.releaseHeld = true
        #expect(Policy.RunMode(options).releaseHeld)
    }

    @Test func theSummaryCountsHeldRowsApartFromPendingOnesAndSaysHowToReleaseThem() {
        var summary = RunSummary()
        summary.statuses = [.restored: 1, .held: 2]
        summary.codes = [StatusCode(.restored, nil): 1, StatusCode(.held, ItemStatus.heldCode): 2]
        summary.conflicts = ConflictCounts(groups: 1, rows: 3)
        summary.inputComplete = true
        #expect(summary.pending == 0)
        #expect(summary.held == 2)
        #expect(summary.finished == 1)
        let text = summary.render(journalPath: "j.sqlite")
        #expect(text.contains("transactions claimed by several profiles: 1 (3 rows in the journal)"))
        #expect(text.contains("held 2 rows"))
        #expect(text.contains("botsi-restore run --journal j.sqlite --release-held"))
        #expect(text.contains("botsi-restore report --journal j.sqlite --conflicts"))
    }
}
