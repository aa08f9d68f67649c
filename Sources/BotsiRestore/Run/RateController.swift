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
/// each reaction, why N copies converge to fair shares, and the reason for every constant.
struct RateController {
    struct Tuning: Equatable {
        /// The start: paced from this rate, growing by `startGrowth` a second until a 429.
        var startRate = 10.0
        var startGrowth = 8.0
        /// A 429 episode cuts to this share of the rate the limiter accepted from this process.
        var backoff = 0.97
        /// After a cut the rate returns toward plateau × ceiling with this time constant (seconds).
        var recoveryTime = 0.25
        /// The share of the rate found (the ceiling) the rate settles at after a cut.
        var plateau = 0.99
        /// Past the plateau the rate probes: plateau × ceiling × (1 + probe × t³), t in seconds.
        var probe = 0.001
        /// One cut per window: 429s within this long of a cut are the same overshoot.
        var holdoff = 1.0
        /// The seconds over which the accepted rate at a cut is measured.
        var measureOver = 2.0
        /// Refused while not probing: the ceiling drops to this share.
        var yield = 0.85
        /// A window that refuses this share of what was sent since the cut is closed: probed at a
        /// trickle of the rate until it accepts again.
        var closedShare = 0.9
        var trickle = 0.05
        /// Refusing this share since the cut: cut again, to what it takes.
        var recutShare = 0.3
        var recutCount = 10
        /// Stated limits: run at this share of quota / window.
        var limitShare = 0.99
        /// Stated limits: a cut when what remains of the window falls to this share of the quota.
        var lowRemaining = 0.02
        /// Stated limits: each second adds this share of the stated rate (the same for every process).
        var statedIncrease = 0.02
        /// Stated limits: the cut when the window is nearly used up.
        var statedBackoff = 0.95
        var statedHoldoff = 0.25
    }

    private enum Phase: Equatable {
        /// Climbing from `startRate` until the first 429.
        case starting
        /// After the start's overshoot: climbing back at the start's pace to this rate.
        case replaying(to: Double)
        /// After a cut: returning toward the plateau.
        case recovering
        /// At the plateau since this instant, probing above it.
        case probing(since: Double)
    }

    static let longestBurstPause = 2.0
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
    /// No send before this: a 429 that refused most of the recent requests said when to come back.
    private(set) var holdUntil: Double?

    private var phase = Phase.starting
    /// Replies to requests sent since the last cut, and how many of them were refused.
    private var fresh = (replies: 0, refused: 0)
    /// While a closed window is probed at a trickle: the rate to go back to when it accepts again.
    private var resumeRate: Double?
    private var startedAt: Double?
    private var climbedAt: Double?
    /// The last tick found the rate in use (rows held back by it).
    private var inUse = true
    /// The rate the limiter accepted from this process at the last cut: its share of the limit then.
    private var ceiling: Double?
    private var cutAt = -Double.infinity
    private var lastTick: Double?
    private var recentUnavailable: [Double] = []
    private var recentReplies: [(time: Double, refused: Bool)] = []
    /// The stated limit per second (quota / window), once a reply stated it.
    private var stated: Double?
    private var statedCutAt = -Double.infinity
    private var longestReset = 0.0
    private var events = 0
    private var lowestRate: Double?

    private var acceptedMeter = SendMeter()
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
    }

    /// The send-rate limit in force: the lowest of the controller's, the stated one and the cap.
    var effectiveRate: Double? {
        [rate, statedCap, rateCap].compactMap { $0 }.min()
    }

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

    /// A reply. Returns true when its rate-limit fields first state a rate: the caller charges
    /// what it sent before at that rate.
    mutating func replied(_ signal: PacingSignal, duration: Double, rateLimit: RateLimitInfo?, now: Double) -> Bool {
        if signal == .accepted {
            acceptedMeter.record(now: now)
            latency = latency * 0.9 + duration * 0.1
        }
        climb(now: now)
        recentReplies.append((now, signal != .accepted))
        if recentReplies.count > 256 { recentReplies.removeAll { now - $0.time > 1 } }
        if now - duration >= cutAt {
            fresh.replies += 1
            if signal != .accepted { fresh.refused += 1 }
        }
        if signal == .accepted, let resume = resumeRate {
            // The window opened again: back to the rate it was closed on.
            rate = resume
            resumeRate = nil
        }
        var first = false
        if let rateLimit { first = statedLimit(rateLimit, now: now) }
        switch signal {
        case .accepted: break
        case .tooManyRequests(let retryAfter): tooManyRequests(now: now, sentAt: now - duration, retryAfter: retryAfter)
        case .unavailable: unavailable(now: now)
        }
        return first
    }

    private func refusedShare(now: Double, over seconds: Double) -> Double {
        let recent = recentReplies.filter { now - $0.time <= seconds }
        return recent.isEmpty ? 0 : Double(recent.filter(\.refused).count) / Double(recent.count)
    }

    private mutating func tooManyRequests(now: Double, sentAt: Double, retryAfter: Double?) {
        // A 429 to a request sent before the last cut is that overshoot's echo, already answered.
        guard enabled, let current = effectiveRate, sentAt >= cutAt else { return }
        if now - cutAt < tuning.holdoff {
            // Within a window of the cut, what the window still holds refuses a little of what was
            // sent since. A window refusing nearly everything is closed until it moves on: a trickle
            // finds when it opens, instead of a full rate of 429s. One refusing a large share was cut
            // too little (a bucket's burst hid the limit): what it takes is the rate.
            guard fresh.replies >= 4, resumeRate == nil else { return }
            let share = Double(fresh.refused) / Double(fresh.replies)
            if share >= tuning.closedShare {
                resumeRate = rate
                rate = max(0.5, current * tuning.trickle)
            } else if share >= tuning.recutShare, fresh.refused >= tuning.recutCount {
                ceiling = current * (1 - share)
                cut(now: now, to: ceiling! * tuning.plateau)
                phase = .recovering
            }
            return
        }
        let accepted = acceptedMeter.ratePerSecond(now: now, over: 1)
        if phase == .starting {
            // The climb overshot. The limiter still holds what this process sent over the last
            // window, so it sends again what it sent a window ago and climbs back at the same pace as
            // that ages out, to the plateau under what the window took: for an even climb that ran a
            // window or more, its rate then × (1 − 1/G) / ln G. The next 429 is a new episode.
            let growth = tuning.startGrowth
            let climbed = min(1, max(0, sentAt - (startedAt ?? sentAt)))
            let rateThen = current / pow(growth, now - sentAt)
            let window = (rateThen - rateThen / pow(growth, climbed)) / log(growth)
            ceiling = min(accepted, max(window, rateThen / growth))
            cut(now: now, to: rateThen / growth)
            phase = .replaying(to: ceiling! * tuning.plateau)
            return
        }
        // What the limiter accepted from this process over the last window(s), while refusing some
        // of it, is this process's share of the limit now.
        let measured = min(accepted, acceptedMeter.ratePerSecond(now: now, over: tuning.measureOver))
        let base = min(current, max(measured, current * 0.5))
        let probing = current > (ceiling ?? 0)
        if !probing, now - cutAt >= 2 * tuning.holdoff, case .probing = phase {
            // Refused while holding a rate that was accepted before: the others (or the limit)
            // changed. Give up a share of it for good, so that shares even out.
            ceiling = base * tuning.yield
            cut(now: now, to: base * tuning.yield * tuning.backoff)
        } else {
            ceiling = base
            cut(now: now, to: base * tuning.backoff)
        }
        phase = .recovering
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
        let base = max(1, min(current, max(accepted, current * 0.5)))
        ceiling = base
        cut(now: now, to: base * Self.unavailableBackoff)
        phase = .recovering
        // Overload is about work in progress too: keep what that rate needs at the latency seen.
        let needed = Int((rate! * max(latency, 0.001) * 2).rounded(.up)) + 1
        concurrency = max(1, min(concurrency, needed))
    }

    /// Rate-limit fields. With what remains of the window the limit is shared by AIMD on the
    /// stated rate (additive increase, a cut when the window is nearly used up).
    private mutating func statedLimit(_ info: RateLimitInfo, now: Double) -> Bool {
        guard enabled else { return false }
        if let reset = info.resetSeconds { longestReset = max(longestReset, reset.rounded(.down)) }
        guard let quota = info.quota, quota > 0 else { return false }
        let window = info.windowSeconds ?? max(1, longestReset)
        let first = stated == nil
        stated = max(Double(quota) / window, 0.01)
        guard let remaining = info.remaining else { return first }
        if first, let cap = statedCap {
            // What the window has left is the room the others leave: start there.
            rate = min(cap, max(Double(remaining) / window, cap * 0.05))
            phase = .recovering
        }
        let floor = Double(quota) * max(headroom, tuning.lowRemaining)
        if Double(remaining) <= floor, now - statedCutAt >= max(tuning.statedHoldoff, latency * 2) {
            statedCutAt = now
            cut(now: now, to: (effectiveRate ?? 1) * tuning.statedBackoff)
        }
        return first
    }

    private mutating func cut(now: Double, to newRate: Double) {
        cutAt = now
        fresh = (0, 0)
        resumeRate = nil
        rate = max(0.5, newRate)
        events += 1
        lowestRate = min(lowestRate ?? .infinity, rate!)
    }

    // MARK: Quiet time

    /// The start's climb, continuous: at every reply and tick, while the rate is in use.
    private mutating func climb(now: Double) {
        guard enabled, phase == .starting, let current = rate, inUse else {
            climbedAt = now
            return
        }
        if startedAt == nil { startedAt = now }
        let elapsed = now - (climbedAt ?? now)
        climbedAt = now
        rate = min(current * pow(tuning.startGrowth, elapsed), rateCap ?? .infinity)
    }

    /// Called several times a second: the rate climbs while nothing refuses. `paceLimited`: rows
    /// were ready and the rate held them back since the last tick; otherwise the rate is not in
    /// use, proves nothing, and does not grow.
    mutating func tick(now: Double, paceLimited: Bool) {
        let elapsed = lastTick.map { now - $0 } ?? 0
        lastTick = now
        guard enabled, let current = rate else { return }
        inUse = paceLimited
        if phase == .starting {
            climb(now: now)
            return
        }
        guard paceLimited, now >= cutAt, resumeRate == nil else {
            if case .probing(let since) = phase { phase = .probing(since: since + elapsed) }
            return
        }
        var next = current
        if let stated, now - statedCutAt < 60 || ceiling == nil {
            next = current + stated * tuning.statedIncrease * elapsed
        } else {
            switch phase {
            case .starting:
                break
            case .replaying(let target):
                next = min(target, current * pow(tuning.startGrowth, elapsed))
                if next >= target { phase = .probing(since: now) }
            case .recovering:
                let target = (ceiling ?? current) * tuning.plateau
                next = target - (target - current) * exp(-elapsed / tuning.recoveryTime)
                if next >= target * 0.995 { phase = .probing(since: now) }
            case .probing(let since):
                let target = (ceiling ?? current) * tuning.plateau
                let probing = now - since
                next = max(current, target * (1 + tuning.probe * probing * probing * probing))
            }
        }
        if concurrency < concurrencyCap, now - cutAt >= 2 {
            concurrency = min(concurrencyCap, concurrency + max(1, concurrency / 10))
        }
        rate = min(next, rateCap ?? .infinity)
    }
}
