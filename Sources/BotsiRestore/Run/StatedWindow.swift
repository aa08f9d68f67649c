/// What a limiter's rate-limit fields with a remaining count showed of its window, reply by reply:
/// the quota and the window's length, the least remaining in each tenth of the last two windows,
/// how far remaining typically falls between two replies, and others' use of the window.
/// `RateController` decides what to do about it; this keeps the record.
struct StatedWindow {
    /// Remaining rising by this share of the quota between two replies is a fixed window's reset:
    /// a log or a bucket frees that much only over half a window.
    static let resetRise = 0.5
    /// Remaining rising by this share of the quota between two replies is more than replies out of
    /// order: a fall counted from a new low starts again from there.
    static let restartRise = 0.1

    private(set) var quota = 0
    private(set) var length = 1.0
    /// The least and most remaining seen in each tenth of the last window (the lowest is the window
    /// at its fullest: a fixed window's end, a sliding log's peak; a token bucket's emptiest).
    private var slots: [(slot: Int64, lowest: Int, highest: Int)] = []
    /// The least remaining of each tenth of the window before the last.
    private var earlierSlots: [(slot: Int64, lowest: Int)] = []
    private var firstSlot: Int64?
    /// The remaining count of the last reply, and how far it falls from one reply to the next
    /// (exponentially weighted; rises count as 0).
    private var lastRemaining: Int?
    private(set) var typicalFall = 0.0
    /// Others' rate at the last reply, requests a second: the larger of their use of the window
    /// over its length (in a fixed window whose reset was seen, since the reset over the time since,
    /// from a third of a window in) and their arrivals over the last quarter of a window (what
    /// remaining fell by, less this process's own admissions: a fixed window's count early in it is
    /// a part of the window's). Nil before any reply with a remaining count.
    private(set) var othersRate: Double?
    private var othersArrivals = 0.0
    /// What remaining fell by since the last sample, counted at each new low (its rises left out:
    /// replies out of order, a fixed window's reset, a log's requests leaving it), and that low.
    private var fallSinceSample = 0
    private var lowestSinceSample: Int?
    /// Samples a quarter of a window apart, the last `othersSteadySamples`.
    private var othersSamples: [(at: Double, admittedAt: Double, remaining: Int, rate: Double)] = []
    /// When the last reset of a fixed window came: after the admission of the reply before it.
    private var resetAt: Double?
    private var lastAdmittedAt: Double?
    /// When this process's accepted requests reached the limiter (half their duration after they
    /// left), over the last window and a half, by thousandths of the window: a stated window may
    /// be an hour, and its instants at a bulk API's pace were millions.
    private var ownAdmitted = BinnedTimes()
    /// How many thousandths of the window hold admissions: a memory bound the tests hold.
    var keptOwnAdmissions: Int { ownAdmitted.binCount }
    /// Others' use of the window (quota − remaining − this process's own admissions over the
    /// window) at its highest in the current window-long period, the last period's, and the mean
    /// square of the change from one period's to the next (exponentially weighted, less the
    /// sampling's share: below 0 when the peak varies less than its sampling).
    private var othersPeak: (period: Int64, value: Double)?
    /// Where those periods start (they are window-long, counted from here).
    private var periodOffset = 0.0
    private var lastOthersPeak: Double?
    private var othersChange: Double?
    private var othersChanges = 0

    /// A reply's remaining count. `countsChangesFrom`: others' peak changes count only from
    /// periods that start at or after this instant (not during the start or its echo); nil while
    /// the start still climbs.
    mutating func observe(
        quota: Int, window: Double, remaining: Int, admittedAt: Double, accepted: Bool, now: Double,
        countsChangesFrom: Double?, tuning: RateController.Tuning
    ) {
        self.quota = quota
        length = window
        let slot = Int64((now / window * 10).rounded(.down))
        let reset = lastRemaining.map { Double(remaining - $0) >= Double(quota) * Self.resetRise } ?? false
        if reset {
            // A fixed window's reset: others' peak is taken over periods from the middle of one
            // window to the middle of the next, so that each holds one reset, away from its edges.
            periodOffset = (now + window / 2).truncatingRemainder(dividingBy: window)
            resetAt = lastAdmittedAt ?? admittedAt
        }
        if let lastRemaining {
            typicalFall = typicalFall * 0.9 + Double(max(0, lastRemaining - remaining)) * 0.1
        }
        // Replies come back in another order than their requests reached the limiter: only a new
        // low counts as a fall. A rise of `restartRise` of the quota or more starts the count
        // again: a fixed window's reset, even one that `resetRise` misses (a window little used).
        let restart = lastRemaining.map { Double(remaining - $0) >= Double(quota) * Self.restartRise } ?? false
        if let lowest = lowestSinceSample, !restart {
            fallSinceSample += max(0, lowest - remaining)
            lowestSinceSample = min(lowest, remaining)
        } else {
            lowestSinceSample = remaining
        }
        lastRemaining = remaining
        defer { lastAdmittedAt = admittedAt }
        measureOthers(
            remaining: remaining, admittedAt: admittedAt, accepted: accepted, now: now,
            countsChangesFrom: countsChangesFrom, tuning: tuning)
        if firstSlot == nil { firstSlot = slot }
        if let last = slots.last, last.slot == slot {
            slots[slots.count - 1].lowest = min(last.lowest, remaining)
            slots[slots.count - 1].highest = max(last.highest, remaining)
        } else {
            slots.append((slot, remaining, remaining))
            for old in slots where old.slot <= slot - 10 { earlierSlots.append((old.slot, old.lowest)) }
            earlierSlots.removeAll { $0.slot <= slot - 30 }
            slots.removeAll { $0.slot <= slot - 10 }
        }
    }

    /// Others' use of the window, sampled at every reply; its peak over each window-long period,
    /// and how much that peak changes from one period to the next.
    private mutating func measureOthers(
        remaining: Int, admittedAt: Double, accepted: Bool, now: Double, countsChangesFrom: Double?,
        tuning: RateController.Tuning
    ) {
        ownAdmitted.binWidth = length / 1000
        if accepted { ownAdmitted.insert(admittedAt) }
        ownAdmitted.drop(through: admittedAt - length * 1.5)
        let own = ownAdmitted.count(after: admittedAt - length, through: admittedAt)
        let others = Double(max(0, quota - remaining - own))
        var rate = others / length
        if let resetAt, admittedAt - resetAt < length, admittedAt - resetAt >= length / 3 {
            let ownSince = ownAdmitted.count(after: resetAt, through: admittedAt)
            rate = Double(max(0, quota - remaining - ownSince)) / (admittedAt - resetAt)
        }
        if othersSamples.last.map({ now - $0.at >= length / 4 }) ?? true {
            othersArrivals = 0
            if let last = othersSamples.last, admittedAt > last.admittedAt {
                // Over the longer of the two spans: a slow reply just after the sample's moment
                // was admitted well before it.
                let ownBetween = ownAdmitted.count(after: last.admittedAt, through: admittedAt)
                let span = max(admittedAt - last.admittedAt, now - last.at)
                othersArrivals = Double(max(0, fallSinceSample - ownBetween)) / span
            }
            fallSinceSample = 0
            lowestSinceSample = remaining
            othersSamples.append((now, admittedAt, remaining, max(rate, othersArrivals)))
            if othersSamples.count > tuning.othersSteadySamples { othersSamples.removeFirst() }
        }
        othersRate = max(rate, othersArrivals)
        let period = Int64(((now - periodOffset) / length).rounded(.down))
        if let peak = othersPeak, peak.period >= period {
            // (A sample's period number can fall back by one when a later reset moves the offset.)
            othersPeak = (peak.period, max(peak.value, others))
            return
        }
        if let peak = othersPeak, let from = countsChangesFrom, Double(peak.period) * length + periodOffset >= from {
            if let last = lastOthersPeak {
                var diff = peak.value - last
                othersChanges += 1
                if othersChanges > tuning.othersWarmup, let known = othersChange {
                    let bound = max(3 * max(known, 0).squareRoot(), 2)
                    diff = min(max(diff, -bound), bound)
                }
                // Half the mean square of a change: the variance of a peak that varies at random,
                // less what sampling it at this process's replies adds: others' use grows by about
                // `step` between two of them, so the peak is seen short by up to a step, evenly
                // (step² / 12). Evenly paced shards then show next to none.
                let step = peak.value / Double(max(own, 1))
                let change = diff * diff / 2 - step * step / 12
                let weight = max(tuning.othersWeight, 1 / Double(othersChanges))
                othersChange = othersChange.map { $0 * (1 - weight) + change * weight } ?? change
            }
            lastOthersPeak = peak.value
        }
        othersPeak = (period, others)
    }

    /// Others' rate, when it has held over the last `othersSteadySamples` quarter-window samples and
    /// now (grown by at most `othersSteadyGrowth` from each to the next) and is not small
    /// (`othersSteadyShare` of the stated rate): the live app's traffic, not other processes that
    /// climb as this one does. Nil while the window is near full at any of them.
    func steadyOthersRate(tuning: RateController.Tuning) -> Double? {
        guard let othersRate, othersSamples.count >= tuning.othersSteadySamples,
            othersRate >= tuning.othersSteadyShare * Double(quota) / length
        else { return nil }
        // A window near full refuses the excess: what it admits then is whoever sends, not a rate.
        let quarter = Double(quota) / 4
        guard Double(lastRemaining ?? 0) >= quarter else { return nil }
        guard othersSamples.allSatisfy({ Double($0.remaining) >= quarter }) else { return nil }
        var earlier: Double?
        for rate in othersSamples.map(\.rate) + [othersRate] {
            if let earlier, rate > earlier * tuning.othersSteadyGrowth + 1 / length { return nil }
            earlier = rate
        }
        return othersRate
    }

    /// The share of the window to keep for others' use to fluctuate in: `othersDeviations`
    /// standard deviations of their peak (at least `roomKept`), less what `headroom` already
    /// leaves unused for them.
    func othersKept(headroom: Double, tuning: RateController.Tuning) -> Double {
        guard let othersChange, quota > 0 else { return tuning.roomKept }
        let deviation = max(othersChange, 0).squareRoot()
        return max(tuning.roomKept, tuning.othersDeviations * deviation / Double(quota) - headroom)
    }

    /// The share of the quota left unused at the window's fullest over the last window, 0…1.
    var room: Double? {
        guard quota > 0, var lowest = slots.first?.lowest else { return nil }
        for slot in slots { lowest = min(lowest, slot.lowest) }
        return Double(lowest) / Double(quota)
    }

    /// How far the window's fullest moment rose from the window before to the last, as a share of
    /// the quota (a bucket draining; 0 for a window used alike from one to the next).
    var fall: Double {
        guard let seen = room, let latest = slots.last?.slot else { return 0 }
        guard let firstSlot, latest - 29 >= firstSlot, let earlier = lowestEarlier(latest - 10),
            let before = lowestEarlier(latest - 20)
        else { return 0 }
        // Only a fall over two windows in a row: a bucket draining, not one window's noise.
        return max(0, min(Double(earlier) / Double(quota) - seen, Double(before - earlier) / Double(quota)))
    }

    /// The least remaining of the window-long stretch of earlier tenths that ends at `through`.
    private func lowestEarlier(_ through: Int64) -> Int? {
        var lowest: Int?
        for slot in earlierSlots where slot.slot <= through && slot.slot > through - 10 {
            lowest = min(lowest ?? slot.lowest, slot.lowest)
        }
        return lowest
    }

    /// Tenths of the last window, from `from` on, in which every reply found the window empty.
    func emptiedTenths(from: Double) -> Int {
        var count = 0
        for slot in slots where slot.highest == 0 && Double(slot.slot) * length / 10 >= from { count += 1 }
        return count
    }
}

/// Instants counted by bins of `binWidth`, oldest first: a count over a span is exact but for the
/// bins its two ends fall in, and the memory is one bin per width that holds any, however many
/// instants each holds. Each bin keeps the running total through it, so a count is two binary
/// searches, as `OrderedTimes`' is.
struct BinnedTimes {
    private var bins: [(index: Int64, total: Int)] = []
    private var head = 0
    /// The running total through the last bin dropped.
    private var droppedTotal = 0

    /// Changing it regroups what is kept into bins of the new width.
    var binWidth = 0.001 {
        didSet {
            guard binWidth != oldValue, head < bins.count else { return }
            var regrouped: [(index: Int64, total: Int)] = []
            for bin in bins[head...] {
                let index = self.index(Double(bin.index) * oldValue + oldValue / 2)
                if let last = regrouped.last, last.index == index {
                    regrouped[regrouped.count - 1].total = bin.total
                } else {
                    regrouped.append((index, bin.total))
                }
            }
            bins = regrouped
            head = 0
        }
    }

    var binCount: Int { bins.count - head }

    private func index(_ time: Double) -> Int64 { Int64((time / binWidth).rounded(.down)) }

    mutating func insert(_ time: Double) {
        let index = self.index(time)
        // Nearly in order: the bins after it (few) each count one more.
        var position = bins.count
        while position > head, bins[position - 1].index > index {
            position -= 1
            bins[position].total += 1
        }
        if position > head, bins[position - 1].index == index {
            bins[position - 1].total += 1
        } else {
            let before = position > head ? bins[position - 1].total : droppedTotal
            bins.insert((index, before + 1), at: position)
        }
    }

    /// Drops the bins that end at or before `time`.
    mutating func drop(through time: Double) {
        let index = self.index(time)
        while head < bins.count, bins[head].index < index {
            droppedTotal = bins[head].total
            head += 1
        }
        if head >= 1024, head * 2 >= bins.count {
            bins.removeFirst(head)
            head = 0
        }
    }

    /// How many lie in the bins after `start`'s, through `end`'s.
    func count(after start: Double, through end: Double) -> Int {
        max(0, total(through: index(end)) - total(through: index(start)))
    }

    /// The running total through the last kept bin at or before `index` (through the dropped ones,
    /// if none is).
    private func total(through index: Int64) -> Int {
        var low = head
        var high = bins.count
        while low < high {
            let middle = (low + high) / 2
            if bins[middle].index <= index { low = middle + 1 } else { high = middle }
        }
        return low > head ? bins[low - 1].total : droppedTotal
    }
}

/// Instants kept in order, oldest first, for counting those within a span: they arrive nearly in
/// order (an admission is half a reply's duration before it), so an insertion moves few, and the
/// old ones leave from the front.
struct OrderedTimes {
    private var times: [Double] = []
    private var head = 0

    var count: Int { times.count - head }

    mutating func insert(_ time: Double) {
        var index = times.count
        while index > head, times[index - 1] > time { index -= 1 }
        times.insert(time, at: index)
    }

    mutating func drop(through time: Double) {
        while head < times.count, times[head] <= time { head += 1 }
        if head >= 1024, head * 2 >= times.count {
            times.removeFirst(head)
            head = 0
        }
    }

    /// How many lie in (start, end].
    func count(after start: Double, through end: Double) -> Int {
        max(0, firstIndex(after: end) - firstIndex(after: start))
    }

    /// The index of the first time later than `time` (binary search over the kept ones).
    private func firstIndex(after time: Double) -> Int {
        var low = head
        var high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
