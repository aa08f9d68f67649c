import BotsiAPI
import BotsiBasics
import Foundation

@testable import BotsiRestore
@testable import BotsiSimulator

/// N processes, each the real `SendScheduler` driven as `Runner` drives it, against one of the
/// simulator's limiters, on a virtual clock: what sharing one limit does, in a fraction of a second
/// of real time and the same on every machine for one seed.
///
/// A request leaves when the scheduler launches it, reaches the limiter half its latency later and
/// is answered at the full latency (latency + uniform jitter). A refused row is retried as the
/// runner retries it: `BackoffPolicy` with the reply's Retry-After, up to `maxAttempts`. Each
/// process ticks every 0.25 s from its own start and wakes when `nextWake` says, a little late, as
/// a real timer does. The live client sends at random (Poisson) times and never retries.
struct PacingScenario: CustomStringConvertible {
    var kind = RateLimiterKind.sliding
    /// Requests per second; changes at the given times.
    var limit = 100
    /// The limiter's window in seconds: it admits `limit` × `window` per window (Apple's limit is
    /// per second but enforced over an hour).
    var window = 1
    var limitChanges: [(at: Double, limit: Int)] = []
    var processes = 1
    var rowsPerProcess = 3000
    /// When each process starts; missing ones start at 0 plus a few random milliseconds.
    var starts: [Double] = []
    var latency = 0.02
    var jitter = 0.005
    var liveRate = 0.0
    /// The live client's requests at random (Poisson) times instead of evenly spaced (each a few
    /// per cent early or late).
    var livePoisson = false
    /// Replies carry the limiter's rate-limit fields (quota, window, remaining, reset).
    var statesLimit = false
    var retryAfter: Double? = 1
    /// This share of requests answered 429 at random, whatever the pace (a service that throttles a
    /// few requests of its own accord); the limiter never sees them.
    var randomRefusals = 0.0
    var pacing = PacingConfiguration.model(concurrency: 32)
    var maxAttempts = 20
    var seed: UInt64 = 1
    /// A run that has not finished by then is cut off there (a controller that starves a process).
    var giveUpAt = 600.0

    var description: String {
        var text = "\(processes)×\(rowsPerProcess) rows, \(kind) limiter \(limit)/s"
        if !limitChanges.isEmpty {
            text += " then " + limitChanges.map { "\($0.limit)/s at \($0.at)s" }.joined(separator: ", ")
        }
        text += ", latency \(Int(latency * 1000))+\(Int(jitter * 1000)) ms"
        if window != 1 { text += ", window \(window) s" }
        if liveRate > 0 { text += ", live \(liveRate)/s" + (livePoisson ? " (Poisson)" : "") }
        if statesLimit { text += ", limit stated" }
        if randomRefusals > 0 { text += ", \(randomRefusals * 100)% refused at random" }
        if !starts.isEmpty { text += ", starts \(starts)" }
        return text + ", seed \(seed)"
    }

    /// The limit in force at `time`.
    func limit(at time: Double) -> Int {
        limitChanges.last { $0.at <= time }?.limit ?? limit
    }

    /// The limit integrated over [from, to): requests the limiter could admit then.
    func capacity(from: Double, to: Double) -> Double {
        var total = 0.0
        var cursor = from
        let edges = limitChanges.map(\.at).filter { $0 > from && $0 < to } + [to]
        for edge in edges {
            total += Double(limit(at: cursor)) * (edge - cursor)
            cursor = edge
        }
        return total
    }
}

/// What one process did.
struct ModelProcessRecord {
    var startedAt = 0.0
    var endedAt: Double?
    var requests = 0
    var refused = 0
    /// Reply times of the accepted requests, and of the refused ones.
    var accepted: [Double] = []
    var refusedAt: [Double] = []
    var rowsLeftUnanswered = 0
    var summary: PacingSummary?
    /// The long window its pacing knew at the end: what a next run would carry.
    var longWindow: LongWindowPace?
    /// At every tick, after it: the send-rate limit in force (0 for none) and the concurrency.
    var timeline: [(time: Double, rate: Double, concurrency: Int)] = []
}

struct PacingOutcome {
    let scenario: PacingScenario
    let processes: [ModelProcessRecord]
    let liveRequests: Int
    let liveRefused: Int
    let liveRefusedAt: [Double]
    /// The end of the last process (or where the run was cut off).
    let end: Double

    var firstStart: Double { processes.map(\.startedAt).min() ?? 0 }
    var allEnded: Bool { processes.allSatisfy { $0.endedAt != nil } }
    var requests: Int { processes.map(\.requests).reduce(0, +) }
    var refused: Int { processes.map(\.refused).reduce(0, +) }
    var refusedShare: Double { requests == 0 ? 0 : Double(refused) / Double(requests) }
    var liveRefusedShare: Double { liveRequests == 0 ? 0 : Double(liveRefused) / Double(liveRequests) }

    /// Rows answered ÷ the time from the first start to the last end ÷ the limit (or, with `from`,
    /// the rows answered from then on ÷ what the limit allowed from then on). With live traffic, of
    /// the room the live client leaves.
    func utilization(from: Double? = nil) -> Double {
        let start = from ?? firstStart
        let answered = processes.map { $0.accepted.filter { $0 >= start }.count }.reduce(0, +)
        let room = scenario.capacity(from: start, to: end) * (1 - scenario.liveRate / Double(scenario.limit))
        return room > 0 ? Double(answered) / room : 0
    }

    /// The refused share of the requests sent from `from` on.
    func refusedShare(from: Double) -> Double {
        let refused = processes.map { $0.refusedAt.filter { $0 >= from }.count }.reduce(0, +)
        let accepted = processes.map { $0.accepted.filter { $0 >= from }.count }.reduce(0, +)
        return refused + accepted == 0 ? 0 : Double(refused) / Double(refused + accepted)
    }

    func liveRefusedShare(from: Double) -> Double {
        let seconds = max(end - from, 1e-9)
        return Double(liveRefusedAt.filter { $0 >= from }.count) / (scenario.liveRate * seconds)
    }

    /// Each process's accepted rate over consecutive 5 s windows while all of them run, from
    /// `from` on, as a share of their mean; the extremes.
    func fairness(from: Double, window: Double = 5) -> (lowest: Double, highest: Double, windows: Int) {
        let lastStart = processes.map(\.startedAt).max() ?? 0
        let firstEnd = processes.map { $0.endedAt ?? end }.min() ?? end
        var lowest = 1.0
        var highest = 1.0
        var windows = 0
        var cursor = max(from, lastStart)
        while cursor + window <= firstEnd {
            let counts = processes.map { record in
                Double(record.accepted.filter { $0 >= cursor && $0 < cursor + window }.count)
            }
            let mean = counts.reduce(0, +) / Double(counts.count)
            if mean > 0 {
                lowest = min(lowest, counts.min()! / mean)
                highest = max(highest, counts.max()! / mean)
            }
            windows += 1
            cursor += window
        }
        return (lowest, highest, windows)
    }

    /// With equal inputs: the first process's running time over the last one's.
    var finishSpread: Double {
        let durations = processes.map { ($0.endedAt ?? end) - $0.startedAt }
        return (durations.min() ?? 0) / max(durations.max() ?? 1, 1e-9)
    }

    /// Each quarter second for the first 8 s, then each second: each process's accepted and
    /// refused replies and the rate limit in force at the end of the step.
    var trace: String {
        let steps = (0..<32).map { Double($0) / 4 } + (8..<Int(end.rounded(.up))).map(Double.init)
        var lines: [String] = []
        for (index, from) in steps.enumerated() {
            let to = index + 1 < steps.count ? steps[index + 1] : from + 1
            var line = String(format: "%5.2f", from)
            for record in processes {
                let count = record.accepted.filter { $0 >= from && $0 < to }.count
                let refused = record.refusedAt.filter { $0 >= from && $0 < to }.count
                let rate = record.timeline.last { $0.time < to }?.rate ?? 0
                line += String(format: " | %3d %2d %6.1f", count, refused, rate)
            }
            if liveRequests > 0 {
                line += String(format: " | live refused %d", liveRefusedAt.filter { $0 >= from && $0 < to }.count)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    var oldTrace: String {
        let seconds = Int(end.rounded(.up))
        var lines: [String] = []
        for second in 0..<seconds {
            var line = String(format: "%4d", second)
            for record in processes {
                let count = record.accepted.filter { $0 >= Double(second) && $0 < Double(second + 1) }.count
                let refused = record.refusedAt.filter { $0 >= Double(second) && $0 < Double(second + 1) }.count
                let rate = record.timeline.last { $0.time < Double(second + 1) }?.rate ?? 0
                line += String(format: " | %3d %2d %6.1f", count, refused, rate)
            }
            if liveRequests > 0 {
                line += String(
                    format: " | live refused %d",
                    liveRefusedAt.filter { $0 >= Double(second) && $0 < Double(second + 1) }.count)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    var report: String {
        let perProcess = processes.enumerated().map { index, record in
            let duration = (record.endedAt ?? end) - record.startedAt
            return String(
                format: "  #%d %.1f–%.1fs %d accepted, %d/%d refused%@", index, record.startedAt,
                record.endedAt ?? end, record.accepted.count, record.refused, record.requests,
                duration > 0 ? "" : "")
        }
        var text = String(
            format: "%@: utilization %.3f, 429s %.2f%%", scenario.description, utilization(), refusedShare * 100)
        if liveRequests > 0 { text += String(format: ", live 429s %.2f%% of %d", liveRefusedShare * 100, liveRequests) }
        return ([text] + perProcess).joined(separator: "\n")
    }
}

/// The event loop.
struct PacingModel {
    private enum Event {
        case start(Int)
        case tick(Int)
        case wake(Int, generation: Int)
        case arrive(Int, sequence: Int64, sentAt: Double, answerAt: Double)
        case reply(Int, sequence: Int64, admitted: Bool, info: RateLimitInfo?, duration: Double)
        case live
        case limitChange(Int)
    }

    private struct Process {
        var scheduler: SendScheduler<Int>
        var record = ModelProcessRecord()
        var rowsAdded = 0
        var attempts: [Int64: Int] = [:]
        var wakeGeneration = 0
        var armedWake: Double?
        var started = false
    }

    private let scenario: PacingScenario
    private var queue = BotsiRestore.DeadlineHeap()
    private var events: [Int64: Event] = [:]
    private var pushes: Int64 = 0
    private var processes: [Process]
    private var limiter: RateLimiter
    private var random: SplitMix64
    private var backoff = BackoffPolicy()
    private var liveRequests = 0
    private var liveRefused = 0
    private var liveRefusedAt: [Double] = []
    private var now = 0.0
    /// How far into its window the limiter is when the scenario starts: a real job starts at any
    /// moment of a fixed window, not at its beginning (which gave the start a whole window's quota to
    /// climb into and made a fixed window look kinder than it is). A sliding log and a bucket do not
    /// care.
    private var limiterPhase = 0.0

    init(_ scenario: PacingScenario) {
        self.scenario = scenario
        random = SplitMix64(seed: scenario.seed)
        var phaseRandom = SplitMix64(seed: scenario.seed ^ 0x5851_F42D_4C95_7F2D)
        limiterPhase = phaseRandom.nextUnit() * Double(scenario.window)
        limiter = RateLimiter(
            kind: scenario.kind, quota: scenario.limit * scenario.window, windowSeconds: scenario.window)
        processes = (0..<scenario.processes).map { _ in Process(scheduler: SendScheduler(pacing: scenario.pacing)) }
    }

    static func run(_ scenario: PacingScenario) -> PacingOutcome {
        var model = PacingModel(scenario)
        return model.run()
    }

    private mutating func run() -> PacingOutcome {
        for index in processes.indices {
            let start = index < scenario.starts.count ? scenario.starts[index] : random.nextUnit() * 0.005
            push(.start(index), at: start)
        }
        if scenario.liveRate > 0 { push(.live, at: nextLiveInterval()) }
        for (index, change) in scenario.limitChanges.enumerated() { push(.limitChange(index), at: change.at) }
        while let next = pop() {
            now = next.time
            if now > scenario.giveUpAt || processes.allSatisfy({ $0.record.endedAt != nil }) { break }
            handle(next.event)
        }
        let end = min(now, scenario.giveUpAt)
        return PacingOutcome(
            scenario: scenario,
            processes: processes.map { process in
                var record = process.record
                record.rowsLeftUnanswered = scenario.rowsPerProcess - record.accepted.count
                record.summary = process.scheduler.pacingSummary
                record.longWindow = process.scheduler.longWindow
                return record
            },
            liveRequests: liveRequests, liveRefused: liveRefused, liveRefusedAt: liveRefusedAt,
            end: processes.compactMap(\.record.endedAt).count == processes.count
                ? processes.compactMap(\.record.endedAt).max()! : end)
    }

    private mutating func handle(_ event: Event) {
        switch event {
        case .start(let index):
            processes[index].started = true
            processes[index].record.startedAt = now
            push(.tick(index), at: now + 0.25)
            pump(index)
        case .tick(let index):
            guard processes[index].record.endedAt == nil else { return }
            push(.tick(index), at: now + 0.25)
            if processes[index].scheduler.tick(now: now) { pump(index) }
            let counts = processes[index].scheduler.counts
            processes[index].record.timeline.append((now, counts.rateLimit ?? 0, counts.concurrencyLimit))
        case .wake(let index, let generation):
            guard generation == processes[index].wakeGeneration else { return }
            processes[index].armedWake = nil
            pump(index)
        case .arrive(let index, let sequence, let sentAt, let answerAt):
            if scenario.randomRefusals > 0, random.nextUnit() < scenario.randomRefusals {
                push(
                    .reply(index, sequence: sequence, admitted: false, info: nil, duration: answerAt - sentAt),
                    at: answerAt)
                return
            }
            let outcome = limiter.admit(now: nanoseconds(now))
            let info =
                scenario.statesLimit
                ? RateLimitInfo(
                    quota: limiter.quota, windowSeconds: Double(scenario.window), remaining: outcome.remaining,
                    resetSeconds: (Double(outcome.resetNanoseconds) / 1e9).rounded(.up))
                : nil
            push(
                .reply(index, sequence: sequence, admitted: outcome.admitted, info: info, duration: answerAt - sentAt),
                at: answerAt)
        case .reply(let index, let sequence, let admitted, let info, let duration):
            reply(index, sequence: sequence, admitted: admitted, info: info, duration: duration)
        case .live:
            liveRequests += 1
            if !limiter.admit(now: nanoseconds(now)).admitted {
                liveRefused += 1
                liveRefusedAt.append(now)
            }
            push(.live, at: now + nextLiveInterval())
        case .limitChange(let index):
            limiter.setQuota(scenario.limitChanges[index].limit * scenario.window, now: nanoseconds(now))
        }
    }

    /// What `Runner.handle` and `record` do with one reply.
    private mutating func reply(_ index: Int, sequence: Int64, admitted: Bool, info: RateLimitInfo?, duration: Double) {
        let reply: RestoreReply =
            admitted
            ? .nothingToRestore(message: nil)
            : .retryable(code: "http_429", httpStatus: 429, retryAfter: scenario.retryAfter, message: nil)
        _ = processes[index].scheduler.replied(reply, duration: duration, rateLimit: info, now: now)
        launch(index)
        processes[index].record.requests += 1
        let attempts = processes[index].attempts[sequence, default: 0] + 1
        processes[index].attempts[sequence] = attempts
        if admitted {
            processes[index].record.accepted.append(now)
            processes[index].scheduler.settle(sequence)
        } else {
            processes[index].record.refused += 1
            processes[index].record.refusedAt.append(now)
            if attempts >= scenario.maxAttempts {
                processes[index].scheduler.settle(sequence)
            } else {
                let delay = backoff.delay(failedAttempts: attempts, retryAfter: scenario.retryAfter, random: &random)
                processes[index].scheduler.retry(sequence, at: now + delay)
            }
        }
        pump(index)
    }

    /// What `Runner.pump` does: read what fits, release due retries, mark, commit, send, arm the timer.
    private mutating func pump(_ index: Int) {
        guard processes[index].record.endedAt == nil else { return }
        while processes[index].rowsAdded < scenario.rowsPerProcess, processes[index].scheduler.roomLeft > 0 {
            let row = processes[index].rowsAdded
            processes[index].scheduler.add(profileId: "p\(index)-\(row)", transactionId: "t\(row)", payload: row)
            processes[index].rowsAdded += 1
        }
        processes[index].scheduler.releaseDueRetries(now: now)
        while processes[index].scheduler.nextSend(now: now) != nil {}
        processes[index].scheduler.marksCommitted()
        launch(index)
        if let wake = processes[index].scheduler.nextWake(now: now), wake != processes[index].armedWake {
            processes[index].armedWake = wake
            processes[index].wakeGeneration += 1
            // A timer fires a little after its deadline.
            push(
                .wake(index, generation: processes[index].wakeGeneration),
                at: max(wake, now) + random.nextUnit() * 0.0005)
        }
        let process = processes[index]
        if process.rowsAdded == scenario.rowsPerProcess, process.scheduler.isEmpty, process.scheduler.inFlight == 0 {
            processes[index].record.endedAt = now
        }
    }

    private mutating func launch(_ index: Int) {
        while let entry = processes[index].scheduler.nextLaunch() {
            let total = scenario.latency + random.nextUnit() * scenario.jitter
            push(.arrive(index, sequence: entry.sequence, sentAt: now, answerAt: now + total), at: now + total / 2)
        }
    }

    private mutating func nextLiveInterval() -> Double {
        let rate = scenario.liveRate
        if scenario.livePoisson { return -log(1 - random.nextUnit()) / rate }
        return (0.95 + random.nextUnit() * 0.1) / rate
    }

    private func nanoseconds(_ time: Double) -> UInt64 {
        UInt64(((time + limiterPhase) * 1e9).rounded())
    }

    // MARK: The events, earliest first (equal times in push order): the runner's own heap of deadlines

    private mutating func push(_ event: Event, at time: Double) {
        events[pushes] = event
        queue.push(pushes, at: time)
        pushes += 1
    }

    private mutating func pop() -> (time: Double, event: Event)? {
        guard let first = queue.popFirst() else { return nil }
        return (first.deadline, events.removeValue(forKey: first.sequence)!)
    }
}

extension PacingConfiguration {
    /// The benchmarks' run: `--concurrency N`, no `--rate`, adaptive.
    static func model(concurrency: Int) -> Self { PacingConfiguration(concurrency: concurrency) }
}

/// The bounds an outcome is checked against: issue 23's targets, or the looser floor every
/// scenario must clear even where the targets are known to be missed (a starved process, a storm
/// of 429s or a live client shut out fail it).
struct PacingBounds: Sendable {
    var alone = (utilization: 0.97, refused: 0.01)
    var shared = (utilization: 0.9, refused: 0.02)
    var live = (refused: 0.005, room: 0.8)
    var stated = 0.95
    var shares = 0.75...1.33
    var finishSpread = 0.75

    static let targets = PacingBounds()
    static let floor = PacingBounds(
        alone: (0.9, 0.025), shared: (0.75, 0.06), live: (0.04, 0.7), stated: 0.85, shares: 0.1...2.5,
        finishSpread: 0.4)
}

extension PacingOutcome {
    /// From when the targets hold: 10 s after the last late start or limit change.
    var settledFrom: Double {
        let changes = scenario.limitChanges.map(\.at)
        let starts = scenario.starts.isEmpty ? [firstStart] : scenario.starts
        let late = (scenario.processes > 1 ? starts + changes : changes).filter { $0 > firstStart }
        return late.isEmpty ? firstStart : late.max()! + 10
    }

    /// What misses `bounds`, or nothing.
    func failures(_ bounds: PacingBounds = .targets) -> [String] {
        var failed: [String] = []
        let from = settledFrom
        let alone = scenario.processes == 1 && scenario.liveRate == 0
        let utilization = self.utilization(from: from == firstStart ? nil : from)
        let refused = refusedShare(from: from)
        if !allEnded { failed.append("not finished by \(scenario.giveUpAt) s") }
        if scenario.liveRate > 0 {
            if liveRefusedShare > bounds.live.refused {
                failed.append(String(format: "live 429s %.2f%%", liveRefusedShare * 100))
            }
            if utilization < bounds.live.room { failed.append(String(format: "batch %.3f of the room", utilization)) }
        } else if scenario.statesLimit && !alone {
            if utilization < bounds.stated { failed.append(String(format: "utilization %.3f", utilization)) }
            if refused > bounds.shared.refused { failed.append(String(format: "429s %.2f%%", refused * 100)) }
        } else {
            let limits = alone ? bounds.alone : bounds.shared
            if utilization < limits.utilization { failed.append(String(format: "utilization %.3f", utilization)) }
            if refused > limits.refused { failed.append(String(format: "429s %.2f%%", refused * 100)) }
        }
        if scenario.processes > 1 {
            let fair = fairness(from: from)
            if !bounds.shares.contains(fair.lowest) || !bounds.shares.contains(fair.highest) {
                failed.append(String(format: "shares %.2f–%.2f of the mean", fair.lowest, fair.highest))
            }
            if scenario.starts.isEmpty, finishSpread < bounds.finishSpread {
                failed.append(String(format: "first ended at %.2f of the last's time", finishSpread))
            }
        }
        return failed
    }

    var failures: [String] { failures(.targets) }
}
