import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// How many sequences of how many steps, from the environment:
/// - `SEED=n`: replay exactly the sequence with seed n (one sequence);
/// - `MODEL_SEQUENCES` (default 16), `MODEL_STEPS` (default 20), `MODEL_SEED_BASE` (default 1):
///   seeds base, base+1, …;
/// - `MODEL_SKIP`: known problems to leave out (their step kinds and invariants): issue 8's
///   numbers (see `Problem`), e.g. `3,4`, or `known` for all;
/// - `MODEL_VERBOSE=1`: print each step as it runs.
struct ModelConfiguration {
    var seeds: [UInt64]
    var steps: Int
    var skip: Set<Problem>
    var verbose: Bool

    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Self {
        func number(_ name: String, _ fallback: Int) -> Int { environment[name].flatMap { Int($0) } ?? fallback }
        let steps = number("MODEL_STEPS", 20)
        let seeds: [UInt64]
        if let seed = environment["SEED"].flatMap({ UInt64($0) }) {
            seeds = [seed]
        } else {
            let base = UInt64(number("MODEL_SEED_BASE", 1))
            seeds = (0..<UInt64(max(0, number("MODEL_SEQUENCES", 16)))).map { base + $0 }
        }
        let skip = Problem.parse(environment["MODEL_SKIP"] ?? "")
        return Self(seeds: seeds, steps: steps, skip: skip, verbose: environment["MODEL_VERBOSE"] == "1")
    }
}

/// The model-based test of issue 8: random sequences of runs, stops, second runs and reports
/// against the real binary and the simulator, the journal checked against `ModelTable` after
/// every step.
@Suite("lifecycle model", .serialized)
struct LifecycleModelTests {
    @Test func randomSequencesKeepEveryRowTrue() throws {
        let configuration = ModelConfiguration.fromEnvironment()
        let shardOf = try ShardCalibration.learn()
        let table = ModelTable(skip: configuration.skip, shardOf: shardOf)
        var passedSequences = 0
        var passedSteps = 0
        var failures: [String] = []
        var failuresByProblem: [String: Int] = [:]
        let started = Date()
        for seed in configuration.seeds {
            var generator = ModelGenerator(seed: seed, skip: configuration.skip)
            let steps = generator.steps(configuration.steps)
            let sequence = ModelSequence(seed: seed, table: table, verbose: configuration.verbose)
            var failure: (step: Int, violations: [Violation])? = nil
            for (index, step) in steps.enumerated() {
                let violations: [Violation]
                do {
                    violations = try sequence.perform(step)
                } catch {
                    violations = [Violation(nil, "the step could not be carried out: \(error)")]
                }
                if !violations.isEmpty {
                    failure = (index + 1, violations)
                    break
                }
                passedSteps += 1
            }
            guard let failure else {
                passedSequences += 1
                continue
            }
            for problem in Set(failure.violations.map { $0.problem?.label ?? "new" }) {
                failuresByProblem[problem, default: 0] += 1
            }
            let report = Self.report(seed: seed, steps: steps, failure: failure, skip: configuration.skip)
            print(report)
            failures.append(report)
        }
        let seconds = Int(Date().timeIntervalSince(started))
        let skipped =
            configuration.skip.isEmpty
            ? "" : ", left out: \(configuration.skip.sorted().map(\.label).joined(separator: ", "))"
        print(
            "lifecycle model: \(passedSequences) of \(configuration.seeds.count) sequences passed, \(passedSteps) steps passed, \(failures.count) failed (\(seconds) s\(skipped))"
                + (failuresByProblem.isEmpty
                    ? "" : "; failures by problem: \(failuresByProblem.sorted { $0.key < $1.key })"))
        for report in failures { Issue.record(Comment(rawValue: report)) }
    }

    static func report(
        seed: UInt64, steps: [Step], failure: (step: Int, violations: [Violation]), skip: Set<Problem>
    ) -> String {
        let skipText = skip.isEmpty ? "" : " MODEL_SKIP=\(skip.sorted().map(\.rawValue).joined(separator: ","))"
        var lines = ["lifecycle model: seed \(seed) failed at step \(failure.step) of \(steps.count):"]
        lines += failure.violations.prefix(12).map { "  ! \($0)" }
        if failure.violations.count > 12 { lines.append("  ! … and \(failure.violations.count - 12) more") }
        lines.append("  steps:")
        for (index, step) in steps.prefix(failure.step).enumerated() {
            lines.append("  \(index + 1 == failure.step ? ">" : " ") \(index + 1). \(step)")
        }
        lines.append(
            "  replay: SEED=\(seed) MODEL_STEPS=\(steps.count)\(skipText) swift test --skip-build --filter LifecycleModelTests"
        )
        return lines.joined(separator: "\n")
    }
}

/// Which shard (of 2) each profile of the universe hashes to, learned from the binary once per
/// test: the hash is not documented, so the model observes it and then holds every later shard
/// run to the same partition.
enum ShardCalibration {
    static func learn() throws -> [String: Int] {
        let workspace = Workspace()
        let keys = World.Keys(seed: 0)
        let input = workspace.write("universe.csv", InputLine.csv(ModelUniverse.pairs.map(InputLine.pair)))
        var shardOf: [String: Int] = [:]
        for shard in 0..<2 {
            let simulator = try World().makeSimulator(keys: keys, seed: 1)
            defer { simulator.stop() }
            var arguments = runArguments([input], workspace, simulator, ["--shard", "\(shard)/2"])
            arguments[arguments.firstIndex(of: "--journal")! + 1] = workspace.file("shard-\(shard).sqlite")
            let finished = try botsi(arguments, key: keys.accepted, in: workspace)
            try #require(
                finished.status == 0, "the shard calibration run exited \(finished.status): \(finished.stderr)")
            for pair in simulator.stats().pairs {
                try #require(
                    shardOf[pair.profileId, default: shard] == shard,
                    "profile \(pair.profileId) was sent by both shards: --shard does not partition by profileId")
                shardOf[pair.profileId] = shard
            }
        }
        let missing = Set(ModelUniverse.pairs.map(\.profileId)).subtracting(shardOf.keys)
        try #require(missing.isEmpty, "no shard sent the profiles \(missing.sorted())")
        return shardOf
    }
}
