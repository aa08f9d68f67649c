import BotsiBasics
import BotsiSimulator
import Foundation

/// Draws a sequence of steps from a seed. The same seed and the same left-out problems give the
/// same steps; what the binary does with them may still depend on timing (stops at random moments).
struct ModelGenerator {
    /// Problems of issue 8 whose step kinds are left out (`MODEL_SKIP`).
    let skip: Set<Problem>
    private var random: SplitMix64
    private var generation = 0
    private var journalMayExist = false
    /// Where the next "day" of exports starts in the universe: days move on and overlap.
    private var cursor = 0

    init(seed: UInt64, skip: Set<Problem>) {
        self.skip = skip
        random = SplitMix64(seed: seed)
    }

    mutating func steps(_ count: Int) -> [Step] {
        (0..<count).map { _ in next() }
    }

    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    mutating func next() -> Step {
        if generation == 0 && chance(0.12) { generation = 1 }
        let roll = Double.random(in: 0..<1, using: &random)
        let step: Step
        switch roll {
        case ..<0.07: step = .query
        case ..<0.12 where journalMayExist:
            step = .reportOntoJournal(OutputTarget.allCases.randomElement(using: &random)!)
        case ..<0.17: step = .preflight(PreflightFault.allCases.randomElement(using: &random)!, dryRun: chance(0.7))
        case ..<0.24: step = .concurrent(concurrentFirst(), second: Spelling.allCases.randomElement(using: &random)!)
        case ..<0.30 where journalMayExist:
            // The copy's run reads a file and runs to its end: merge refuses a journal a run holds.
            var copy = run()
            copy.stop = .none
            copy.mode.dryRun = false
            if copy.fileName == "-" { copy.fileName = "day-0.csv" }
            step = .mergeCopy(copy)
        default: step = .run(run())
        }
        let allowed = leaveOutSkipped(step)
        if case .run(let run) = allowed, !run.mode.dryRun { journalMayExist = true }
        if case .concurrent = allowed { journalMayExist = true }
        return allowed
    }

    /// Replaces a step kind that belongs to a left-out problem by the nearest kind that does not.
    private func leaveOutSkipped(_ step: Step) -> Step {
        switch step {
        case .reportOntoJournal where skip.contains(.reportOverJournal): return .query
        case .concurrent(let first, let second) where skip.contains(.lockBySpelling) && second != .same:
            return .concurrent(first, second: .same)
        case .preflight(let fault, true) where skip.contains(.dryRunPreflight): return .preflight(fault, dryRun: false)
        case .run(var run):
            if run.input == nil && skip.contains(.strandedPending) { run.input = [.pair(ModelUniverse.pairs[0])] }
            if run.mode.resendsFinals && skip.contains(.regression) && !run.mode.dryRun {
                // A resend that gets no definitive answer is problem 4: resend only into a world that answers.
                run.world = World(generation: run.world.generation, latencyMilliseconds: run.world.latencyMilliseconds)
                run.stop = .none
            }
            return .run(run)
        default: return step
        }
    }

    private mutating func concurrentFirst() -> RunStep {
        var first = RunStep()
        first.world.generation = generation
        first.input = day()
        first.fileName = "-"
        first.concurrency = int(1...4)
        return first
    }

    private mutating func run() -> RunStep {
        var run = RunStep()
        run.world = world()
        run.mode = mode()
        run.stop = run.mode.dryRun ? .none : stop()
        run.concurrency = int(1...6)
        if run.stop.lastsAWhile {
            run.world.latencyMilliseconds = Double(int(5...20))
            run.world.jitterMilliseconds = Double(int(0...5))
            run.concurrency = int(1...3)
        }
        if case .threshold = run.stop {
            run.world.faultRate = 0.7
            run.world.faults = [.internalError, .unavailable]
            run.maxAttempts = 1
        } else {
            run.maxAttempts = [1, 2, 3, 6].randomElement(using: &random)!
        }
        run.jsonLog = chance(0.7)
        if chance(0.07) {
            run.input = nil
            // Runs without input files forget one day's file, chosen from the state the generator
            // keeps rather than by a new draw: the seeds' other steps stay as they were.
            run.forget = ["day-\(cursor % 3).csv"]
        } else {
            run.input = day()
            let jsonLines = chance(0.25)
            let day = int(0...2)
            run.fileName = "day-\(day)" + (jsonLines ? ".jsonl" : ".csv")
            // A quarter of the others forget another day's file while they read their own.
            if cursor % 4 == 0 { run.forget = ["day-\((day + 1) % 3).csv"] }
        }
        return run
    }

    private mutating func world() -> World {
        var world = World(generation: generation)
        let keyRoll = Double.random(in: 0..<1, using: &random)
        world.key = keyRoll < 0.08 ? .unknown : keyRoll < 0.14 ? .forbidden : .accepted
        world.noIOSSettings = world.key == .accepted && chance(0.07)
        if chance(0.3) {
            world.faultRate = Double(int(10...40)) / 100
            world.faults = SimulatorFault.allCases.filter { _ in chance(0.5) }
            if world.faults.isEmpty { world.faults = [.internalError] }
        }
        if chance(0.7) {
            world.latencyMilliseconds = Double(int(2...15))
            world.jitterMilliseconds = Double(int(0...5))
        }
        return world
    }

    private mutating func mode() -> RunMode {
        var mode = RunMode()
        switch Double.random(in: 0..<1, using: &random) {
        case ..<0.12: mode.retryFailed = true
        case ..<0.24: mode.refreshSeconds = 0
        case ..<0.29: mode.refreshSeconds = 3600
        case ..<0.34:
            mode.retryFailed = true
            mode.refreshSeconds = 0
        case ..<0.42: mode.dryRun = true
        default: break
        }
        if chance(0.1) { mode.shard = int(0...1) }
        return mode
    }

    private mutating func stop() -> Stop {
        switch Double.random(in: 0..<1, using: &random) {
        case ..<0.12: return .window(milliseconds: int(20...150))
        case ..<0.24: return .signal(chance(0.5) ? SIGINT : SIGTERM, afterMilliseconds: int(0...120))
        case ..<0.39: return .kill(afterMilliseconds: int(0...250))
        case ..<0.45: return .threshold
        default: return .none
        }
    }

    /// A "day": a window of the universe with a few extra rows, duplicates and refused rows.
    private mutating func day() -> [InputLine] {
        let universe = ModelUniverse.pairs
        let start = max(0, cursor - int(0...6))
        let length = int(4...14)
        cursor = (cursor + int(2...8)) % universe.count
        var lines = (0..<length).map { InputLine.pair(universe[(start + $0) % universe.count]) }
        for _ in 0..<int(0...3) { lines.append(.pair(universe.randomElement(using: &random)!)) }
        for _ in 0..<int(0...2) { lines.append(lines.randomElement(using: &random)!) }
        if chance(0.3), let pair = lines.randomElement(using: &random)?.pair { lines.append(.padded(pair)) }
        for _ in 0..<int(0...2) { lines.append(InputLine.badRows.randomElement(using: &random)!) }
        // A light shuffle: days keep most of their order, as exports do.
        for _ in 0..<int(0...4) {
            let from = int(0...(lines.count - 1))
            let to = int(0...(lines.count - 1))
            lines.swapAt(from, to)
        }
        return lines
    }
}

extension Stop {
    /// Stops that need the run to last long enough to land mid-way.
    var lastsAWhile: Bool {
        switch self {
        case .none, .threshold: return false
        case .window, .signal, .kill: return true
        }
    }
}
