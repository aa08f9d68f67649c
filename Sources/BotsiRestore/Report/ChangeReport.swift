import BotsiJournal
import Foundation

/// Which runs `report --changes` compares when not told.
public enum ChangeRange {
    /// The run before `later`, or in a merged journal, the run before the first of each shard
    /// journal's latest runs up to `later`: there the shards' runs interleave, and the run just
    /// before the latest is another shard's, whose comparison left out every other shard's night.
    public static func defaultEarlier(runs: [RunRecord], later: Int64) -> Int64 {
        var latestOfShard: [String: Int64] = [:]
        for run in runs where run.id <= later {
            // By the absolute path `merge` recorded (as `status` knows it), so two merges that
            // spelled one shard differently (`a.sqlite`, `/data/a.sqlite`) still name one shard.
            if let source = RecordedOptions(run.options).mergedSource { latestOfShard[source] = run.id }
        }
        let first = latestOfShard.values.min() ?? later
        return max(first - 1, 0)
    }
}

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
    /// A change as the columns read it: classified, each side's snapshot summarised once.
    struct Line {
        let change: RowChange
        let kind: ChangeKind
        let levelsBefore: AccessLevelSummary?
        let levelsAfter: AccessLevelSummary?
    }

    static let table: [ReportColumn<Line>] = [
        ReportColumn("profileId") { $1.text($0.change.profileId) },
        ReportColumn("originalTransactionId") { $1.text($0.change.originalTransactionId) },
        ReportColumn("change") { $1.text($0.kind.rawValue) },
        ReportColumn("statusBefore") { $1.text($0.change.before?.status.rawValue) },
        ReportColumn("statusAfter") { $1.text($0.change.after.status.rawValue) },
        ReportColumn("codeBefore") { $1.text($0.change.before?.code) },
        ReportColumn("codeAfter") { $1.text($0.change.after.code) },
        ReportColumn("profileStateBefore") { $1.text($0.change.before?.profileState) },
        ReportColumn("profileStateAfter") { $1.text($0.change.after.profileState) },
        ReportColumn("activeAccessLevelsBefore") { $1.text($0.levelsBefore.map(\.activeList)) },
        ReportColumn("activeAccessLevelsAfter") { $1.text($0.levelsAfter.map(\.activeList)) },
        ReportColumn("expiresAtBefore") { $1.text($0.levelsBefore?.latestExpiry) },
        ReportColumn("expiresAtAfter") { $1.text($0.levelsAfter?.latestExpiry) },
        ReportColumn("willRenewBefore") { $1.bool($0.levelsBefore?.willRenew) },
        ReportColumn("willRenewAfter") { $1.bool($0.levelsAfter?.willRenew) },
        ReportColumn("runBefore") { $1.number($0.change.before?.runID) },
        ReportColumn("runAfter") { $1.number($0.change.after.runID) },
        ReportColumn("source") { $1.text($0.change.source) },
    ]

    public static let columns = table.map(\.name)

    public var format: ReportFormat { writer.rows.format }
    private let writer: ColumnWriter<Line>

    /// `columns`: the ones to write, in that order (`--columns`); nil for all.
    public init(format: ReportFormat, sink: RowOutput, columns: [String]? = nil) throws(UnknownReportColumn) {
        writer = try ColumnWriter(format: format, columns: Self.table, chosen: columns, sink: sink)
    }

    /// Hands each line to `write` as it is finished.
    public init(format: ReportFormat, write: @escaping (String) -> Void) {
        // Every column: nothing to refuse.
        writer = try! ColumnWriter(format: format, columns: Self.table, chosen: nil, sink: .lines(write))
    }

    public func header() { writer.header() }

    public func finish() { writer.finish() }

    public func write(_ change: RowChange) {
        writer.write(
            Line(
                change: change, kind: ChangeKind.classify(before: change.before, after: change.after),
                levelsBefore: AccessLevelSummary(json: change.before?.accessLevels),
                levelsAfter: AccessLevelSummary(json: change.after.accessLevels)))
    }
}
