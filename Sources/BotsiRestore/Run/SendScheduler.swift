import BotsiAPI

/// What the progress line shows about sending.
struct SendCounts: Equatable {
    /// Requests on the wire (not the rows marked ahead of need).
    var inFlight: Int
    var waitingToRetry: Int
    /// The adaptive send-rate limit while throttled.
    var throttledRate: Double?
    var concurrencyLimit: Int
    var throttleEvents: Int
    /// The send-rate limit in force now (the controller's, a stated one or the cap); nil: unpaced.
    var rateLimit: Double? = nil
    /// Rows held (not sent yet, on the wire or waiting to be retried): what is left of those read.
    var outstanding = 0
}

/// Decides which row is sent when: the ordering window (rows sharing a profile or a transaction
/// go one at a time, in input order), the concurrency limit, the pacer, the adaptive throttle
/// fed by the replies, and the rows waiting out a backoff, kept in one deadline heap. It only
/// decides; the runner journals, sends and arms one timer for `nextWake(now:)`.
///
/// A row goes out in three steps: `nextSend` hands it out to be marked in flight in the journal,
/// `marksCommitted` says those marks are on disk, and `nextLaunch` lets it onto the wire when a
/// slot is free. While nothing paces the sends, up to `reserveLimit` rows beyond the concurrency
/// limit are marked ahead of need, so that a reply's freed slot is refilled at once rather than
/// after the next commit.
///
/// Pure: no clock, no curl, no journal. Every instant is passed in as monotonic seconds.
struct SendScheduler<Payload> {
    private var window = OrderingWindow<Payload>()
    private var nextSequence: Int64 = 0
    /// Rows handed out by `nextSend`: marked in flight, on the wire or not sent yet.
    private(set) var inFlight = 0
    /// Of those, requests on the wire.
    private(set) var launched = 0
    /// Rows marked and not sent yet, oldest first; the first `unsentCommitted` have their mark
    /// on disk and may go.
    private var unsent: [Int64] = []
    private var unsentHead = 0
    private var unsentCommitted = 0
    /// Rows waiting out a backoff, each with a timer in `retryTimers`, and whether it goes ahead
    /// of the rows not yet sent when its wait is over (`retry(_:at:ahead:)`).
    private var waiting: [Int64: Bool] = [:]
    private var retryTimers = DeadlineHeap()
    private var pacer = Pacer()
    private var controller: RateController
    /// Rows were ready and the pacer held them back since the last tick: the rate is in use.
    private var paceLimited = false
    /// After a stop nothing more is sent.
    private(set) var isStopped = false
    /// Rows held at most: enough to find ready ones behind long runs of one profile, bounded so
    /// that memory stays flat however long the input.
    let windowLimit: Int
    /// Rows marked ahead of need at most: half the concurrency (at least 2, at most 128), enough
    /// for the replies that arrive while one batch commits, and for a batch to gather the writes
    /// of half a reserve of replies before the sends want it on disk (`wantsCommit`).
    let reserveLimit: Int
    /// Requests handed to a queueing client beyond the concurrency at most (`nextLaunch(queueAt:)`):
    /// a sixteenth of the concurrency (at least 1, at most 32), about the replies of a round or two
    /// of the client's (at 256 and 50 ms, 16 went about 1% faster than none, and 32 no faster).
    let queueLimit: Int

    init(pacing: PacingConfiguration) {
        let concurrency = pacing.concurrency
        controller = RateController(pacing: pacing, tuning: pacing.tuning)
        windowLimit = max(concurrency * 16, 1024)
        reserveLimit = max(2, min(128, concurrency / 2))
        queueLimit = max(1, min(32, concurrency / 16))
    }

    /// What the pacing did, for the run's summary.
    var pacingSummary: PacingSummary { controller.summary }

    /// The long window the pacing found or carried, for the next run: nil while none is known.
    var longWindow: LongWindowPace? { controller.longWindow }

    /// What `Runner.finish` reads until it takes `pacingSummary` instead (the runner's rewrite
    /// makes that change); then this goes.
    var throttle: (events: Int, lowestRate: Double?, isThrottled: Bool, effectiveRate: Double?) {
        let summary = controller.summary
        return (summary.throttleEvents, summary.lowestRate, summary.finalRate != nil, summary.finalRate)
    }

    /// Rows held and not on the wire nor waiting to retry: after a stop, the rows it never sends.
    var idlePayloads: [Payload] { window.entries.values.filter { !$0.isBusy }.map(\.payload) }

    /// Rows held: not sent yet, in flight, or waiting to be retried.
    var count: Int { window.count }
    var isEmpty: Bool { window.isEmpty }
    var roomLeft: Int { max(0, windowLimit - window.count) }
    var waitingToRetry: Int { waiting.count }
    /// Rows marked in flight and not sent yet.
    var reserved: Int { unsent.count - unsentHead }

    var counts: SendCounts {
        SendCounts(
            inFlight: min(launched, controller.concurrencyCap), waitingToRetry: waiting.count,
            throttledRate: controller.isThrottled ? controller.effectiveRate : nil,
            concurrencyLimit: controller.concurrency, throttleEvents: controller.summary.throttleEvents,
            rateLimit: controller.effectiveRate, outstanding: window.count)
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

    /// A held row's payload. Mutating though it reads only: the run keeps its scheduler in an
    /// actor's property, and a getter there was handed a copy of all of it (its arrays and
    /// dictionaries retained, then released) for every reply; a mutating call reads it in place.
    mutating func payload(of sequence: Int64) -> Payload? { window.payload(of: sequence) }

    /// Replaces a held row's payload; changes nothing else (and nothing for a row not held).
    mutating func replacePayload(of sequence: Int64, with payload: Payload) {
        window[sequence]?.payload = payload
    }

    // MARK: Sending

    /// The next row to mark in flight at `now`; nil when none may be marked now (none ready, the
    /// concurrency limit and the reserve reached, the pacer says wait, or the run stopped).
    mutating func nextSend(now: Double) -> OrderingWindow<Payload>.Entry? {
        guard !isStopped else { return nil }
        while inFlight < controller.concurrency + reserveAllowed(now: now), window.readyCount > 0 {
            guard pacer.take(now: now, rate: controller.effectiveRate) else {
                paceLimited = true
                return nil
            }
            guard let sequence = window.takeReady(), let entry = window[sequence] else { continue }
            inFlight += 1
            unsent.append(sequence)
            return entry
        }
        return nil
    }

    /// Every mark handed out so far is committed: those rows may go on the wire.
    mutating func marksCommitted() { unsentCommitted = reserved }

    /// Marks wait uncommitted that the wire wants soon: the committed rows no longer fill the free
    /// slots and half the reserve. Until then the run lets its batch grow, for a commit writes
    /// every page its rows touched once, however many rows touched it.
    func wantsCommit(now: Double) -> Bool {
        reserved > unsentCommitted
            && launched + unsentCommitted < controller.concurrency + reserveAllowed(now: now) / 2
    }

    /// The oldest committed row, counted on the wire, while a slot is free; nil after a stop.
    /// Given `queueAt`, for a client that queues what it cannot start yet and starts it the moment
    /// a transfer ends (`RestoreClient`), up to `queueLimit` more go while nothing paces the sends
    /// and overload has not cut the concurrency: a reply's freed connection is then refilled on the
    /// client's thread, without waiting for this one's turn.
    mutating func nextLaunch(queueAt now: Double? = nil) -> OrderingWindow<Payload>.Entry? {
        let queue = now.map { queueAllowed(now: $0) } ?? 0
        guard !isStopped, launched < controller.concurrency + queue, unsentCommitted > 0 else { return nil }
        let sequence = unsent[unsentHead]
        unsentHead += 1
        unsentCommitted -= 1
        if unsentHead == unsent.count {
            unsent.removeAll(keepingCapacity: true)
            unsentHead = 0
        }
        launched += 1
        return window[sequence]
    }

    /// Takes back the marked rows that may not wait unsent at `now` (the pacer or a Retry-After
    /// hold took over; after a stop, all), newest first: each goes back to the front of the
    /// ready rows, in the order they were taken. Returns their payloads, for the journal to unmark.
    private mutating func withdrawReserve(now: Double) -> [Payload] {
        let excess = isStopped ? reserved : reserved - reserveAllowed(now: now)
        var withdrawn: [Payload] = []
        for _ in 0..<max(0, excess) {
            guard let sequence = unsent.popLast() else { break }
            inFlight -= 1
            window.putBack(sequence)
            if let payload = window[sequence]?.payload { withdrawn.append(payload) }
        }
        unsentCommitted = min(unsentCommitted, reserved)
        return withdrawn
    }

    /// Rows handed to the client that it had not started (`RestoreClient.withdrawQueued`, oldest
    /// first) are not on the wire after all: each goes back to the front of the ready rows, in the
    /// order they were taken. Returns their payloads, newest first, for the journal to unmark.
    mutating func withdrawLaunched(_ sequences: [Int64]) -> [Payload] {
        var withdrawn: [Payload] = []
        for sequence in sequences.reversed() where window[sequence] != nil {
            inFlight -= 1
            launched -= 1
            window.putBack(sequence)
            if let payload = window[sequence]?.payload { withdrawn.append(payload) }
        }
        return withdrawn
    }

    /// Rows may be marked ahead of need only while the concurrency limit, not the rate, holds the
    /// sends back: a paced row goes when the pacer says, never early from a reserve.
    private func reserveAllowed(now: Double) -> Int {
        controller.concurrencyBound && now >= pacer.nextSendAt ? reserveLimit : 0
    }

    private func queueAllowed(now: Double) -> Int {
        reserveAllowed(now: now) > 0 && controller.concurrency >= controller.concurrencyCap ? queueLimit : 0
    }

    /// A reply arrived: its row is no longer in flight, and what it says about the service's
    /// limits feeds the pacer and the throttle. When that means the sends are paced or held now,
    /// the reserve is taken back: returns those rows, for the journal to unmark.
    mutating func replied(
        _ reply: RestoreReply, duration: Double, rateLimit: RateLimitInfo?, now: Double
    ) -> [Payload] {
        feed(reply, duration: duration, rateLimit: rateLimit, now: now)
        return withdrawReserve(now: now)
    }

    private mutating func feed(_ reply: RestoreReply, duration: Double, rateLimit: RateLimitInfo?, now: Double) {
        inFlight -= 1
        launched -= 1
        var signal = PacingSignal.accepted
        if case .retryable(_, let httpStatus, let retryAfter, _) = reply {
            if httpStatus == 429 { signal = .tooManyRequests(retryAfter: retryAfter) }
            if httpStatus == 503 { signal = .unavailable }
        }
        controller.replied(signal, duration: duration, rateLimit: rateLimit, now: now)
    }

    /// The row is done for this run: the rows after it on its keys may go.
    @discardableResult
    mutating func settle(_ sequence: Int64) -> Payload? {
        waiting.removeValue(forKey: sequence)
        return window.remove(sequence)?.payload
    }

    /// The row goes again at `deadline`; until then it keeps its place ahead of later rows on
    /// its keys. A row that failed (`ahead`) is then sent before the rows read and not yet sent, so
    /// its retry follows its backoff; a row the limit refused (429, 503) waits its turn again
    /// behind them, as it was not served.
    mutating func retry(_ sequence: Int64, at deadline: Double, ahead: Bool = false) {
        guard !isStopped, window[sequence] != nil, waiting[sequence] == nil else { return }
        waiting[sequence] = ahead
        retryTimers.push(sequence, at: deadline)
    }

    /// Makes ready the waiting rows whose deadline is `now` or earlier, in deadline order;
    /// returns them.
    @discardableResult
    mutating func releaseDueRetries(now: Double) -> [Int64] {
        var released: [Int64] = []
        while let timer = retryTimers.first, timer.deadline <= now {
            retryTimers.popFirst()
            guard let ahead = waiting.removeValue(forKey: timer.sequence) else { continue }
            window.makeReadyAgain(timer.sequence, ahead: ahead)
            released.append(timer.sequence)
        }
        return released
    }

    /// When the runner should look again, on the same clock: the earliest retry deadline, or the
    /// pacer's next slot when rows are ready and held back only by it. Nil when only a reply or
    /// more input can change anything.
    mutating func nextWake(now: Double) -> Double? {
        // A row that left the window while it waited (a stop) leaves a stale timer: drop it.
        while let timer = retryTimers.first, waiting[timer.sequence] == nil { retryTimers.popFirst() }
        var wake = retryTimers.first?.deadline
        if !isStopped, inFlight < controller.concurrency, window.readyCount > 0, pacer.nextSendAt > now {
            wake = min(wake ?? .infinity, pacer.nextSendAt)
        }
        return wake
    }

    /// Four times a second: after quiet spells the throttle raises the rate. True when it changed.
    mutating func tick(now: Double) -> Bool {
        let before = controller.effectiveRate
        controller.tick(now: now, paceLimited: paceLimited)
        paceLimited = false
        return controller.effectiveRate != before
    }

    /// Stops sending. Rows marked and not sent are taken back (`unsent`, for the journal to
    /// unmark). The rows waiting out a backoff are done for this run: they leave the window and
    /// are returned (`waiting`, in the order they were taken up) for the stop rule. Rows on the
    /// wire stay until their replies; rows not sent yet stay held, unsent.
    mutating func stop() -> (unsent: [Payload], waiting: [Payload]) {
        guard !isStopped else { return ([], []) }
        isStopped = true
        let unsentRows = withdrawReserve(now: 0)
        let rows = waiting.keys.sorted().compactMap { window.remove($0)?.payload }
        waiting.removeAll()
        retryTimers.removeAll()
        return (unsentRows, rows)
    }
}

extension RestoreReply {
    /// 401, 403, `No ios settings found` or a TLS failure: a reply that may stop the run.
    var isFatal: Bool {
        if case .fatal = self { return true }
        return false
    }

    /// 429, or a 503 (which may be a burst of overload): replies that say "slow down".
    var isThrottling: Bool {
        if case .retryable(_, let status, _, _) = self { return status == 429 || status == 503 }
        return false
    }
}
