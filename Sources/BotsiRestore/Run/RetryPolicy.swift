import Foundation

/// Capped exponential backoff with full jitter: the wait before attempt n+1 is uniform in
/// [0, min(cap, base * 2^(n-1))], so that many rows failing together do not retry together.
/// A `Retry-After` from the server is a floor, itself capped so one reply cannot park a run.
public struct BackoffPolicy: Sendable, Equatable {
    public var base: Double
    public var cap: Double
    public var retryAfterCap: Double

    public init(base: Double = 0.5, cap: Double = 30, retryAfterCap: Double = 120) {
        self.base = base
        self.cap = cap
        self.retryAfterCap = retryAfterCap
    }

    /// `failedAttempts` counts the attempts made so far in this run (1 after the first failure).
    public func delay(
        failedAttempts: Int, retryAfter: Double?, random: inout some RandomNumberGenerator
    ) -> Double {
        let exponent = min(max(failedAttempts - 1, 0), 30)
        let ceiling = min(cap, base * Double(1 << exponent))
        let jittered = ceiling > 0 ? Double.random(in: 0...ceiling, using: &random) : 0
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter, retryAfterCap))
    }
}

/// A process-wide retry budget in the manner of the AWS SDKs' standard retry mode: each retry
/// spends tokens (more for a timeout), each success pays a little back. When a service fails
/// everything the bucket empties and rows stop being retried, instead of every row hammering it.
public struct RetryBudget: Sendable, Equatable {
    public static let retryCost = 5
    public static let timeoutCost = 10
    public static let successRefund = 1

    public let capacity: Int
    public private(set) var tokens: Int
    public private(set) var exhaustedCount = 0

    public init(capacity: Int = 500) {
        self.capacity = capacity
        tokens = capacity
    }

    /// Whether the budget can pay for one retry of this kind, without taking anything.
    public func canPay(isTimeout: Bool) -> Bool {
        tokens >= (isTimeout ? Self.timeoutCost : Self.retryCost)
    }

    /// Takes what a retry costs; false (and nothing taken) when the budget cannot pay.
    public mutating func spend(isTimeout: Bool) -> Bool {
        let cost = isTimeout ? Self.timeoutCost : Self.retryCost
        guard tokens >= cost else {
            exhaustedCount += 1
            return false
        }
        tokens -= cost
        return true
    }

    /// A success refunds what its own retry cost, or one token for a first-try success.
    public mutating func succeeded(afterRetry: Bool, wasTimeout: Bool) {
        let refund = afterRetry ? (wasTimeout ? Self.timeoutCost : Self.retryCost) : Self.successRefund
        tokens = min(capacity, tokens + refund)
    }
}
