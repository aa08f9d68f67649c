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

    static let failingStatuses: Set<String> = ["failed", "rejected", "pending", "in_flight"]

    public static func classify(before: RowState?, after: RowState) -> ChangeKind {
        let isFailing = failingStatuses.contains(after.status)
        guard let before else {
            if isFailing { return .newlyFailing }
            return after.status == "restored" ? .newlyRestored : .new
        }
        let wasFailing = failingStatuses.contains(before.status)
        if isFailing && !wasFailing { return .newlyFailing }
        if after.status == "restored" && before.status != "restored" { return .newlyRestored }
        if after.status == "restored" && before.status == "restored" {
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

    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        rows = FieldRowWriter(format: format, columns: Self.columns, tableColumns: Self.columns, write: write)
    }

    public func header() { rows.header() }

    public func finish() { rows.finish() }

    public func write(_ change: RowChange) {
        let kind = ChangeKind.classify(before: change.before, after: change.after)
        let levelsBefore = AccessLevelSummary(json: change.before?.accessLevels)
        let levelsAfter = AccessLevelSummary(json: change.after.accessLevels)
        typealias Field = ReportWriter.Field
        let fields: [(String, Field)] = [
            ("profileId", .text(change.profileId)),
            ("originalTransactionId", .text(change.originalTransactionId)),
            ("change", .text(kind.rawValue)),
            ("statusBefore", .optionalText(change.before?.status)),
            ("statusAfter", .text(change.after.status)),
            ("codeBefore", .optionalText(change.before?.code)),
            ("codeAfter", .optionalText(change.after.code)),
            ("profileStateBefore", .optionalText(change.before?.profileState)),
            ("profileStateAfter", .optionalText(change.after.profileState)),
            ("activeAccessLevelsBefore", .optionalText(levelsBefore.map { $0.active.joined(separator: " ") })),
            ("activeAccessLevelsAfter", .optionalText(levelsAfter.map { $0.active.joined(separator: " ") })),
            ("expiresAtBefore", .optionalText(levelsBefore?.latestExpiry)),
            ("expiresAtAfter", .optionalText(levelsAfter?.latestExpiry)),
            ("willRenewBefore", levelsBefore?.willRenew.map { .bool($0) } ?? .null),
            ("willRenewAfter", levelsAfter?.willRenew.map { .bool($0) } ?? .null),
            ("runBefore", change.before.map { .number(String($0.runID)) } ?? .null),
            ("runAfter", .number(String(change.after.runID))),
            ("source", .text(change.source)),
        ]
        rows.emit(fields)
    }
}
