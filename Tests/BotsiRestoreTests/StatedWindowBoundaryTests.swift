import Testing

@testable import BotsiRestore

/// The boundaries of what a stated window records: a reset against a rise, a restart of the fall
/// count, the tenths the room and the fall are taken over, tenths emptied all through.
extension StatedWindowTests {
    /// A reply to a request that reached a 100-a-second window (`quota` over `length`) at `now`, with
    /// `remaining` left of it.
    private static func observe(
        _ window: inout StatedWindow, _ remaining: Int, at now: Double, quota: Int = 100, length: Double = 1,
        accepted: Bool = false, countsChangesFrom: Double? = nil
    ) {
        window.observe(
            quota: quota, window: length, remaining: remaining, admittedAt: now, accepted: accepted, now: now,
            countsChangesFrom: countsChangesFrom, tuning: RateController.Tuning())
    }

    private static func close(_ rate: Double?, _ expected: Double) -> Bool {
        rate.map { abs($0 - expected) < 0.5 } ?? false
    }

    /// Remaining rising by exactly half the quota is a fixed window's reset, dated at the reply
    /// before it: from a third of a window after that on, others' rate is what they used since the
    /// reset over the time since (a count that restarted is a small part of their rate early on),
    /// and once a window has passed, their use over the window again.
    @Test func aRiseOfHalfTheQuotaIsAResetOthersAreCountedFrom() {
        var window = StatedWindow()
        Self.observe(&window, 40, at: 0)
        Self.observe(&window, 90, at: 0.05)
        Self.observe(&window, 90, at: 0.3)
        #expect(Self.close(window.othersRate, 10), "under a third of a window since: 10 over the window")
        Self.observe(&window, 85, at: 0.4)
        #expect(Self.close(window.othersRate, 37.5), "15 since the reset at 0 s, over 0.4 s: \(window.othersRate!)")
        Self.observe(&window, 80, at: 1.2)
        #expect(
            Self.close(window.othersRate, 20), "a window after the reset, 20 over the window: \(window.othersRate!)")
    }

    /// Each fall between two replies weighs a tenth in the typical fall; a rise is no fall.
    @Test func aRiseCountsAsNoFallInTheTypicalFall() {
        var window = StatedWindow()
        Self.observe(&window, 100, at: 0)
        Self.observe(&window, 90, at: 0.01)
        #expect(abs(window.typicalFall - 1) < 1e-9, "\(window.typicalFall)")
        Self.observe(&window, 95, at: 0.02)
        #expect(abs(window.typicalFall - 0.9) < 1e-9, "\(window.typicalFall)")
    }

    /// Others' arrivals are what remaining fell by from each new low: a rise of exactly a tenth of
    /// the quota starts the count again from there (a fall after it counts whole), a smaller rise
    /// does not (replies out of order), and each quarter-window sample starts it afresh from the
    /// remaining it saw.
    @Test func aRiseOfATenthOfTheQuotaStartsTheFallCountAgain() {
        var window = StatedWindow()
        Self.observe(&window, 99, at: 0)
        Self.observe(&window, 89, at: 0.05)
        Self.observe(&window, 99, at: 0.1)
        Self.observe(&window, 94, at: 0.15)
        Self.observe(&window, 96, at: 0.3)
        #expect(Self.close(window.othersRate, 50), "10 and 5 fallen in 0.3 s: \(window.othersRate!)")
        Self.observe(&window, 86, at: 0.35)
        Self.observe(&window, 86, at: 0.6)
        #expect(Self.close(window.othersRate, 33.3), "10 from the sample's 96: \(window.othersRate!)")
        Self.observe(&window, 86, at: 0.9)
        #expect(Self.close(window.othersRate, 14), "no fall since: 14 used over the window: \(window.othersRate!)")
    }

    /// The room is the least remaining of the last ten tenths of the window, the least of each
    /// tenth's replies: a low at 0.05 s counts through 0.95 s and no longer at 1 s.
    @Test func theRoomIsTheLeastRemainingOfTheLastTenTenths() {
        var window = StatedWindow()
        for step in 0...20 {
            Self.observe(&window, step == 1 ? 10 : 50, at: Double(step) / 20)
            if step == 19 { #expect(window.room == 0.1, "\(String(describing: window.room))") }
        }
        #expect(window.room == 0.5, "\(String(describing: window.room))")
    }

    /// A tenth counts as emptied only when every reply in it found the window empty, and only from
    /// the tenth that starts at `from` on.
    @Test func aTenthIsEmptiedOnlyWhenEveryReplyInItFoundNoneLeft() {
        var window = StatedWindow()
        let remaining = [20, 20, 20, 0, 0, 0, 20]
        for (tenth, left) in remaining.enumerated() {
            Self.observe(&window, left, at: Double(tenth) / 10 + 0.02)
            Self.observe(&window, tenth == 4 ? 5 : left, at: Double(tenth) / 10 + 0.07)
        }
        #expect(window.emptiedTenths(from: 0.3) == 2, "the tenths from 0.3 and 0.5 s, not 0.4 s's")
        #expect(window.emptiedTenths(from: 0.31) == 1)
    }

    /// The fall is the lesser rise of the window's fullest moment over two windows in a row (90, 75
    /// in the second window's first tenth, then 60 left: 0.15 of the quota), known only once three
    /// windows were seen, and none once a window holds where the last one was.
    @Test func theFallIsTheLesserOfTwoWindowsInARowAndNeedsThreeWindows() {
        var window = StatedWindow()
        let lowest = [90, 80, 60, 60]
        var fall: [Int: Double] = [:]
        for step in 0..<80 {
            let now = Double(step) / 20 + 0.02
            Self.observe(&window, step / 2 == 10 ? 75 : lowest[step / 20], at: now)
            fall[Int((now * 10).rounded(.down))] = window.fall
        }
        #expect(fall[28] == 0, "two windows and nine tenths seen: \(fall[28]!)")
        #expect(abs(fall[29]! - 0.15) < 1e-9, "\(fall[29]!)")
        #expect(fall[39] == 0, "\(fall[39]!)")
    }
}

extension StatedWindowTests {
    /// `windows` one-second windows of a stated `quota`, a reply every 0.05 s from 0.01 s on, and
    /// others' use climbing through window `w` to `others[w]`; each reply's request admitted (own
    /// 20 a window) or refused (none). `fixed`: remaining counts only since each whole second, so
    /// it rises at each edge (this process's own too). Returns what `othersKept` gave after each
    /// reply.
    private static func peaks(
        _ others: [Int], quota: Int, admitted: Bool = true, fixed: Bool = false, countsChangesFrom: Double = 0,
        headroom: Double = 0
    ) -> [Double] {
        var window = StatedWindow()
        var kept: [Double] = []
        for (index, peak) in others.enumerated() {
            for step in 0..<20 {
                let now = Double(index) + (Double(step) + 0.2) / 20
                let own = admitted ? (fixed ? step + 1 : min(index * 20 + step + 1, 20)) : 0
                window.observe(
                    quota: quota, window: 1, remaining: quota - own - peak * (step + 1) / 20, admittedAt: now,
                    accepted: admitted, now: now, countsChangesFrom: countsChangesFrom, tuning: RateController.Tuning())
                kept.append(window.othersKept(headroom: headroom, tuning: RateController.Tuning()))
            }
        }
        return kept
    }

    /// Others' peak at 20 and 30 of 200 by turns changes by 10 from each window to the next: half
    /// its square is the variance kept for (two deviations, 0.07 of the quota), counted from the
    /// second window's peak on and taken over each window's highest. A jump to 90 past the warmup
    /// counts only as three deviations, and a weight of a fifth, in the running mean: 0.09, not
    /// the 0.23 the whole jump gives.
    @Test func othersPeakThatVariesKeepsTwoDeviationsOfIt() {
        let kept = Self.peaks([20, 30, 20, 30, 20, 30, 20, 90, 90], quota: 200)
        #expect(kept[39] == 0.02, "no change seen before the second window closes")
        #expect(abs(kept[40] - 0.0706) < 0.001, "\(kept[40])")
        #expect(abs(kept[159] - 0.0706) < 0.001, "\(kept[159])")
        #expect(abs(kept[160] - 0.0919) < 0.001, "\(kept[160])")
        // `headroom` already leaves its share free.
        let lessHeadroom = Self.peaks([20, 30, 20], quota: 200, headroom: 0.05)
        #expect(abs(lessHeadroom[40] - 0.0206) < 0.001, "\(lessHeadroom[40])")
    }

    /// A peak seen only at this process's replies is short by up to what others add between two of
    /// them (with none of its own admitted, the whole peak): a change within that is sampling, and
    /// keeps no more than `roomKept`.
    @Test func aChangeWithinTheSamplingKeepsOnlyTheLeastRoom() {
        let kept = Self.peaks([10, 15, 10, 15, 10, 15], quota: 50, admitted: false)
        #expect(kept.allSatisfy { $0 == 0.02 }, "\(kept.max()!)")
    }

    /// In a fixed window (its reset seen at each second's first reply) others' periods run from the
    /// middle of one window to the middle of the next, each holding one window's end: with changes
    /// counted from 1.3 s, the first counted period starts at 1.51 s and holds the second window's
    /// peak (40); the next closes at 3.51 s with the third's (60).
    @Test func aFixedWindowsPeriodsRunFromMidWindowToMidWindow() {
        let kept = Self.peaks([40, 40, 60, 60], quota: 100, fixed: true, countsChangesFrom: 1.3)
        #expect(kept[69] == 0.02, "no change counted before 3.51 s: \(kept[69])")
        #expect(abs(kept[70] - 0.2823) < 0.001, "a change of 20: \(kept[70])")
    }
}

extension StatedWindowTests {
    /// A reset seen late in a window (the replies paused over its start) starts others' periods late
    /// in each window; one seen early in a later window moves the start on, and the period then in
    /// progress numbers one less. It is still the same period: no change of others' peak counts
    /// until it ends at 4.9 s, not one at the reset and another as its number comes back.
    @Test func aPeriodNumberedOneLessAfterAResetIsTheSamePeriod() {
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        // Fixed windows of 100: others use 60, 10, 60 and 10 of them, and this process's own
        // requests count from each whole second as theirs do.
        let others = [60, 10, 60, 10, 60]
        var own = [0, 0, 0, 0, 0]
        var kept: [Double] = []
        func reply(at now: Double, admittedAt: Double) {
            let edge = Int(admittedAt.rounded(.down))
            own[edge] += 1
            let remaining = 100 - own[edge] - Int(Double(others[edge]) * (admittedAt - Double(edge)))
            window.observe(
                quota: 100, window: 1, remaining: remaining, admittedAt: admittedAt, accepted: true, now: now,
                countsChangesFrom: 0, tuning: tuning)
            kept.append(window.othersKept(headroom: 0, tuning: tuning))
        }
        for step in 0..<18 { reply(at: Double(step) / 20 + 0.01, admittedAt: Double(step) / 20 + 0.01) }
        // The reset seen at 1.8 s: periods start at 0.3 s into each second (the second window,
        // little used, shows no reset at 2 s).
        for step in 0..<23 { reply(at: 1.8 + Double(step) / 20, admittedAt: 1.8 + Double(step) / 20) }
        // A slow reply from the end of the third window opens the period from 3.3 s; the reset
        // seen at 3.4 s moves the start to 0.9 s, and that period numbers one less.
        reply(at: 3.35, admittedAt: 2.95)
        let afterSlowReply = kept.count - 1
        for step in 0..<31 { reply(at: 3.4 + Double(step) / 20, admittedAt: 3.4 + Double(step) / 20) }
        #expect(
            kept[afterSlowReply...].dropLast().allSatisfy { $0 == kept[afterSlowReply] }, "\(kept[afterSlowReply...])")
        #expect(kept.last != kept[afterSlowReply], "the period ends at 4.9 s")
    }
}

extension StatedWindowTests {
    /// `steadyOthersRate` by hundredths of a second for a 100-a-second window used by others at
    /// `others(t)` a second and by this process's 20 a second, a reply every 0.05 s: counted over
    /// the last second, as a log keeps it, or (`fixed`) from each whole second on.
    private static func steady(
        until end: Double, fixed: Bool = false, others: (Double) -> Double
    ) -> [Int: Double?] {
        var window = StatedWindow()
        let tuning = RateController.Tuning()
        var steady: [Int: Double?] = [:]
        for step in 1...Int((end * 20).rounded()) {
            let now = Double(step) / 20
            let own = fixed ? step % 20 + 1 : min(step, 20)
            let sinceEdge = Double(step % 20) / 20
            let othersCount = fixed ? others(now) * sinceEdge : others(now)
            window.observe(
                quota: 100, window: 1, remaining: max(0, 100 - own - Int(othersCount.rounded())),
                admittedAt: now - 0.01, accepted: true, now: now, countsChangesFrom: nil, tuning: tuning)
            steady[step * 5] = window.steadyOthersRate(tuning: tuning)
        }
        return steady
    }

    private static func near(_ rate: Double??, _ expected: Double, within: Double = 0.5) -> Bool {
        (rate ?? nil).map { abs($0 - expected) < within } ?? false
    }

    /// Others at exactly a tenth of the stated rate are not too few to be the live app's.
    @Test func othersAtATenthOfTheStatedRateAreSteady() {
        let steady = Self.steady(until: 1.5) { _ in 10 }
        #expect(Self.near(steady[75], 10), "\(String(describing: steady[75]))")
    }

    /// Others that doubled from 10 to 20 a second at 0.6 s grew by more than ×1.6 and one a second
    /// from one quarter-window sample to the next: not steady until the three samples all hold the
    /// 20 (from 1.3 s on).
    @Test func othersThatDoubledAreSteadyOnlyOnceTheLastThreeSamplesHoldIt() {
        let steady = Self.steady(until: 2) { $0 < 0.6 ? 10 : 20 }
        #expect(steady[75]! == nil && steady[125]! == nil, "\(steady.sorted { $0.key < $1.key })")
        #expect(Self.near(steady[150], 20), "\(String(describing: steady[150]))")
    }

    /// In a fixed window others at 60 a second and this process's 20 leave under a quarter of the
    /// window only at its end: a reply there is not steady even though every sample (each a
    /// quarter window apart, none that late) had room; mid-window it is, by the samples' arrivals.
    @Test func aFixedWindowNearFullAtItsEndIsNotSteadyThere() {
        let steady = Self.steady(until: 2.5, fixed: true) { _ in 60 }
        #expect(Self.near(steady[80], 60, within: 1), "\(String(describing: steady[80]))")
        #expect(steady[95]! == nil, "\(String(describing: steady[95]))")
    }

    /// A window near full at any of the last three samples (others at 70 a second for the first
    /// second) is not steady when it has room again now, until those samples have aged out.
    @Test func aSampleOfAWindowNearFullKeepsOthersUnsteadyUntilItAgesOut() {
        let steady = Self.steady(until: 2) { $0 < 1 ? 70 : 30 }
        #expect(stride(from: 105, to: 155, by: 5).allSatisfy { steady[$0]! == nil })
        #expect(Self.near(steady[175], 30), "\(String(describing: steady[175]))")
    }
}

extension StatedWindowTests {
    /// Dropping through an instant drops the instants at it too: the controller keeps admissions
    /// after the one two windows back, as the counts over (start, end] read them.
    @Test func orderedTimesDroppedThroughAnInstantLoseTheOnesAtIt() {
        var times = OrderedTimes()
        for time in [0.0, 1, 1, 2] { times.insert(time) }
        times.drop(through: 1)
        #expect(times.count == 1)
        #expect(times.count(after: 0, through: 2) == 1)
    }
}
