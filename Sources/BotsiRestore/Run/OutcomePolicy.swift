import BotsiAPI
import BotsiBasics
import BotsiJournal
import Foundation

/// The row lifecycle, decided in one place: what an event does to a journal row. Pure and
/// synchronous — no curl, no SQLite, no clock: the runner hands it the reply and the facts it
/// holds (attempts, budget, whether the run is stopping) and carries out the decision. Its
/// `rules` are the table `docs/lifecycle.md` is generated from (`LifecycleDocument`).
public struct OutcomePolicy: Sendable, Equatable {
    /// A row as the table tells rows apart: not finished yet (`pending`, or `in_flight` on disk
    /// while it is sent, or `held` and released by `--release-held`: releasing makes it owed), or
    /// holding a final status.
    public enum RowClass: String, Sendable, CaseIterable {
        case pending
        case final

        public init(_ status: ItemStatus) { self = status.isFinal ? .final : .pending }
    }

    /// A reply to one request, classed with the facts that decide between retrying and stopping.
    public enum ReplyClass: String, Sendable, CaseIterable {
        // Definitive: Botsi answered for this row.
        case restored, nothingToRestore, profileNotFound, rejected, failed
        // Not definitive: 408, 429, 5xx, timeout, connection error, unreadable 200 ...
        /// ... with attempts and retry budget left while the run goes on.
        case retryable
        /// ... on the row's `--max-attempts`th attempt of this run.
        case retriesExhausted
        /// ... when the run-wide retry budget cannot pay for another attempt.
        case budgetExhausted
        /// ... after the run began to stop.
        case retryableWhileStopping
        // Not definitive, and the run must stop.
        case unauthorized, forbidden, iosSettingsMissing, tlsFailure

        /// The stop a reply of this class causes; nil for the classes that do not stop the run.
        public var stopCause: StopCause? {
            switch self {
            case .unauthorized: .unauthorized
            case .forbidden: .forbidden
            case .iosSettingsMissing: .iosSettingsMissing
            case .tlsFailure: .tlsFailure
            case .restored, .nothingToRestore, .profileNotFound, .rejected, .failed, .retryable, .retriesExhausted,
                .budgetExhausted, .retryableWhileStopping:
                nil
            }
        }

        /// The final status a definitive reply gives the row; nil for the others.
        public var definitiveStatus: ItemStatus? {
            switch self {
            case .restored: .restored
            case .nothingToRestore: .nothingToRestore
            case .profileNotFound: .profileNotFound
            case .rejected: .rejected
            case .failed: .failed
            default: nil
            }
        }
    }

    /// What happens to a row.
    public enum Event: Hashable, Sendable {
        /// A reply to the row's request arrived.
        case reply(ReplyClass)
        /// The run stopped while the row waited out a backoff or was not sent yet.
        case stop(StopCause)
        /// The process died (kill -9, power loss) while the row was in flight; the next run's
        /// start deals with it.
        case killed

        public static let allCases: [Event] =
            ReplyClass.allCases.map(Event.reply) + StopCause.allCases.filter(\.isRecorded).map(Event.stop) + [.killed]
    }

    /// What the journal records for a row after an event.
    public enum Write: Hashable, Sendable {
        /// A definitive answer: status and code (and a 200's profile snapshot) replace the row's,
        /// and its time becomes the row's `answered_at`.
        case settle(ItemStatus)
        /// The row stays `pending`, its code and message the last error's.
        case lastError
        /// The attempt is recorded; the row keeps its status, code and snapshot.
        case attemptOnly
        /// Nothing is written to the row; what happened is on record as earlier attempts.
        case nothing
        /// At the next run's start the row, left `in_flight`, becomes `pending` again.
        case recoverPending
        /// At the next run's start the row's in-flight mark is cleared; it stays as it was.
        case clearMark
    }

    /// What the run does with the row after the write.
    public enum Next: String, Hashable, Sendable {
        /// No more attempts for this row in this run.
        case done
        /// Sent again after the backoff delay.
        case retry
    }

    public struct Action: Hashable, Sendable {
        public var write: Write
        public var next: Next
        /// Set when the event stops the whole run.
        public var stopsRun: StopCause?

        public init(_ write: Write, _ next: Next = .done, stopsRun: StopCause? = nil) {
            self.write = write
            self.next = next
            self.stopsRun = stopsRun
        }

        /// The attempt's `outcome` column: the status the row took, `retry`, or `kept` when a
        /// final row kept its status for want of a definitive answer.
        public var attemptOutcome: AttemptOutcome {
            if next == .retry { return .retry }
            switch write {
            case .settle(let status): return .status(status)
            case .lastError, .recoverPending: return .status(.pending)
            case .attemptOnly, .nothing, .clearMark: return .kept
            }
        }
    }

    /// One line of the table: for `event` on a row of `row`'s class, `action`, for the reason given.
    public struct Rule: Sendable {
        public var event: Event
        public var row: RowClass
        public var action: Action
        public var why: String
    }

    /// The lifecycle table: every event, for every class of row. The runner decides with it, the
    /// tests check it line by line and `docs/lifecycle.md` prints it.
    public static let rules: [Rule] = {
        var rules: [Rule] = []
        for reply in ReplyClass.allCases {
            for row in RowClass.allCases {
                rules.append(rule(for: reply, row: row))
            }
        }
        // A journal failure writes nothing more at all: it has no row in the table.
        for cause in StopCause.allCases where cause.isRecorded {
            for row in RowClass.allCases {
                rules.append(
                    Rule(
                        event: .stop(cause), row: row, action: Action(.nothing),
                        why: "not sent again in this run; its last attempt, if any, is on record"))
            }
        }
        rules.append(
            Rule(
                event: .killed, row: .pending, action: Action(.recoverPending),
                why: "its request may or may not have reached Botsi, and a restore is safe to repeat"))
        rules.append(
            Rule(
                event: .killed, row: .final, action: Action(.clearMark),
                why: "no definitive answer came, so the row keeps the one it had"))
        return rules
    }()

    private static func rule(for reply: ReplyClass, row: RowClass) -> Rule {
        if let status = reply.definitiveStatus {
            return Rule(
                event: .reply(reply), row: row, action: Action(.settle(status)), why: "a definitive answer")
        }
        // Without a definitive answer a final row keeps the one it had: no regression.
        let unanswered: Write = row == .pending ? .lastError : .attemptOnly
        switch reply {
        case .retryable:
            return Rule(
                event: .reply(reply), row: row, action: Action(unanswered, .retry),
                why: "transient: tried again after capped exponential backoff with full jitter")
        case .retriesExhausted, .budgetExhausted, .retryableWhileStopping:
            return Rule(
                event: .reply(reply), row: row, action: Action(unanswered),
                why: row == .pending
                    ? "no definitive answer in this run; the journal owes it to the next run"
                    : "no definitive answer in this run; the row keeps the one it had")
        case .unauthorized, .forbidden, .iosSettingsMissing, .tlsFailure:
            return Rule(
                event: .reply(reply), row: row, action: Action(unanswered, stopsRun: reply.stopCause),
                why: "no answer for this row, and none for any other until the cause is fixed")
        default:
            preconditionFailure("definitive replies are handled above")
        }
    }

    private struct Key: Hashable {
        let event: Event
        let row: RowClass
    }

    private static let actions: [Key: Action] = {
        var actions: [Key: Action] = [:]
        for rule in rules {
            let previous = actions.updateValue(rule.action, forKey: Key(event: rule.event, row: rule.row))
            precondition(previous == nil, "the lifecycle table holds two rules for \(rule.event), \(rule.row)")
        }
        return actions
    }()

    /// The table's action for `event` on a row of `row`'s class.
    public static func action(for event: Event, row: RowClass) -> Action {
        guard let action = actions[Key(event: event, row: row)] else {
            preconditionFailure("the lifecycle table has no rule for \(event), \(row)")
        }
        return action
    }

    // MARK: Deciding a reply

    /// What the runner knows about a row and the run when a reply arrives.
    public struct Facts: Sendable, Equatable {
        /// Attempts made for this row in this run, this one included.
        public var attemptsThisRun: Int
        /// The run is stopping: nothing more is dispatched.
        public var isStopping: Bool
        /// The run-wide retry budget can pay for one more attempt of this kind.
        public var budgetCanPay: Bool

        public init(attemptsThisRun: Int, isStopping: Bool, budgetCanPay: Bool) {
            self.attemptsThisRun = attemptsThisRun
            self.isStopping = isStopping
            self.budgetCanPay = budgetCanPay
        }
    }

    /// The decision for one reply.
    public struct Decision: Sendable, Equatable {
        public var reply: ReplyClass
        public var action: Action
        /// Seconds to wait before the retry; nil unless `action.next` is `.retry`.
        public var retryDelay: Double?
        /// The retry is paid from the run-wide budget (a 429 answered by slowing down is not).
        public var spendsRetryBudget: Bool
    }

    public var maxAttempts: Int
    /// Adaptive throttling answers a 429 by slowing down, so such a retry costs no budget.
    public var adaptive: Bool
    public var backoff: BackoffPolicy

    public init(maxAttempts: Int, adaptive: Bool, backoff: BackoffPolicy) {
        self.maxAttempts = maxAttempts
        self.adaptive = adaptive
        self.backoff = backoff
    }

    /// Classes a reply with the facts that decide between retrying and giving up.
    public func classify(_ reply: RestoreReply, facts: Facts) -> ReplyClass {
        switch reply {
        case .restored: return .restored
        case .nothingToRestore: return .nothingToRestore
        case .profileNotFound: return .profileNotFound
        case .rejected: return .rejected
        case .failed: return .failed
        case .fatal(let reason, _, _):
            return ReplyClass(reason)
        case .retryable(_, let httpStatus, _, _):
            if facts.isStopping { return .retryableWhileStopping }
            if facts.attemptsThisRun >= maxAttempts { return .retriesExhausted }
            if !slowsDownInstead(httpStatus: httpStatus) && !facts.budgetCanPay { return .budgetExhausted }
            return .retryable
        }
    }

    /// Decides a reply to a request for a row that was in `row` when it was sent. `random` draws
    /// the backoff's jitter, only when the decision is to retry.
    public func decide(
        _ reply: RestoreReply, row: ItemStatus, facts: Facts, random: inout some RandomNumberGenerator
    ) -> Decision {
        let replyClass = classify(reply, facts: facts)
        let action = Self.action(for: .reply(replyClass), row: RowClass(row))
        var delay: Double?
        var spends = false
        if action.next == .retry, case .retryable(_, let httpStatus, let retryAfter, _) = reply {
            delay = backoff.delay(failedAttempts: facts.attemptsThisRun, retryAfter: retryAfter, random: &random)
            spends = !slowsDownInstead(httpStatus: httpStatus)
        }
        return Decision(reply: replyClass, action: action, retryDelay: delay, spendsRetryBudget: spends)
    }

    private func slowsDownInstead(httpStatus: Int?) -> Bool { adaptive && httpStatus == 429 }
}

extension OutcomePolicy.ReplyClass {
    /// The class of a reply that stops the run.
    init(_ fatal: FatalReason) {
        switch fatal {
        case .unauthorized: self = .unauthorized
        case .forbidden: self = .forbidden
        case .iosSettingsMissing: self = .iosSettingsMissing
        case .tlsFailure: self = .tlsFailure
        }
    }
}

extension StopCause {
    /// The stop a fatal reply causes.
    init(_ fatal: FatalReason) {
        // Through the table's class, so the two cannot disagree.
        guard let cause = OutcomePolicy.ReplyClass(fatal).stopCause else {
            preconditionFailure("a fatal reply's class stops the run")
        }
        self = cause
    }
}
