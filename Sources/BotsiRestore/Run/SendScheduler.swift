import BotsiAPI

/// What the progress line shows about sending.
struct SendCounts: Equatable {
    var inFlight: Int
    var waitingToRetry: Int
    /// The adaptive send-rate limit while throttled.
    var throttledRate: Double?
    var concurrencyLimit: Int
    var throttleEvents: Int
}

/// Decides which row is sent when: the ordering window (rows sharing a profile or a transaction
/// go one at a time, in input order), the concurrency limit, the pacer, the adaptive throttle
/// fed by the replies, and the rows waiting out a backoff, kept in one deadline heap. It only
/// decides; the runner journals, sends and arms one timer for `nextWake(now:)`.
///
/// Pure: no clock, no curl, no journal. Every instant is passed in as monotonic seconds.
struct SendScheduler<Payload> {
    private var window = OrderingWindow<Payload>()
    private var nextSequence: Int64 = 0
    private(set) var inFlight = 0
    /// Rows waiting out a backoff, each with a timer in `retryTimers`.
    private var waiting: Set<Int64> = []
    private var retryTimers = DeadlineHeap()
    private var pacer = Pacer()
    /// Replies that were not throttling ones, per second: where the upstream limit lies.
    private var acceptedMeter = SendMeter()
    /// Typical request duration (exponentially weighted), for sizing concurrency to a rate.
    private var latencyAverage = 0.05
    private(set) var throttle: AdaptiveThrottle
    /// After a stop nothing more is sent.
    private(set) var isStopped = false
    /// Rows held at most: enough to find ready ones behind long runs of one profile, bounded so
    /// that memory stays flat however long the input.
    let windowLimit: Int

    init(concurrency: Int, rate: Double?, adaptive: Bool) {
        throttle = AdaptiveThrottle(enabled: adaptive, rateCap: rate, concurrencyCap: concurrency)
        windowLimit = max(concurrency * 16, 1024)
    }

    /// Rows held: not sent yet, in flight, or waiting to be retried.
    var count: Int { window.count }
    var isEmpty: Bool { window.isEmpty }
    var roomLeft: Int { max(0, windowLimit - window.count) }
    var waitingToRetry: Int { waiting.count }

    var counts: SendCounts {
        SendCounts(
            inFlight: inFlight, waitingToRetry: waiting.count,
            throttledRate: throttle.isThrottled ? throttle.effectiveRate : nil,
            concurrencyLimit: throttle.concurrency, throttleEvents: throttle.events)
    }

    // MARK: Rows

    /// Takes a row up; it is sent after every earlier row sharing its profile or transaction.
    @discardableResult
    mutating func add(profileId: String, transactionId: String, payload: Payload) -> Int64 {
        let sequence = nextSequence
        nextSequence += 1
        window.add(sequence: sequence, profileId: profileId, transactionId: transactionId, payload: payload)
        return sequence
    }

    func entry(_ sequence: Int64) -> OrderingWindow<Payload>.Entry? { window[sequence] }

    /// A held row's payload; setting it changes nothing else (and nothing for a row not held).
    subscript(payloadOf sequence: Int64) -> Payload? {
        get { window[sequence]?.payload }
        set {
            guard let newValue, window[sequence] != nil else { return }
            window[sequence]?.payload = newValue
        }
    }

    // MARK: Sending

    /// The next row to send at `now`, counted in flight; nil when none may go now (none ready,
    /// the concurrency limit reached, the pacer says wait, or the run stopped).
    mutating func nextSend(now: Double) -> OrderingWindow<Payload>.Entry? {
        guard !isStopped else { return nil }
        while inFlight < throttle.concurrency, window.readyCount > 0 {
            guard pacer.take(now: now, rate: throttle.effectiveRate) else { return nil }
            guard let sequence = window.takeReady(), let entry = window[sequence] else { continue }
            inFlight += 1
            return entry
        }
        return nil
    }

    /// A reply arrived: its row is no longer in flight, and what it says about the service's
    /// limits feeds the pacer and the throttle.
    mutating func replied(_ reply: RestoreReply, duration: Double, rateLimit: RateLimitInfo?, now: Double) {
        inFlight -= 1
        if !reply.isThrottling {
            acceptedMeter.record(now: now)
            latencyAverage = latencyAverage * 0.9 + duration * 0.1
        }
        if let rateLimit, throttle.advertised(rateLimit), let rate = throttle.effectiveRate {
            pacer.chargeUnpacedBurst(rate: rate)
        }
        guard case .retryable(_, let httpStatus, let retryAfter, _) = reply else { return }
        let acceptedRate = acceptedMeter.ratePerSecond(now: now)
        if httpStatus == 429 {
            throttle.tooManyRequests(
                now: now, acceptedRate: acceptedRate, latency: latencyAverage,
                acceptedSpan: acceptedMeter.span(now: now), retryAfter: retryAfter)
            pacer.hold(until: throttle.holdUntil)
        } else if httpStatus == 503 {
            throttle.unavailable(now: now, acceptedRate: acceptedRate, latency: latencyAverage)
        }
    }

    /// The row is done for this run: the rows after it on its keys may go.
    @discardableResult
    mutating func settle(_ sequence: Int64) -> Payload? {
        waiting.remove(sequence)
        return window.remove(sequence)?.payload
    }

    /// The row goes again at `deadline`; until then it keeps its place ahead of later rows on
    /// its keys.
    mutating func retry(_ sequence: Int64, at deadline: Double) {
        guard !isStopped, window[sequence] != nil, waiting.insert(sequence).inserted else { return }
        retryTimers.push(sequence, at: deadline)
    }

    /// Makes ready the waiting rows whose deadline is `now` or earlier, in deadline order;
    /// returns them.
    @discardableResult
    mutating func releaseDueRetries(now: Double) -> [Int64] {
        var released: [Int64] = []
        while let timer = retryTimers.first, timer.deadline <= now {
            retryTimers.popFirst()
            guard waiting.remove(timer.sequence) != nil else { continue }
            window.makeReadyAgain(timer.sequence)
            released.append(timer.sequence)
        }
        return released
    }

    /// When the runner should look again, on the same clock: the earliest retry deadline, or the
    /// pacer's next slot when rows are ready and held back only by it. Nil when only a reply or
    /// more input can change anything.
    mutating func nextWake(now: Double) -> Double? {
        // A row that left the window while it waited (a stop) leaves a stale timer: drop it.
        while let timer = retryTimers.first, !waiting.contains(timer.sequence) { retryTimers.popFirst() }
        var wake = retryTimers.first?.deadline
        if !isStopped, inFlight < throttle.concurrency, window.readyCount > 0, pacer.nextSendAt > now {
            wake = min(wake ?? .infinity, pacer.nextSendAt)
        }
        return wake
    }

    /// Four times a second: after quiet spells the throttle raises the rate. True when it changed.
    mutating func tick(now: Double) -> Bool {
        let before = throttle.effectiveRate
        throttle.tick(
            now: now, acceptedRate: acceptedMeter.ratePerSecond(now: now), acceptedSpan: acceptedMeter.span(now: now))
        return throttle.effectiveRate != before
    }

    /// Stops sending. The rows waiting out a backoff are done for this run: they leave the window
    /// and are returned (in the order they were taken up) for the stop rule. Rows in flight stay
    /// until their replies; rows not sent yet stay held, unsent.
    mutating func stop() -> [Payload] {
        guard !isStopped else { return [] }
        isStopped = true
        let rows = waiting.sorted().compactMap { window.remove($0)?.payload }
        waiting.removeAll()
        retryTimers.removeAll()
        return rows
    }
}

extension RestoreReply {
    /// 429, or a 503 (which may be a burst of overload): replies that say "slow down".
    var isThrottling: Bool {
        if case .retryable(_, let status, _, _) = self { return status == 429 || status == 503 }
        return false
    }
}
