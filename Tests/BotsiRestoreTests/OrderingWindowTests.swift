import BotsiBasics
import Testing

@testable import BotsiRestore

@Suite struct OrderingWindowTests {
    @Test func independentRowsAreAllReadyAtOnce() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 1)
        #expect(window.takeReady() == nil)
    }

    @Test func rowsSharingAProfileGoOneAtATimeInInputOrder() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "a", transactionId: "2", payload: 0)
        window.add(sequence: 2, profileId: "b", transactionId: "3", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 2)
        #expect(window.takeReady() == nil)
        window.remove(0)
        #expect(window.takeReady() == 1)
    }

    @Test func rowsSharingATransactionGoOneAtATimeInInputOrder() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "1", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
        window.remove(0)
        #expect(window.takeReady() == 1)
    }

    @Test func aRowWaitsForBothOfItsKeys() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "2", payload: 0)
        window.add(sequence: 2, profileId: "a", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 1)
        window.remove(0)
        #expect(window.takeReady() == nil, "row 2 still waits for row 1 on transaction 2")
        window.remove(1)
        #expect(window.takeReady() == 2)
    }

    @Test func aRowWaitingToRetryKeepsItsPlaceAtTheHead() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "a", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
        window.makeReadyAgain(0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
    }

    @Test func manyRowsDrainCompletelyWithoutDeadlock() {
        var window = OrderingWindow<Int>()
        var rng = SplitMix64(seed: 3)
        for sequence in 0..<2000 {
            window.add(
                sequence: Int64(sequence), profileId: "p\(rng.next() % 50)", transactionId: "t\(rng.next() % 70)",
                payload: sequence)
        }
        var finished = 0
        var lastPerProfile: [String: Int64] = [:]
        while let sequence = window.takeReady() {
            let entry = window[sequence]!
            if let last = lastPerProfile[entry.profileId] { #expect(last < sequence) }
            lastPerProfile[entry.profileId] = sequence
            window.remove(sequence)
            finished += 1
        }
        #expect(finished == 2000)
        #expect(window.isEmpty)
    }
}

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
}
