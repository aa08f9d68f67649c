import BotsiAPI
import Foundation

/// What a reply says to the pacing.
enum PacingSignal: Equatable {
    /// Any reply that was not a request to slow down.
    case accepted
    /// 429, with its Retry-After in seconds.
    case tooManyRequests(retryAfter: Double?)
    /// 503: a burst of them means overload.
    case unavailable
}

/// The send rate and concurrency of one process on a limit it may share with other processes and
/// with the app's live traffic, none of which it can see. docs/pacing.md is the model: the state,
/// each reaction, why N copies converge, and the reason for every constant (its table is checked
/// against `Tuning()` by a test).
struct RateController {
    struct Tuning: Equatable {
        /// The start: paced from this rate, growing by `startGrowth` a second until the limit shows.
        var startRate = 10.0
        var startGrowth = 32.0
        /// A 429 episode cuts to this share of the rate the limiter accepted from this process.
        var backoff = 0.97
        /// After a cut the rate returns toward the plateau with this time constant (seconds).
        var recoveryTime = 0.25
        /// The share of the ceiling (the rate found) the rate settles at after a cut.
        var plateau = 0.99
        /// Past the plateau the rate probes: plateau × ceiling × (1 + probe × t³), t in seconds —
        var probe = 0.001
        /// — with the cubic term on at least this share of the ceiling the start found (of the
        /// start rate, for a start whose first reply was a 429): a process cut far below the
        /// others regrows on a scale like theirs, not on its own small one, so shares even out.
        var probeScale = 0.5
        /// One episode per window: 429s within this long of a cut are the same overshoot draining.
        var holdoff = 1.0
        /// The accepted rate at a cut is the lower of the last second's and this many seconds'.
        var measureOver = 2.0
        /// Since a cut, a window refusing this share of what was sent is closed: it is probed at
        /// `trickle` × the rate until it accepts again.
        var closedShare = 0.9
        var trickle = 0.05
        /// A closed window's opening dates this many windows after it: a fixed window opens at the
        /// same moment of every window, and a cut there measures what the window gave since its
        /// edge.
        var openingWindows = 3.0
        /// Since a cut, refusing this share (at least `recutCount` refusals): the cut was too small.
        var recutShare = 0.3
        var recutCount = 10
        /// Stated limits: run at most at this share of quota / window.
        var limitShare = 0.99
        /// Stated limits: what remains of the window falling to this share of the quota is an
        /// episode, as a 429 is —
        var lowRemaining = 0.02
        /// — unless this share or more of the window's use is this process's own: alone at
        /// `limitShare` of a limit, the window runs that low by design, and the cap paces it.
        var ownShare = 0.9
        /// Stated limits with a remaining count: every second the rate grows by this share of the
        /// stated rate for all of the window left unused (by anyone) beyond `roomKept`. The same
        /// step for every process that sees the same window: additive, so shares even out rather
        /// than keep their ratios, and a window freed by a process that finished is taken up in
        /// seconds, where the cubic probe took ten.
        var roomGrowth = 0.2
        var roomKept = 0.02
        /// — with the room taken as the lowest remaining seen less this share of how far remaining
        /// typically falls between two of this process's replies: a slow sender's replies miss the
        /// bottom of a fixed window's fall, and the room it saw was not there.
        var unseenFall = 0.5
        /// Stated limits, shared: a window seen empty all through (remaining 0 at every reply) in
        /// `emptiedTenths` tenths of the last window is overloaded — a token bucket drained, a log
        /// kept full — and every process that sees it cuts by the same `emptiedCut`, not to what
        /// the limiter happened to accept from it.
        var emptiedTenths = 5
        var emptiedCut = 0.9
        /// A 429 after the holdoff is an episode only when the last second's refusals stand out
        /// from the background — the share refused while the rate was at or under the ceiling, no
        /// more than `noiseShare` of it: by more than `noiseDeviations` standard deviations and one.
        var noiseShare = 0.01
        var noiseDeviations = 3.0
        /// Refusals under the ceiling needed before the background counts at all.
        var noiseEvidence = 10.0
        /// Stated limits with a remaining count: growth stops, and a window counts as nearly used,
        /// this many standard deviations of others' use (at its peak, from one window to the next)
        /// short of the quota — at least `roomKept`: room for the live app's busier seconds.
        var othersDeviations = 2.0
        /// The weight of each window's change in others' peak use (exponentially weighted): about
        /// the last five windows, so a change of what others do shows within seconds.
        var othersWeight = 0.2
        /// Changes averaged plainly before the deviation counts and before one change is bounded
        /// to three deviations: the first windows set the scale, later single jumps (a shard
        /// finishing, a cut) do not blow it up.
        var othersWarmup = 4
        /// A window whose fullest moment rises from one window to the next, two in a row, is spent
        /// faster than it refills (a bucket draining): the room counts as this many windows' rise
        /// less, and the cut at a nearly used window sheds this process's part of the rise.
        var fallWindows = 2.0
        /// A rise of this share of the quota a window, two windows in a row, means others spend it
        /// too, however much of the window's use is this process's own (a bucket's remaining
        /// is not a window's count).
        var fallShare = 0.05
        /// A window closed this long (seconds) is not a one-second window: the limit is enforced
        /// over a longer one (Apple's over an hour), which this process spent early. At each
        /// opening the rate becomes what the window gave it over the last cycle, spread evenly.
        var longClosed = 3.0
        /// Stated limits with a remaining count: others' use of the window that holds (grows by at
        /// most `othersSteadyGrowth` from one quarter of a window to the next, over
        /// `othersSteadySamples` quarters) and is at least `othersSteadyShare` of the stated rate was
        /// there before this process: the live app. The start's climb stops at the room it leaves.
        var othersSteadyShare = 0.1
        var othersSteadyGrowth = 1.6
        var othersSteadySamples = 3
    }

    private enum Phase: Equatable {
        /// Climbing from `startRate` until the limit shows.
        case starting
        /// After the start's overshoot: climbing back at the start's pace to this rate.
        case replaying(to: Double)
        /// After a cut: returning toward the plateau.
        case recovering
        /// At the plateau since this instant, probing above it.
        case probing(since: Double)
    }

    static let unavailableBurst = 3
    static let unavailableShare = 0.25
    static let unavailableBackoff = 0.8

    let tuning: Tuning
    let enabled: Bool
    let rateCap: Double?
    let concurrencyCap: Int
    let headroom: Double

    /// The send-rate limit this controller sets; nil with `--no-adaptive`.
    private(set) var rate: Double?
    private(set) var concurrency: Int

    private var phase = Phase.starting
    /// The rate the limiter accepted from this process at the last cut: its share of the limit then.
    /// Never below 1/s: a 429 before anything was accepted (a window full of others' requests, or
    /// a fault) says nothing of the limit, and halving at every episode of a service that refuses a
    /// large share at random took the rate to 0.3/s; a limit under one a second is for `--rate`.
    private var ceiling: Double? {
        didSet { if let ceiling, ceiling < 1 { self.ceiling = 1 } }
    }
    private var cutAt = -Double.infinity
    /// Replies to requests sent since the last cut, and how many of them were refused.
    private var fresh = (replies: 0, refused: 0)
    /// While a closed window is probed at a trickle: the rate to go back to when it accepts again.
    private var resumeRate: Double?
    /// When the window was found closed (the trickle began), until it accepts again.
    private var closedAt: Double?
    /// Since when the window has been open, and how many of this process's requests it accepted
    /// since: from the first acceptance or the last opening until a long window is known, then
    /// from its last long opening.
    private var opening: (at: Double, accepted: Int)?
    /// A limit enforced over a long window: opening to opening, as last seen. The probe grows on
    /// this time scale, since the window shows an overshoot only when it closes.
    private var cycle: Double?
    /// This process's acceptances over the last two cycles, once a long window is known (in
    /// thousandths of a cycle), complete from `longKeptFrom` on.
    private var longAccepted = BinnedTimes()
    private var longKeptFrom = 0.0
    /// A long window carried from an earlier run, until the first instant this controller sees:
    /// its probe and its memory of the cycle start there.
    private var carriedPending = false
    private var longWindowSeen = false
    /// `opening` dates from a long opening, not from this run's first acceptance: from it to the
    /// next long opening is a cycle (for a window carried from an earlier run, not before one).
    private var openingIsLong = false
    /// What the window gave at its last opening (or the carried pace): the least the next run
    /// starts from (`longWindow`).
    private var longMeasure: Double?
    private var climbedAt: Double?
    /// The ceiling the start found, the scale a probe grows on at least (`probeScale`).
    private var startCeiling: Double?
    /// Since when the start's climb has been held at a cap (the stated rate or `--rate`).
    private var cappedSince: Double?
    /// Others' use of a stated window was seen steady during the start (`othersSteadyShare`), and
    /// since when the start's climb has stopped at the room they leave.
    private var othersSteadySeen = false
    private var roomCappedSince: Double?
    /// The last tick found the rate in use (rows held back by it).
    private var inUse = true
    private var lastTick: Double?
    private var recentUnavailable: [Double] = []
    /// 429s of the last second, for telling a limit from a service that refuses a few at random.
    private var recentRefused: [Double] = []
    /// Replies (and refusals) to requests sent at or under the ceiling, past a cut's holdoff:
    /// what this process's own pace did not cause. Halved as it grows, to follow the service.
    private var background = (replies: 0.0, refused: 0.0)
    /// The stated limit per second (quota / window).
    private var stated: Double?
    private var longestReset = 0.0
    /// Stated limits with a remaining count: what the fields showed of the window.
    private var window = StatedWindow()
    /// When the last cut for an emptied window was made, and until when the window still holds
    /// the start's climb (a log the climb filled stays full for a window without being overloaded).
    private var emptiedCutAt = -Double.infinity
    private var startEchoUntil = -Double.infinity
    /// Others' requests share the window: this process's own make up less than `ownShare` of it.
    private var sharing = false
    private var firstAcceptedAt: Double?
    private var events = 0
    private var lowestRate: Double?

    private var acceptedMeter = SendMeter()
    /// When each accepted request reached the service (half its duration before its reply), over
    /// the last two windows: what a window gave this process since it opened.
    private var admissions = OrderedTimes()
    /// How many admissions are kept: a memory bound the tests hold.
    var keptAdmissions: Int { admissions.count }
    /// When a closed window last opened again (between the arrivals of the last refused and the
    /// first accepted trickle): a fixed window's edge, until another is seen.
    private var openedAt: Double?
    /// When the last refused request reached the service: a closed window opened after it.
    private var lastRefusedArrival: Double?
    /// Typical request duration (exponentially weighted).
    private(set) var latency = 0.05

    init(pacing: PacingConfiguration, tuning: Tuning = Tuning()) {
        self.tuning = tuning
        enabled = pacing.adaptive
        rateCap = pacing.rateCap
        concurrencyCap = pacing.concurrency
        headroom = pacing.headroom
        concurrency = pacing.concurrency
        if enabled { rate = min(tuning.startRate, pacing.rateCap ?? .infinity) }
        if enabled, let carried = pacing.carried, carried.cycle > 0, carried.rate > 0 {
            // The pace the window gave last time, from the first request: the climb would spend
            // the window early and close it to everyone for the rest of it. If the window has less
            // to give now, it closes sooner, and its opening sets the pace as it does for a window
            // this run found.
            cycle = carried.cycle
            longAccepted.binWidth = carried.cycle / 1000
            ceiling = carried.rate
            startCeiling = ceiling
            longMeasure = ceiling
            rate = min(ceiling! * plateau, pacing.rateCap ?? .infinity)
            phase = .probing(since: 0)
            carriedPending = true
        }
    }

    /// The long window this controller paces by, for the next run: nil until one is known.
    var longWindow: LongWindowPace? {
        guard let cycle, let measure = longMeasure, let rate else { return nil }
        // Where the pace stands, as the measure it rests on (with the probe's growth since the
        // last opening), and never below the last measure: a closed window's trickle, and a 429's
        // or an overload's step back, which only an opening undoes, must not lower every next run.
        return LongWindowPace(cycle: cycle, rate: max(measure, rate / plateau), seen: longWindowSeen)
    }

    /// Dates a carried window's probe and memory from the first instant seen.
    private mutating func anchorCarried(now: Double) {
        guard carriedPending else { return }
        carriedPending = false
        phase = .probing(since: now)
        longKeptFrom = now
    }

    /// The send-rate limit in force: the lowest of the controller's, the stated one and the cap.
    /// Read several times a send, so compared in place (an array of the three, compacted, cost
    /// two allocations each time: ~2,300 instructions a request).
    var effectiveRate: Double? {
        var lowest = rate
        if let limit = statedCap, lowest.map({ limit < $0 }) ?? true { lowest = limit }
        if let limit = rateCap, lowest.map({ limit < $0 }) ?? true { lowest = limit }
        return lowest
    }

    /// No rate, or one above what the concurrency can carry at the latency seen: the concurrency
    /// limit holds the sends back, not the pacer.
    var concurrencyBound: Bool {
        guard let rate = effectiveRate else { return true }
        return rate * latency >= Double(concurrency) * 0.8
    }

    /// The share of the rate found that the rate settles at: `--headroom` leaves its share unused.
    private var plateau: Double { tuning.plateau * (1 - headroom) }

    private var statedCap: Double? { stated.map { $0 * tuning.limitShare * (1 - headroom) } }

    /// Below the cap (or with no cap): the replies set the pace, not the options.
    var isThrottled: Bool {
        guard let rate, phase != .starting else { return false }
        return rateCap.map { rate < $0 } ?? true
    }

    var summary: PacingSummary {
        PacingSummary(throttleEvents: events, lowestRate: lowestRate, finalRate: isThrottled ? effectiveRate : nil)
    }

    // MARK: Replies

    /// A reply: what it says, how long it took, its rate-limit fields.
    mutating func replied(_ signal: PacingSignal, duration: Double, rateLimit: RateLimitInfo?, now: Double) {
        anchorCarried(now: now)
        if signal == .accepted {
            acceptedMeter.record(now: now)
            if firstAcceptedAt == nil { firstAcceptedAt = now }
            latency = latency * 0.9 + duration * 0.1
        }
        climb(now: now)
        if now - duration >= cutAt {
            fresh.replies += 1
            if signal != .accepted { fresh.refused += 1 }
        }
        var refusal = false
        if case .tooManyRequests = signal { refusal = true }
        if refusal {
            recentRefused.append(now)
            recentRefused.removeAll { now - $0 > 1 }
        }
        countBackground(refused: refusal, sentAt: now - duration, now: now)
        noteWindow(signal, arrival: now - duration / 2)
        if signal == .accepted, let resume = resumeRate {
            // The window opened again: back to the rate it was closed on.
            rate = resume
            resumeRate = nil
        }
        if signal == .accepted { opened(now: now, sentAt: now - duration) }
        if let rateLimit { statedLimit(rateLimit, sentAt: now - duration, accepted: signal == .accepted, now: now) }
        switch signal {
        case .accepted: break
        case .tooManyRequests: tooManyRequests(now: now, sentAt: now - duration, stated: false)
        case .unavailable: unavailable(now: now)
        }
    }

    /// `stated`: a window nearly used up by the rate-limit fields, not a refusal seen.
    private mutating func tooManyRequests(now: Double, sentAt: Double, stated: Bool) {
        guard enabled, sentAt >= cutAt else { return }
        guard let current = effectiveRate else { return }
        if phase != .starting, sharing, emptiedTenthsSeen >= tuning.emptiedTenths {
            // Every process sees the same empty window, and cuts by the same share: the 429s land
            // on whoever's sends come just before a token or a slot does, and cutting to what the
            // limiter accepted would cut only those. Not held off for a window: an emptied window
            // that stays empty is still overloaded.
            emptiedCutAt = now
            ceiling = current * tuning.emptiedCut
            cut(now: now, to: ceiling! * tuning.backoff)
            phase = .recovering
            return
        }
        // A 429 to a request sent before the last cut is that overshoot's echo, already answered.
        if now - cutAt < tuning.holdoff {
            withinHoldoff(current: current, now: now)
            return
        }
        if cycle != nil, !stated {
            // A long window: what it accepted over the last second or two says nothing of its
            // limit, so the rate backs off by a step; when the window opens again after closing,
            // `opened` sets the pace from the whole cycle.
            ceiling = current * tuning.backoff
            cut(now: now, to: ceiling! * plateau)
            phase = .recovering
            return
        }
        let accepted = acceptedMeter.ratePerSecond(now: now, over: 1)
        guard stated || (phase == .starting && !noiseKnown) || refusalsStandOut(accepted: accepted) else { return }
        // A climb held at its cap (a stated rate, `--rate`) for a window, with no sign of others in
        // the window, has ended there: a 429 now is the client's own timing jitter, an episode like
        // any other, not the climb's overshoot (whose rewind sent a lone process back to a thirtieth
        // of the rate and cost it a second of sends). Beside others (a window shared, a bucket
        // falling), the rewind stays: it gives their traffic the room back at once.
        // A climb stopped at the room others leave has not overshot either: a window running low
        // then is their busier second, an episode.
        let climbEnded =
            roomCappedSince != nil
            || (!sharing && window.fall == 0 && (cappedSince.map { now - $0 >= tuning.holdoff } ?? false))
        if phase == .starting, !climbEnded {
            // The climb overshot. The limiter still holds what this process sent over the last
            // window, so it sends again what it sent a window ago and climbs back at the same pace as
            // that ages out, to the plateau under what the window took.
            let rateThen = current / pow(tuning.startGrowth, now - sentAt)
            // Less than a second in, what the limiter took lies in its first window: the rate is that
            // count over the window, not over the part-second it took (which made eight processes
            // starting together find 23/s each on a 100/s log). A stated limit's own corrections
            // below were made for the part-second measure.
            let firstWindow = self.stated == nil && now - (firstAcceptedAt ?? now) < 1
            ceiling = min(firstWindow ? Double(acceptedMeter.count(now: now, over: 1)) : accepted, current)
            if stated {
                ceiling = max(1, ceiling! - excessShare(of: accepted))
            }
            if sharing, let statedCap {
                // Others' requests fill the window too: what this process took of it is its share.
                // Climbing back to what it was accepted over the climb's part-second would fill the
                // window again and close it for everyone.
                ceiling = min(ceiling!, statedCap * ownShareOfWindow(now: now))
            }
            // The replay is the climb's own, not a slowdown: the rate it settles at is what the
            // summary calls the lowest.
            cut(now: now, to: rateThen / tuning.startGrowth, settlesAt: ceiling! * plateau)
            phase = .replaying(to: ceiling! * plateau)
            // Refused before anything was accepted, the start met a window others had filled and
            // found only what they left: its scale is the start rate's.
            startCeiling = firstAcceptedAt == nil ? max(ceiling!, tuning.startRate) : ceiling!
            startEchoUntil = now + window.length
            return
        }
        // What the limiter accepted from this process over the last window(s), while refusing some
        // of it, is this process's share of the limit now; never more than halve at once. A window
        // nearly used up refused nothing yet: the last second is the rate (the longer measure would
        // reach back to before a cut, or into a second the window was closed). Where a fixed
        // window's edge is dated, the count since it is exact and is the measure: the longer one
        // reaching into a closed second cut the real binary's start to 85/s on a 100/s window.
        var measured = accepted
        if stated {
            // A window still falling from one window to the next is spent faster than it refills:
            // by that much less.
            measured -= excessShare(of: accepted)
        } else {
            let sinceEdge = givenSinceOpening(refusedAt: (sentAt + now) / 2)
            measured =
                sinceEdge.isFinite
                ? sinceEdge : min(accepted, acceptedMeter.ratePerSecond(now: now, over: tuning.measureOver))
        }
        ceiling = min(current, max(measured, current * 0.5))
        cut(now: now, to: ceiling! * tuning.backoff)
        phase = .recovering
    }

    /// Keeps what a cut measures a fixed window by: accepted arrivals, and a closed window's opening.
    /// Not under a stated limit, whose window may be an hour long: two of them of admissions would
    /// be millions of instants, and its remaining count says more than an opening seen.
    private mutating func noteWindow(_ signal: PacingSignal, arrival: Double) {
        guard enabled, stated == nil else { return }
        if signal == .accepted {
            admissions.insert(arrival)
            admissions.drop(through: arrival - 2 * window.length)
        }
        if case .tooManyRequests = signal { lastRefusedArrival = arrival }
        if signal == .accepted, resumeRate != nil {
            openedAt = lastRefusedArrival.map { ($0 + arrival) / 2 } ?? arrival
        }
    }

    /// What the window gave this process from its opening to a refusal at `refusedAt`, per second:
    /// a fixed window opens at the same moment of every window, so for `openingWindows` after an
    /// opening seen its windows' edges are known, and the count since the edge is exactly the
    /// share it gives (a second's count holds the end of the window before as well, and read 131/s
    /// on a 100/s window). Infinite when no opening dates the window.
    private func givenSinceOpening(refusedAt: Double) -> Double {
        guard let openedAt else { return .infinity }
        let length = window.length
        let since = refusedAt - openedAt
        let edge = openedAt + (since / length).rounded(.down) * length
        guard since >= 0, since < tuning.openingWindows * length else { return .infinity }
        let given = Double(admissions.count(after: edge, through: refusedAt)) / length
        return given >= 1 ? given : .infinity
    }

    /// Within a window of a cut, what the window still holds refuses a little of what was sent since.
    /// A window refusing nearly everything is closed until it moves on: a trickle finds when it opens,
    /// instead of a full rate of 429s. One refusing a large share was cut too little (a token
    /// bucket's burst hid the limit): what it takes is the rate.
    private mutating func withinHoldoff(current: Double, now: Double) {
        // Shared stated limits: what is refused within the holdoff lands on some processes and
        // not others; the common remaining (`emptiedTenths`) answers an overload instead.
        guard fresh.replies >= 4, resumeRate == nil, !(sharing && window.room != nil) else { return }
        let share = Double(fresh.refused) / Double(fresh.replies)
        if share >= tuning.closedShare {
            resumeRate = rate
            if closedAt == nil { closedAt = now }
            // During the start's replay the rate is a fraction of the limit: a trickle on it found
            // the opening up to half a second late. On the ceiling (5/s of 100/s), within 0.2 s.
            var trickleOn = current
            if case .replaying = phase, let ceiling { trickleOn = max(current, ceiling) }
            rate = max(0.5, trickleOn * tuning.trickle)
        } else if share >= tuning.recutShare, fresh.refused >= tuning.recutCount, cycle == nil {
            // (A long window's share refused since a cut measures its closing, not the cut.)
            ceiling = current * (1 - share)
            cut(now: now, to: ceiling! * plateau)
            phase = .recovering
        }
    }

    /// A 503: only a burst of them counts — a few within a second, and a large share of that
    /// second's replies. A steady trickle among many successes is an unreliable service, which
    /// retries and the retry budget handle, not an overloaded one.
    private mutating func unavailable(now: Double) {
        recentUnavailable.append(now)
        recentUnavailable.removeAll { now - $0 > 1 }
        let accepted = acceptedMeter.ratePerSecond(now: now, over: 1)
        let count = Double(recentUnavailable.count)
        guard enabled, recentUnavailable.count >= Self.unavailableBurst,
            count >= Self.unavailableShare * (count + accepted), now - cutAt >= tuning.holdoff
        else { return }
        recentUnavailable.removeAll()
        let current = effectiveRate ?? max(accepted, 1)
        ceiling = min(current, max(accepted, current * 0.5))
        cut(now: now, to: ceiling! * Self.unavailableBackoff)
        phase = .recovering
        // Overload is about work in progress too: keep what that rate needs at the latency seen.
        let needed = Int((rate! * max(latency, 0.001) * 2).rounded(.up)) + 1
        concurrency = max(1, min(concurrency, needed))
    }

    /// Rate-limit fields. The stated rate caps the pace. A window nearly used up is an episode
    /// like a 429, one that comes before anything is refused: what remains counts everyone's
    /// requests, the live app's and the other processes' included.
    private mutating func statedLimit(_ info: RateLimitInfo, sentAt: Double, accepted: Bool, now: Double) {
        guard enabled else { return }
        if let reset = info.resetSeconds { longestReset = max(longestReset, reset.rounded(.down)) }
        guard let quota = info.quota, quota > 0 else { return }
        let length = info.windowSeconds ?? max(1, longestReset)
        stated = max(Double(quota) / length, 0.01)
        if cycle != nil, !longWindowSeen {
            // The fields say the window: a pace carried from a run that had none would only hold
            // this one below the stated rate. The climb goes on to the stated cap.
            cycle = nil
            ceiling = nil
            startCeiling = nil
            longMeasure = nil
            phase = .starting
            othersSteadySeen = false
            roomCappedSince = nil
        }
        guard let remaining = info.remaining else { return }
        window.observe(
            quota: quota, window: length, remaining: remaining, admittedAt: (sentAt + now) / 2, accepted: accepted,
            now: now, countsChangesFrom: phase == .starting ? nil : startEchoUntil, tuning: tuning)
        sharing = ownShareOfWindow(now: now) < tuning.ownShare
        guard Double(remaining) <= Double(quota) * max(headroom, tuning.lowRemaining, othersKept) else { return }
        let everyone = Double(max(0, quota - remaining)) / length
        if acceptedMeter.ratePerSecond(now: now, over: 1) < everyone * tuning.ownShare || window.fall > tuning.fallShare
        {
            tooManyRequests(now: now, sentAt: sentAt, stated: true)
        }
    }

    /// The share of the window to keep for others' use to fluctuate in (`--headroom` already
    /// leaves its share unused for them).
    private var othersKept: Double { window.othersKept(headroom: headroom, tuning: tuning) }

    /// This process's part of how much faster than it refills the window is spent: everyone
    /// spends the stated rate and the fall, and each process that sees the fall sheds its share.
    private func excessShare(of own: Double) -> Double {
        guard let stated else { return 0 }
        let fall = window.fall * Double(window.quota) / window.length
        return fall * min(1, own / (stated + fall))
    }

    /// Tenths of the last window in which every reply found the window empty, counted from the
    /// last emptied cut and from a window after the start's.
    private var emptiedTenthsSeen: Int { window.emptiedTenths(from: max(emptiedCutAt, startEchoUntil)) }

    /// This process's accepted requests over the last window (or since its first, if later)
    /// against everyone's at the window's fullest.
    private mutating func ownShareOfWindow(now: Double) -> Double {
        guard let room = window.room, let firstAcceptedAt else { return 1 }
        let used = (1 - room) * Double(window.quota)
        let own = acceptedMeter.ratePerSecond(now: now, over: 1) * min(window.length, now - firstAcceptedAt)
        return used > 0 ? min(1, own / used) : 1
    }

    /// A limit refuses what goes over it, and nothing under it; a service that throttles a few
    /// requests at random refuses the same share at any pace. Cutting for each of those 429s would
    /// ratchet the rate down to a crawl, so a 429 counts only when the last second's refusals are
    /// more than the background explains (with no background, a single 429 does).
    private func refusalsStandOut(accepted: Double) -> Bool {
        let refused = Double(recentRefused.count)
        let replies = refused + accepted
        // Only a background of many refusals is evidence of noise: a limiter's own window edges
        // refuse a few under the ceiling, and reacting later to those would let probes overshoot.
        let share =
            noiseKnown
            ? min(tuning.noiseShare, background.refused / background.replies) : 0
        let expected = share * replies
        return refused >= expected + tuning.noiseDeviations * expected.squareRoot() + 1
    }

    private var noiseKnown: Bool { background.refused >= tuning.noiseEvidence }

    private mutating func countBackground(refused: Bool, sentAt: Double, now: Double) {
        guard enabled, phase != .starting, sentAt >= cutAt + tuning.holdoff, let ceiling,
            (effectiveRate ?? .infinity) <= ceiling
        else { return }
        let known = noiseKnown
        background.replies += 1
        if refused { background.refused += 1 }
        if !known && noiseKnown {
            // The cuts so far answered noise, and the ceiling they found means nothing: climb again
            // as at the start, whose end now waits for refusals that stand out.
            phase = .starting
            climbedAt = now
            othersSteadySeen = false
            roomCappedSince = nil
        }
        if background.replies >= 20_000 { background = (background.replies / 2, background.refused / 2) }
    }

    /// An accepted reply. A window closed for `longClosed` or more is a long one that this process
    /// spent early (a one-second window opens within a second). At each opening after a closure
    /// the rate becomes what the window gave this process over its last cycle, spread evenly over
    /// it: the rate that makes the window last; the probe then grows on the cycle's scale.
    private mutating func opened(now: Double, sentAt: Double) {
        guard enabled, stated == nil else { return }
        if let cycle {
            longAccepted.insert(now)
            longAccepted.drop(through: now - 2 * cycle)
            longKeptFrom = max(longKeptFrom, now - 2 * cycle)
        }
        opening = opening.map { ($0.at, $0.accepted + 1) } ?? (now, 1)
        // A request sent before the window was found closed, accepted as it filled, does not open
        // it: one such straggler among the first refusals made the opening-to-opening count
        // start from it, and a window that had given 50/s was measured at 1/s.
        guard let closed = closedAt, sentAt >= closed, let since = opening else { return }
        closedAt = nil
        let long = now - closed >= tuning.longClosed
        let length = now - since.at
        if long, length > 0, cycle == nil || (openingIsLong && length >= cycle! / 2) {
            // Opening to opening: all the window gave since the last long opening (the first time,
            // since the first acceptance), over that time; measured again at each long opening a
            // half cycle or more on (a job that started late in its first window measured a short
            // cycle). A cycle carried from an earlier run is not measured from this run's start.
            longAccepted.binWidth = length / 1000
            if cycle == nil {
                longKeptFrom = now
                longAccepted.insert(now)
            }
            cycle = length
            ceiling = Double(since.accepted - 1) / length
        } else if let known = cycle {
            // What the window gave over its last cycle (as much of it as is kept), spread over
            // that time: a sliding log opens a little at a time as its oldest admissions leave.
            // Not for a short closure less than half a cycle into what is kept: right after the
            // opening that found the window, a sliding log reopens a few slots at a time as the
            // climb's admissions leave it, and a count over that moment measured 8/s where the
            // window gave 50/s (the real binary crawled at a quarter of the room). Its refusals
            // back the rate off by steps instead.
            let span = min(known, now - longKeptFrom)
            guard span > 0, long || span >= known / 2 else { return }
            ceiling = Double(longAccepted.count(after: now - span, through: now) - 1) / span
        } else {
            opening = (now, 1)
            return
        }
        if long {
            opening = (now, 1)
            openingIsLong = true
            longWindowSeen = true
        }
        longMeasure = ceiling
        // The start's one-second climb says nothing of this scale.
        startCeiling = ceiling
        cut(now: now, to: ceiling! * plateau)
        phase = .probing(since: now)
    }

    /// `settlesAt`: where the rate goes back to at once, when the cut is a step on the way there.
    private mutating func cut(now: Double, to newRate: Double, settlesAt: Double? = nil) {
        cutAt = now
        fresh = (0, 0)
        resumeRate = nil
        rate = max(0.5, newRate)
        events += 1
        lowestRate = min(lowestRate ?? .infinity, settlesAt ?? rate!)
    }

    // MARK: Quiet time

    /// The start's climb, continuous: at every reply and tick while the rate is in use.
    private mutating func climb(now: Double) {
        defer { climbedAt = now }
        guard enabled, phase == .starting, inUse, let current = rate, let climbedAt else { return }
        let cap = min(statedCap ?? .infinity, rateCap ?? .infinity)
        rate = min(current * pow(tuning.startGrowth, now - climbedAt), cap)
        cappedSince = rate! >= cap ? (cappedSince ?? now) : nil
        // Others already in a stated window when this process started (the live app) leave it only
        // the room they do not use: the climb stops there, short by `othersDeviations` of their
        // count's spread (as if they arrived at random: nothing is known yet of how they vary),
        // instead of filling the window and refusing their requests until it shows. Held there for
        // a window, the start is over and the room is probed as after any cut.
        if !othersSteadySeen, window.steadyOthersRate(tuning: tuning) != nil { othersSteadySeen = true }
        guard othersSteadySeen, let stated, let statedCap, let others = window.othersRate, others > 0 else {
            roomCappedSince = nil
            return
        }
        // `--headroom` already leaves its share of the stated rate unused for them.
        let spread = tuning.othersDeviations * (others / window.length).squareRoot()
        let room = statedCap - others - max(0, spread - headroom * stated)
        guard rate! >= room else {
            roomCappedSince = nil
            return
        }
        rate = max(room, 0.5)
        let since = roomCappedSince ?? now
        roomCappedSince = since
        if now - since >= window.length {
            ceiling = rate! / plateau
            startCeiling = ceiling
            startEchoUntil = now + window.length
            phase = .probing(since: now)
            roomCappedSince = nil
        }
    }

    /// Called several times a second: the rate climbs while nothing refuses. `paceLimited`: rows
    /// were ready and the rate held them back since the last tick; otherwise the rate is not in
    /// use, proves nothing, and does not grow.
    mutating func tick(now: Double, paceLimited: Bool) {
        anchorCarried(now: now)
        let elapsed = lastTick.map { now - $0 } ?? 0
        lastTick = now
        inUse = paceLimited
        guard enabled, let current = rate else { return }
        if phase == .starting {
            climb(now: now)
            return
        }
        guard paceLimited, now >= cutAt, resumeRate == nil else {
            if case .probing(let since) = phase { phase = .probing(since: since + elapsed) }
            return
        }
        var next = current
        switch phase {
        case .starting:
            break
        case .replaying(let target):
            next = min(target, current * pow(tuning.startGrowth, elapsed))
            if next >= target { phase = .probing(since: now) }
        case .recovering:
            let target = (ceiling ?? current) * plateau
            next = target - (target - current) * exp(-elapsed / tuning.recoveryTime)
            if next >= target * 0.995 { phase = .probing(since: now) }
        case .probing(let since):
            let target = (ceiling ?? current) * plateau
            let probing = (now - since) / (cycle ?? 1)
            let scale = max(target, (startCeiling ?? 0) * plateau * tuning.probeScale)
            next = max(current, target + scale * tuning.probe * probing * probing * probing)
        }
        if let seen = window.room, let stated {
            // What the window leaves unused is everyone's to take, in equal steps.
            let unseen = seen - tuning.unseenFall * window.typicalFall / Double(window.quota)
            let kept = othersKept
            // A window filling from one window to the next (a bucket draining) has less room than
            // its fullest moment shows: as much less as it fell over the last window, `fallWindows`
            // times.
            let room = unseen - tuning.fallWindows * window.fall
            if room > kept {
                next = max(next, current + tuning.roomGrowth * stated * (room - kept) * elapsed)
            }
        }
        if concurrency < concurrencyCap, now - cutAt >= 2 {
            concurrency = min(concurrencyCap, concurrency + max(1, concurrency / 10))
        }
        rate = min(next, statedCap ?? .infinity, rateCap ?? .infinity)
    }
}
