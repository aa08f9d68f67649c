import BotsiAPI
import BotsiBasics
import Foundation
import Testing

@testable import BotsiRestore

/// The scheduler alone, on a clock the tests hold: no curl, no journal, no timers.
@Suite struct SendSchedulerTests {
    private typealias Scheduler = SendScheduler<String>

    /// Ordering, concurrency, the reserve and retries, without the adaptive controller's pace
    /// (the pacing tests drive that one).
    private static func scheduler(concurrency: Int = 8, rate: Double? = nil, adaptive: Bool = false) -> Scheduler {
        Scheduler(pacing: PacingConfiguration(concurrency: concurrency, rateCap: rate, adaptive: adaptive))
    }

    /// An adaptive scheduler whose start is `startRate` requests/s.
    private static func adaptive(concurrency: Int = 8, startRate: Double = 10) -> Scheduler {
        var pacing = PacingConfiguration(concurrency: concurrency)
        pacing.tuning.startRate = startRate
        return Scheduler(pacing: pacing)
    }

    /// What the runner does at `now`: marks what may be marked, commits, and sends what may go.
    /// Returns what went on the wire, by payload.
    private static func sendAll(_ scheduler: inout Scheduler, now: Double = 0) -> [String] {
        while scheduler.nextSend(now: now) != nil {}
        scheduler.marksCommitted()
        var sent: [String] = []
        while let entry = scheduler.nextLaunch() { sent.append(entry.payload) }
        return sent
    }

    /// The same for a client that queues beyond its connections (`RestoreClient`), as the run does.
    private static func sendAllQueueing(_ scheduler: inout Scheduler, now: Double) -> [String] {
        while scheduler.nextSend(now: now) != nil {}
        scheduler.marksCommitted()
        var sent: [String] = []
        while let entry = scheduler.nextLaunch(queueAt: now) { sent.append(entry.payload) }
        return sent
    }

    private static func marked(_ scheduler: inout Scheduler, now: Double = 0) -> [String] {
        var marked: [String] = []
        while let entry = scheduler.nextSend(now: now) { marked.append(entry.payload) }
        return marked
    }

    private static let ok = RestoreReply.nothingToRestore(message: nil)

    @Test func rowsOfOneProfileOrOneTransactionGoOneAtATimeInTheOrderTakenUp() {
        var scheduler = Self.scheduler()
        let first = scheduler.add(profileId: "p1", transactionId: "t1", payload: "p1-first")
        scheduler.add(profileId: "p1", transactionId: "t2", payload: "p1-second")
        scheduler.add(profileId: "p2", transactionId: "t1", payload: "t1-second")
        scheduler.add(profileId: "p3", transactionId: "t3", payload: "independent")
        #expect(Self.sendAll(&scheduler) == ["p1-first", "independent"])
        _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        scheduler.settle(first)
        #expect(Self.sendAll(&scheduler) == ["p1-second", "t1-second"])
    }

    @Test func noMoreInFlightThanTheConcurrencyLimit() {
        var scheduler = Self.scheduler(concurrency: 2)
        let sequences = (0..<5).map { scheduler.add(profileId: "p\($0)", transactionId: "t\($0)", payload: "\($0)") }
        #expect(Self.sendAll(&scheduler) == ["0", "1"])
        #expect(scheduler.counts.inFlight == 2)
        #expect(scheduler.reserved == 2, "two more marked ahead of need")
        _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        scheduler.settle(sequences[0])
        #expect(Self.sendAll(&scheduler) == ["2"])
        #expect(scheduler.counts.inFlight == 2)
    }

    @Test func rowsAreMarkedAheadOfNeedAndAFreedSlotTakesTheOldestCommittedOne() {
        var scheduler = Self.scheduler(concurrency: 4)
        #expect(scheduler.reserveLimit == 2)
        for index in 0..<10 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.marked(&scheduler) == ["0", "1", "2", "3", "4", "5"], "the concurrency limit and the reserve")
        #expect(scheduler.nextLaunch() == nil, "nothing goes before its mark is committed")
        scheduler.marksCommitted()
        var launched: [String] = []
        while let entry = scheduler.nextLaunch() { launched.append(entry.payload) }
        #expect(launched == ["0", "1", "2", "3"])
        #expect(Self.marked(&scheduler).isEmpty)
        // A reply frees a slot: the oldest committed row goes without a new mark or commit.
        #expect(
            scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0).isEmpty,
            "nothing paces the sends: the reserve stays")
        #expect(scheduler.nextLaunch()?.payload == "4")
        #expect(scheduler.nextLaunch() == nil)
        #expect(Self.marked(&scheduler) == ["6"], "the reserve is topped up")
        #expect(scheduler.nextLaunch() == nil, "5 stays in the reserve; 6 is not committed")
    }

    @Test func theBatchIsWantedOnDiskOnlyWhenTheCommittedRowsNoLongerCoverHalfTheReserve() {
        var scheduler = Self.scheduler(concurrency: 8)
        #expect(scheduler.reserveLimit == 4)
        for index in 0..<20 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.marked(&scheduler).count == 12)
        #expect(scheduler.wantsCommit(now: 0), "nothing may go before a commit")
        scheduler.marksCommitted()
        #expect(!scheduler.wantsCommit(now: 0), "every mark is on disk")
        while scheduler.nextLaunch() != nil {}
        var wanted: [Bool] = []
        for _ in 0..<3 {
            _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
            #expect(scheduler.nextLaunch() != nil, "a committed row fills the freed slot")
            #expect(Self.marked(&scheduler).count == 1, "the reserve is topped up, uncommitted")
            wanted.append(scheduler.wantsCommit(now: 0))
        }
        #expect(wanted == [false, false, true], "3, 2, then 1 committed row left of a reserve of 4")
    }

    @Test func aQueueingClientGetsASixteenthMoreThanTheConcurrencyWhileNothingPacesTheSends() {
        var unpaced = Self.scheduler(concurrency: 64)
        #expect(unpaced.queueLimit == 4)
        for index in 0..<100 { unpaced.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&unpaced).count == 64, "a client that does not queue gets the concurrency")
        #expect(Self.sendAllQueueing(&unpaced, now: 0) == ["64", "65", "66", "67"])
        #expect(unpaced.counts.inFlight == 64, "at most the concurrency is on the wire; the rest waits in the client")
        _ = unpaced.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        #expect(Self.sendAllQueueing(&unpaced, now: 0) == ["68"], "a reply frees one place in the client's queue")

        var paced = Self.scheduler(concurrency: 64, rate: 10)
        for index in 0..<10 { paced.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAllQueueing(&paced, now: 5) == ["0"], "a paced row goes when the pacer says")
    }

    @Test func rowsTheClientGivesBackUnsentAreReadyAgainFirstInTheirOrder() {
        var scheduler = Self.scheduler(concurrency: 32)
        #expect(scheduler.queueLimit == 2)
        for index in 0..<40 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAllQueueing(&scheduler, now: 0).count == 34)
        let launched = scheduler.inFlight
        #expect(scheduler.withdrawLaunched([32, 33]) == ["33", "32"], "newest first, for the journal to unmark")
        #expect(scheduler.inFlight == launched - 2)
        #expect(scheduler.counts.inFlight == 32)
        _ = scheduler.stop()
        #expect(Self.marked(&scheduler).isEmpty, "stopped: nothing more goes")
        #expect(scheduler.count == 40, "every row still held: the 32 on the wire until their replies, the rest unsent")
    }

    @Test func rowsTheClientGivesBackGoAgainBeforeLaterOnes() {
        var scheduler = Self.scheduler(concurrency: 32)
        for index in 0..<40 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        _ = Self.sendAllQueueing(&scheduler, now: 0)
        let reserve = scheduler.reserved
        _ = scheduler.withdrawLaunched([32, 33])
        _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        let next = Self.marked(&scheduler)
        #expect(Array(next.prefix(2)) == ["32", "33"], "\(next) after a reserve of \(reserve)")
    }

    @Test func aConcurrencyCutByOverloadIsNotExceededByTheClientsQueue() {
        // A start held at 500/s; a burst of 503s cuts the rate and the concurrency to what that rate
        // needs at the latency seen, well under 64.
        var pacing = PacingConfiguration(concurrency: 64)
        pacing.tuning.startRate = 500
        pacing.tuning.startGrowth = 1
        var scheduler = Scheduler(pacing: pacing)
        for index in 0..<400 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        var now = 10.0
        while now < 10.1 {
            _ = Self.sendAllQueueing(&scheduler, now: now)
            now += 0.001
        }
        // Ten accepted over a second, then ten 503s at once: a burst.
        for step in 0..<10 {
            _ = scheduler.replied(Self.ok, duration: 0.02, rateLimit: nil, now: 10.5 + Double(step) / 10)
        }
        now = 11.5
        let unavailable = RestoreReply.retryable(code: "http_503", httpStatus: 503, retryAfter: nil, message: nil)
        for _ in 0..<10 { _ = scheduler.replied(unavailable, duration: 0.02, rateLimit: nil, now: now) }
        let cut = scheduler.counts.concurrencyLimit
        #expect(cut < 64, "the burst cut the concurrency to \(cut)")
        // Replies slow down to a second each: the cut concurrency binds again, not the rate.
        for _ in 0..<40 { _ = scheduler.replied(Self.ok, duration: 1, rateLimit: nil, now: now) }
        var launchedMost = 0
        for step in 0..<200 {
            _ = Self.sendAllQueueing(&scheduler, now: now + Double(step) * 0.005)
            launchedMost = max(launchedMost, scheduler.counts.inFlight)
        }
        #expect(launchedMost == cut, "\(launchedMost) in flight under a concurrency cut to \(cut)")
    }

    @Test func aPacedRunMarksNothingAheadOfTheNextSlot() {
        var scheduler = Self.scheduler(concurrency: 4, rate: 10)
        for index in 0..<10 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&scheduler, now: 5) == ["0"])
        #expect(scheduler.reserved == 0)
    }

    @Test func aCutThatMakesTheRateBindTakesTheReserveBackInOrder() {
        // A start of 400/s is above what 4 slots carry at 50 ms: the concurrency binds, so rows are
        // marked ahead of need; a 429 brings the rate back to what it sent a window before (a
        // fraction of it), which the slots carry: the rate binds, and the reserve goes back.
        var scheduler = Self.adaptive(concurrency: 4, startRate: 400)
        for index in 0..<10 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        var sent: [String] = []
        for step in 0..<10 { sent += Self.sendAll(&scheduler, now: 10 + Double(step) * 0.0025) }
        #expect(sent == ["0", "1", "2", "3"])
        let reserve = scheduler.reserved
        #expect(reserve == 2, "two marked ahead of need")
        let withdrawn = scheduler.replied(
            .retryable(code: "http_429", httpStatus: 429, retryAfter: 1, message: nil), duration: 0.001, rateLimit: nil,
            now: 10.03)
        #expect(withdrawn == ["5", "4"], "newest first, for the journal to unmark")
        #expect(scheduler.reserved == 0)
        #expect(scheduler.counts.rateLimit.map { $0 < 60 } == true, "\(String(describing: scheduler.counts.rateLimit))")
        #expect(Self.marked(&scheduler, now: 10.1).first == "4", "they go first again")
        #expect(scheduler.nextLaunch() == nil, "marked again, a row leaves only once its new mark is committed")
    }

    @Test func aStopTakesBackWhatWasMarkedAndNotSent() {
        var scheduler = Self.scheduler(concurrency: 2)
        for index in 0..<5 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&scheduler) == ["0", "1"])
        let stopped = scheduler.stop()
        #expect(stopped.unsent == ["3", "2"])
        #expect(stopped.waiting.isEmpty)
        #expect(scheduler.inFlight == 2, "only the two on the wire")
        _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        #expect(scheduler.nextLaunch() == nil)
    }

    @Test func aRateSpacesSendsAndTheNextWakeIsThePacersNextSlot() {
        var scheduler = Self.scheduler(rate: 10)
        for index in 0..<3 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&scheduler, now: 100) == ["0"])
        let wake = scheduler.nextWake(now: 100)
        // 1/rate after the send, less the few milliseconds of timer lateness the pacer forgives.
        #expect(wake.map { abs($0 - (100 + 0.1 - Pacer.allowedLag)) < 1e-9 } == true, "\(String(describing: wake))")
        #expect(Self.sendAll(&scheduler, now: 100.05).isEmpty)
        #expect(Self.sendAll(&scheduler, now: wake!) == ["1"])
    }

    @Test func nothingToWakeForWhenOnlyARepliesCanChangeAnything() {
        var scheduler = Self.scheduler(concurrency: 1, rate: 10)
        scheduler.add(profileId: "a", transactionId: "1", payload: "a")
        scheduler.add(profileId: "b", transactionId: "2", payload: "b")
        #expect(Self.sendAll(&scheduler, now: 5) == ["a"])
        // The concurrency limit holds "b" back, not the pacer: a reply will wake the runner.
        #expect(scheduler.nextWake(now: 5) == nil)
    }

    @Test func retriesComeDueInDeadlineOrderAndTheEarliestIsTheNextWake() {
        var scheduler = Self.scheduler()
        let rows = ["late", "early", "middle", "alsoMiddle"].map {
            scheduler.add(profileId: $0, transactionId: $0, payload: $0)
        }
        #expect(Self.sendAll(&scheduler).count == 4)
        for (row, deadline) in zip(rows, [30.0, 10, 20, 20]) {
            _ = scheduler.replied(
                .retryable(code: "http_500", httpStatus: 500, retryAfter: nil, message: nil), duration: 0.01,
                rateLimit: nil, now: 1)
            scheduler.retry(row, at: deadline)
        }
        #expect(scheduler.waitingToRetry == 4)
        #expect(scheduler.nextWake(now: 1) == 10)
        #expect(Self.sendAll(&scheduler, now: 5).isEmpty, "a waiting row is not sent before its time")
        #expect(scheduler.releaseDueRetries(now: 15) == [rows[1]])
        #expect(scheduler.nextWake(now: 15) == 20)
        // Equal deadlines keep the order they were set in.
        #expect(scheduler.releaseDueRetries(now: 35) == [rows[2], rows[3], rows[0]])
        #expect(scheduler.nextWake(now: 35) == nil)
        #expect(Self.sendAll(&scheduler, now: 35) == ["early", "middle", "alsoMiddle", "late"])
    }

    /// A row already waiting to retry keeps the deadline it was given first.
    @Test func aRowAlreadyWaitingKeepsItsFirstDeadline() {
        var scheduler = Self.scheduler(concurrency: 2)
        let sequence = scheduler.add(profileId: "p", transactionId: "t", payload: "0")
        #expect(Self.sendAll(&scheduler) == ["0"])
        _ = scheduler.replied(Self.ok, duration: 0.01, rateLimit: nil, now: 0)
        scheduler.retry(sequence, at: 5)
        scheduler.retry(sequence, at: 1)
        #expect(scheduler.releaseDueRetries(now: 2).isEmpty)
        #expect(scheduler.releaseDueRetries(now: 5) == [sequence])
    }

    @Test func aRowWaitingToRetryKeepsItsPlaceAheadOfLaterRowsOfItsProfile() {
        var scheduler = Self.scheduler()
        let first = scheduler.add(profileId: "p", transactionId: "1", payload: "first")
        scheduler.add(profileId: "p", transactionId: "2", payload: "second")
        #expect(Self.sendAll(&scheduler) == ["first"])
        _ = scheduler.replied(
            .retryable(code: "timeout", httpStatus: nil, retryAfter: nil, message: nil), duration: 30, rateLimit: nil,
            now: 0)
        scheduler.retry(first, at: 2)
        #expect(Self.sendAll(&scheduler, now: 1).isEmpty)
        scheduler.releaseDueRetries(now: 2)
        #expect(Self.sendAll(&scheduler, now: 2) == ["first"])
    }

    @Test func aStopCancelsEveryRetryAndSendsNothingMore() {
        var scheduler = Self.scheduler()
        let rows = ["a", "b", "c"].map { scheduler.add(profileId: $0, transactionId: $0, payload: $0) }
        #expect(Self.sendAll(&scheduler).count == 3)
        scheduler.retry(rows[1], at: 10)
        scheduler.retry(rows[0], at: 20)
        scheduler.add(profileId: "d", transactionId: "d", payload: "not sent yet")
        #expect(scheduler.stop().waiting == ["a", "b"], "the waiting rows, in the order taken up, for the stop rule")
        #expect(scheduler.waitingToRetry == 0)
        #expect(scheduler.nextWake(now: 0) == nil)
        #expect(scheduler.releaseDueRetries(now: 100).isEmpty)
        #expect(Self.sendAll(&scheduler, now: 100).isEmpty)
        #expect(scheduler.count == 2, "the row in flight and the one not sent stay until the run ends")
        scheduler.retry(rows[2], at: 30)
        #expect(scheduler.waitingToRetry == 0, "no retry after a stop")
    }

    @Test func aSettledRowLeavesTheHeap() {
        var scheduler = Self.scheduler()
        let rows = ["a", "b"].map { scheduler.add(profileId: $0, transactionId: $0, payload: $0) }
        #expect(Self.sendAll(&scheduler).count == 2)
        scheduler.retry(rows[0], at: 10)
        scheduler.retry(rows[1], at: 20)
        scheduler.settle(rows[0])
        #expect(scheduler.nextWake(now: 0) == 20)
        #expect(scheduler.releaseDueRetries(now: 100) == [rows[1]])
    }

    @Test func theAdaptiveStartIsPacedAndA429SendsAgainWhatWasSentAWindowEarlier() {
        var scheduler = Self.adaptive(startRate: 50)
        for index in 0..<20 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&scheduler, now: 10) == ["0"], "the start is paced")
        #expect(scheduler.counts.rateLimit == 50)
        #expect(scheduler.counts.throttledRate == nil, "climbing is not being throttled")
        _ = scheduler.replied(
            .retryable(code: "http_429", httpStatus: 429, retryAfter: 1.5, message: nil), duration: 0.1, rateLimit: nil,
            now: 10.1)
        #expect(scheduler.counts.throttleEvents == 1)
        // Sent 0.1 s before, at 50/G^0.1 with G the climb's growth a second: it goes back to the
        // rate a window (1 s) before that, 1/G of it.
        let growth = RateController.Tuning().startGrowth
        let rate = scheduler.counts.rateLimit
        #expect(rate.map { abs($0 - 50 / pow(growth, 0.1) / growth) < 1e-9 } == true, "\(String(describing: rate))")
        #expect(scheduler.counts.throttledRate != nil)
        #expect(scheduler.pacingSummary.throttleEvents == 1)
    }

    @Test func aStatedRateLimitCapsThePace() {
        var scheduler = Self.adaptive(startRate: 50)
        for index in 0..<6 { scheduler.add(profileId: "p\(index)", transactionId: "t\(index)", payload: "\(index)") }
        #expect(Self.sendAll(&scheduler, now: 1) == ["0"])
        _ = scheduler.replied(
            Self.ok, duration: 0.01, rateLimit: RateLimitInfo(quota: 10, windowSeconds: 1, remaining: 9), now: 1.01)
        // 99% of the stated 10/s from the next slot on (1.02, taken at 50/s): then one every ~0.101 s.
        #expect(scheduler.counts.rateLimit.map { abs($0 - 9.9) < 1e-9 } == true)
        #expect(Self.sendAll(&scheduler, now: 1.02) == ["1"])
        #expect(Self.sendAll(&scheduler, now: 1.1).isEmpty)
        #expect(Self.sendAll(&scheduler, now: 1.122) == ["2"])
    }
}

@Suite struct DeadlineHeapTests {
    @Test func popsInDeadlineOrderWhateverThePushOrder() {
        var heap = DeadlineHeap()
        let deadlines = [5.0, 1, 9, 3, 7, 2, 8, 6, 4, 0]
        for (index, deadline) in deadlines.enumerated() { heap.push(Int64(index), at: deadline) }
        #expect(heap.first?.deadline == 0)
        var popped: [Double] = []
        while let timer = heap.popFirst() { popped.append(timer.deadline) }
        #expect(popped == deadlines.sorted())
        #expect(heap.isEmpty)
    }

    /// Seeded pushes with many equal deadlines, and pops between them, against a sorted list:
    /// each pop is the earliest deadline and, of equal ones, the first pushed.
    @Test(arguments: UInt64(1)...8)
    func popsAsASortedListWouldUnderRandomPushesAndPops(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var heap = DeadlineHeap()
        var sorted: [(deadline: Double, sequence: Int64)] = []
        func popBoth(_ context: String) {
            let expected = sorted.removeFirst()
            let popped = heap.popFirst()
            #expect(
                popped?.deadline == expected.deadline && popped?.sequence == expected.sequence,
                "seed \(seed), \(context): \(String(describing: popped)), expected \(expected)")
        }
        for sequence in Int64(0)..<500 {
            let deadline = Double(random.next() % 40)
            heap.push(sequence, at: deadline)
            sorted.insert((deadline, sequence), at: sorted.firstIndex { $0.deadline > deadline } ?? sorted.count)
            if random.next() % 3 == 0 { popBoth("after push \(sequence)") }
        }
        while !sorted.isEmpty { popBoth("draining") }
        #expect(heap.isEmpty)
    }
}
