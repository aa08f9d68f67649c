import BotsiJournal
import Foundation

/// The other half of the lifecycle table: which rows a run works on besides the new pairs of its
/// input, by status and by the options that choose them (`docs/lifecycle.md`, "Modes").
extension OutcomePolicy {
    /// The options that choose which rows the journal owes a run.
    public enum Selector: String, Sendable, CaseIterable {
        case plain = "every run"
        case retryFailed = "--retry-failed"
        case refresh = "--refresh-older-than D"
        case releaseHeld = "--release-held"
    }

    /// Whether a run sends a row of some status that its input does not bring as a new pair.
    public enum Selection: String, Sendable {
        case owed = "sent"
        case ifAnsweredBefore = "sent when its last definitive answer is older than D"
        case notSent = "not sent"
    }

    /// The selection table: for each status, what each selector does with it. A run's selectors
    /// add up; `--dry-run` lists the same rows and sends none; `--shard I/N` keeps the rows whose
    /// profileId hashes to I.
    public static let selections: [(status: ItemStatus, selector: Selector, selection: Selection)] = {
        var table: [(ItemStatus, Selector, Selection)] = []
        for status in ItemStatus.allCases {
            for selector in Selector.allCases {
                let selection: Selection
                switch (status, selector) {
                case (.pending, _), (.inFlight, _): selection = .owed
                case (.failed, .retryFailed), (.profileNotFound, .retryFailed), (.rejected, .retryFailed):
                    selection = .owed
                case (.restored, .refresh), (.nothingToRestore, .refresh): selection = .ifAnsweredBefore
                // Held rows wait for a person's review: only `--release-held` sends them.
                case (.held, .releaseHeld): selection = .owed
                default: selection = .notSent
                }
                table.append((status, selector, selection))
            }
        }
        return table
    }()

    /// How a run is invoked, as far as the lifecycle cares.
    public struct RunMode: Sendable, Equatable {
        public var retryFailed = false
        /// Seconds: `--refresh-older-than`.
        public var refreshOlderThan: Double?
        public var releaseHeld = false
        /// `--answered-before`: the final rows the selectors choose are only those last answered
        /// before this instant (the continuation of a selection run that stopped).
        public var answeredBefore: Date?
        public var dryRun = false
        public var shardIndex = 0
        public var shardCount = 1

        public init() {}

        public init(_ options: RunOptions) {
            retryFailed = options.retryFailed
            refreshOlderThan = options.refreshOlderThan
            releaseHeld = options.releaseHeld
            answeredBefore = options.answeredBefore.flatMap(Timestamp.date)
            dryRun = options.dryRun
            shardIndex = options.shardIndex
            shardCount = options.shardCount
        }

        public var selectors: [Selector] {
            [.plain] + (retryFailed ? [.retryFailed] : []) + (refreshOlderThan != nil ? [.refresh] : [])
                + (releaseHeld ? [.releaseHeld] : [])
        }

        /// Whether the row belongs to this run's shard.
        public func owns(profileId: String) -> Bool {
            shardCount <= 1 || BotsiRestore.shardIndex(profileId: profileId, shardCount: shardCount) == shardIndex
        }
    }

    /// What the table says a run in `mode` does with a row in `status` that it did not bring as
    /// a new pair: the strongest of its selectors' selections.
    public static func selection(of status: ItemStatus, mode: RunMode) -> Selection {
        let chosen = selections.filter { $0.status == status && mode.selectors.contains($0.selector) }.map(\.selection)
        if chosen.contains(.owed) { return .owed }
        if chosen.contains(.ifAnsweredBefore) { return .ifAnsweredBefore }
        return .notSent
    }

    /// Whether a run in `mode` started at `now` sends a row (its status, last definitive answer
    /// and profileId given).
    public static func isOwed(
        status: ItemStatus, answeredAt: Date?, profileId: String, mode: RunMode, now: Date
    ) -> Bool {
        guard mode.owns(profileId: profileId) else { return false }
        // A stopped selection's continuation leaves out the final rows it did get to.
        if status.isFinal, let cutoff = mode.answeredBefore, !(answeredAt.map { $0 < cutoff } ?? false) {
            return false
        }
        switch selection(of: status, mode: mode) {
        case .owed: return true
        case .notSent: return false
        case .ifAnsweredBefore:
            guard let answeredAt, let age = mode.refreshOlderThan else { return false }
            return answeredAt < now.addingTimeInterval(-age)
        }
    }

    /// The same choice as the journal's query for a run in `mode` started at `now` (the shard
    /// is applied to the rows it returns).
    public static func owedSelection(mode: RunMode, now: Date) -> OwedSelection {
        var selection = OwedSelection(statuses: [])
        for status in ItemStatus.allCases {
            switch Self.selection(of: status, mode: mode) {
            case .owed: selection.statuses.insert(status)
            case .ifAnsweredBefore: selection.refreshStatuses.insert(status)
            case .notSent: break
            }
        }
        // A run recovers rows left in flight before it selects: none is `in_flight` by then.
        selection.statuses.remove(.inFlight)
        if let age = mode.refreshOlderThan, !selection.refreshStatuses.isEmpty {
            selection.answeredBefore = now.addingTimeInterval(-age)
            if let cutoff = mode.answeredBefore { selection.answeredBefore = min(selection.answeredBefore!, cutoff) }
        }
        selection.finalAnsweredBefore = mode.answeredBefore
        return selection
    }
}
