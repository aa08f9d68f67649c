import BotsiAPI
import BotsiBasics

/// The lifecycle table applied to one run's replies: `OutcomePolicy` with the run-wide retry
/// budget and the jitter's generator, which carry from reply to reply. Pure: the runner hands it
/// a reply and the row, and carries out the decision.
struct ReplyDecider {
    let policy: OutcomePolicy
    private(set) var budget = RetryBudget()
    private var random: SplitMix64

    init(options: RunOptions) {
        policy = OutcomePolicy(
            maxAttempts: options.maxAttempts, adaptive: options.adaptive,
            backoff: BackoffPolicy(
                base: options.backoffBase, cap: options.backoffCap, retryAfterCap: options.retryAfterCap))
        random = SplitMix64(seed: options.seed ?? UInt64.random(in: 1...UInt64.max))
    }

    /// Decides `reply` for `row` (its `attemptsThisRun` counting this attempt), paying a retry
    /// from the budget and refunding a success; a row to be retried keeps what its retry cost.
    mutating func decide(_ reply: RestoreReply, row: inout RunRow, isStopping: Bool) -> OutcomePolicy.Decision {
        let isTimeout = reply.code == "timeout"
        let facts = OutcomePolicy.Facts(
            attemptsThisRun: row.attemptsThisRun, isStopping: isStopping,
            budgetCanPay: budget.canPay(isTimeout: isTimeout))
        let decision = policy.decide(reply, row: row.status, facts: facts, random: &random)
        if decision.spendsRetryBudget { _ = budget.spend(isTimeout: isTimeout) }
        if case .restored = reply {
            // A retry that cost nothing (a 429 answered by slowing down) has nothing to pay back.
            budget.succeeded(afterRetry: row.attemptsThisRun > 1 && row.lastRetryPaid, wasTimeout: row.lastWasTimeout)
        }
        if decision.action.next == .retry {
            row.lastWasTimeout = isTimeout
            row.lastRetryPaid = decision.spendsRetryBudget
        }
        return decision
    }
}
