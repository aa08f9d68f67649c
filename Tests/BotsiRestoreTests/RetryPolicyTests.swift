import BotsiBasics
import Testing

@testable import BotsiRestore

/// Backoff delays and the run-wide retry budget (`RetryPolicy.swift`), alone.
@Suite struct RetryPolicyTests {
    @Test func backoffStaysWithinTheExponentialCeilingAndTheCap() {
        let policy = BackoffPolicy(base: 0.5, cap: 4, retryAfterCap: 60)
        var rng = SplitMix64(seed: 1)
        for attempt in 1...10 {
            let ceiling = min(4, 0.5 * Double(1 << (attempt - 1)))
            for _ in 0..<100 {
                let delay = policy.delay(failedAttempts: attempt, retryAfter: nil, random: &rng)
                #expect(delay >= 0 && delay <= ceiling)
            }
        }
    }

    @Test func retryAfterIsAFloorButCapped() {
        let policy = BackoffPolicy(base: 0.01, cap: 0.02, retryAfterCap: 10)
        var rng = SplitMix64(seed: 1)
        #expect(policy.delay(failedAttempts: 1, retryAfter: 3, random: &rng) == 3)
        #expect(policy.delay(failedAttempts: 1, retryAfter: 3600, random: &rng) == 10)
    }

    @Test func budgetEmptiesUnderFailuresAndRefillsOnSuccess() {
        var budget = RetryBudget(capacity: 20)
        let first = budget.spend(isTimeout: false)
        let second = budget.spend(isTimeout: true)
        #expect(first && second)
        #expect(budget.tokens == 5)
        let third = budget.spend(isTimeout: false)
        let refused = budget.spend(isTimeout: false)
        #expect(third && !refused)
        #expect(budget.exhaustedCount == 1)
        budget.succeeded(afterRetry: true, wasTimeout: false)
        #expect(budget.tokens == 5)
        budget.succeeded(afterRetry: false, wasTimeout: false)
        #expect(budget.tokens == 6)
    }

    /// Whether a retry can be paid is asked before it is spent: a timeout's retry costs twice a
    /// plain one, and asking takes nothing.
    @Test func aBudgetThatPaysForARetryMayNotPayForATimeoutsRetry() {
        let budget = RetryBudget(capacity: RetryBudget.timeoutCost - 1)
        #expect(budget.canPay(isTimeout: false))
        #expect(!budget.canPay(isTimeout: true))
        #expect(budget.tokens == RetryBudget.timeoutCost - 1)
    }

    /// Successes never fill the budget beyond its capacity: a long good stretch must not bank
    /// enough tokens to let a later outage be hammered by retries.
    @Test func refundsStopAtTheCapacity() {
        var budget = RetryBudget(capacity: 20)
        budget.succeeded(afterRetry: false, wasTimeout: false)
        budget.succeeded(afterRetry: true, wasTimeout: true)
        #expect(budget.tokens == 20)
    }
}
