import BotsiJournal
import Foundation

/// How a row changed between two runs, most telling first: a row gets the first kind that fits.
public enum ChangeKind: String, Sendable, CaseIterable {
    /// Now failing (`failed`, `rejected`, or `pending` after its retries) and was not before.
    case newlyFailing = "newly_failing"
    /// Now `restored` and was not before (or was never sent).
    case newlyRestored = "newly_restored"
    /// Restored in both, and an access level active before is not active now.
    case lostAccess = "lost_access"
    /// Restored in both, and an access level not active before is active now.
    case gainedAccess = "gained_access"
    /// Restored in both; state, expiry or renewal changed, but no access level came or went.
    case snapshotChanged = "snapshot_changed"
    /// Was failing, now a final answer other than `restored`.
    case recovered
    /// First sent after the earlier run, with an answer other than the above.
    case new
    /// The same status with another code (e.g. a pending row's last error, or another 4xx).
    case codeChanged = "code_changed"
    /// Any other change of status (e.g. `restored` to `nothing_to_restore`).
    case statusChanged = "status_changed"

    static let failingStatuses: Set<ItemStatus> = [.failed, .rejected, .pending, .inFlight]

    public static func classify(before: RowState?, after: RowState) -> ChangeKind {
        let isFailing = failingStatuses.contains(after.status)
        guard let before else {
            if isFailing { return .newlyFailing }
            return after.status == .restored ? .newlyRestored : .new
        }
        let wasFailing = failingStatuses.contains(before.status)
        if isFailing && !wasFailing { return .newlyFailing }
        if after.status == .restored && before.status != .restored { return .newlyRestored }
        if after.status == .restored && before.status == .restored {
            let activeBefore = Set(AccessLevelSummary(json: before.accessLevels)?.active ?? [])
            let activeAfter = Set(AccessLevelSummary(json: after.accessLevels)?.active ?? [])
            if !activeBefore.isSubset(of: activeAfter) { return .lostAccess }
            if !activeAfter.isSubset(of: activeBefore) { return .gainedAccess }
            return .snapshotChanged
        }
        if wasFailing && !isFailing { return .recovered }
        if before.status == after.status { return .codeChanged }
        return .statusChanged
    }
}

/// Writes `report --changes` rows: the pair, the kind of change, and each side's status and
/// profile snapshot as of the two runs.
public struct ChangeWriter {
    public static let columns = [
        "profileId", "originalTransactionId", "change", "statusBefore", "statusAfter", "codeBefore", "codeAfter",
        "profileStateBefore", "profileStateAfter", "activeAccessLevelsBefore", "activeAccessLevelsAfter",
        "expiresAtBefore", "expiresAtAfter", "willRenewBefore", "willRenewAfter", "runBefore", "runAfter", "source",
    ]

    public var format: ReportFormat { rows.format }
    private let rows: FieldRowWriter

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        self.init(format: format, output: ReportOutput(lines: write))
    }

    /// Hands the report to `writeChunk` in chunks of about 256 KiB.
    public init(format: ReportFormat, writeChunk: @escaping ([UInt8]) -> Void) {
        self.init(format: format, output: ReportOutput(chunks: writeChunk))
    }

    private init(format: ReportFormat, output: ReportOutput) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.columns, output: output)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    /// One line: the cells in the order of `columns`.
    public func write(_ change: RowChange) {
        let kind = ChangeKind.classify(before: change.before, after: change.after)
        let levelsBefore = AccessLevelSummary(json: change.before?.accessLevels)
        let levelsAfter = AccessLevelSummary(json: change.after.accessLevels)
        rows.text(change.profileId)
        rows.text(change.originalTransactionId)
        rows.text(kind.rawValue)
        rows.text(change.before?.status.rawValue)
        rows.text(change.after.status.rawValue)
        rows.text(change.before?.code)
        rows.text(change.after.code)
        rows.text(change.before?.profileState)
        rows.text(change.after.profileState)
        rows.text(levelsBefore.map(\.activeList))
        rows.text(levelsAfter.map(\.activeList))
        rows.text(levelsBefore?.latestExpiry)
        rows.text(levelsAfter?.latestExpiry)
        rows.bool(levelsBefore?.willRenew)
        rows.bool(levelsAfter?.willRenew)
        rows.number(change.before?.runID)
        rows.number(change.after.runID)
        rows.text(change.source)
        rows.endRow()
    }
}
