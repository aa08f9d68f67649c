import Foundation
import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

/// Issue 23's targets for N processes sharing one limit, proven on the virtual-clock model
/// (`PacingModel`): N copies of the real `SendScheduler`, each driven as the runner drives it,
/// against the simulator's own limiters. Seeded and deterministic; a failure names the scenario
/// and its seed (`BOTSI_PACING_SEED=N` replays another seed set).
///
/// Definitions (docs/pacing.md): utilization = rows answered ÷ (last end − first start) ÷ the
/// limit (of the room live traffic leaves); fair = while all run, each one's accepted rate over 5 s
/// within 0.75–1.33 of their mean, and with equal inputs the first to finish takes at least 0.75 of
/// the last one's time; after a limit change or a late start the targets hold from 10 s later.
@Suite struct PacingSharingTests {
    /// Two seeds per scenario, or the ones the environment names.
    static let seeds: [UInt64] =
        (ProcessInfo.processInfo.environment["BOTSI_PACING_SEED"]?.split(separator: ",").compactMap { UInt64($0) })
        ?? [1, 2]

    /// A scenario, the targets it is held to, and why it misses one when the model says it does.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        let build: @Sendable (UInt64) -> PacingScenario
        /// Targets this controller is known to miss here, and by how much (docs/pacing.md, "What is
        /// not met"): the check still runs, and a miss outside `knownMiss` fails.
        var knownMiss: String?
        /// What even a known miss must clear; the common floor unless the scenario says otherwise.
        var floor = PacingBounds.floor

        var testDescription: String { name }
    }

    static func scenario(
        _ kind: RateLimiterKind, processes: Int = 1, rows: Int,
        _ change: @escaping @Sendable (inout PacingScenario) -> Void = { _ in }
    ) -> @Sendable (UInt64) -> PacingScenario {
        { seed in
            var scenario = PacingScenario()
            scenario.kind = kind
            scenario.processes = processes
            scenario.rowsPerProcess = rows
            scenario.seed = seed
            change(&scenario)
            return scenario
        }
    }

    /// Where this controller misses a target on the model, as docs/pacing.md ("What is not met")
    /// reports it.
    static func knownMiss(_ kind: RateLimiterKind, _ name: String) -> String? {
        let misses: [RateLimiterKind: [String: String]] = [
            .sliding: [
                "alone, 20 ms": "0.95-0.98 of the limit: the start's climb costs about a second of sends",
                "alone, 200 ms": "0.95-0.96 of the limit: at 200 ms a cut shows later",
                "alone at 40/s": "0.955-0.97 of the limit: the start's second costs more of a small limit",
                "alone at 5/s": "0.86-0.87 of the limit, 3.9-4.0% 429s: each probe's refusal is a fifth of a second's",
                "8 shards": "0.84-0.90 of the limit, 2.2-2.4% 429s, shares 0.29-1.83: eight probers",
                "4 shards beside a live client at 30%": "the live client sees 1.7%",
                "beside a live client at 30%, arriving at random": "the live client sees 3.1-4.2%",
                "4 shards beside a live client at 30%, arriving at random":
                    "the live client sees 2.8-2.9%, shares 0.63-1.46",
                "a shard starts 15 s late": "the late shard needs more than 10 s to reach 0.75 of a share",
                "8 shards, limit stated": "0.91-0.93 of a stated limit: the room the first to finish leave",
                "beside a live client at 30%, arriving at random, limit stated":
                    "0.78-0.81 of the users' room: the start stops two deviations of their count short of it",
            ],
            .fixed: [
                // A job starts anywhere in a fixed window: one that starts late in it climbs into the
                // window's end and the next one's start, twice the quota within a second, and sets its
                // first ceiling too high.
                "alone, 0 ms": "0.96-0.98 of the limit: a start late in a window overshoots twice",
                "alone, 200 ms": "1.2-1.7% 429s: a window's end refuses a probe's excess in a block",
                "alone at 40/s": "1.4% 429s in one seed of two",
                "alone at 5/s": "4.3-4.6% 429s: each probe's refusal is a fifth of a second's requests",
                "8 shards": "0.88-0.89 of the limit, 2.2-3.0% 429s, shares 0.59-1.55",
                "beside a live client at 30%": "the live client sees 1.1-2.9%",
                "4 shards beside a live client at 30%": "the live client sees 1.9-2.5%, shares 0.67-1.43",
                "beside a live client at 30%, arriving at random": "the live client sees 3.1-3.3%",
                "4 shards beside a live client at 30%, arriving at random":
                    "the live client sees 2.1-3.4%, shares 0.72-1.29",
                "a shard starts 15 s late": "the late shard needs more than 10 s to reach 0.75 of a share",
                "8 shards, limit stated":
                    "0.95 of a stated limit, 2.3% 429s: eight senders' counts vary at window ends",
                "beside a live client at 30%, arriving at random, limit stated": "the live client sees 0.16-0.53%",
            ],
            .bucket: [
                "alone at 40/s": "1.1-1.2% 429s: the bucket's burst hides the limit from the climb",
                "alone at 5/s": "4.5-4.9% 429s: each probe's refusal is a fifth of a second's requests",
                "4 shards": "2.1% 429s",
                "8 shards": "0.85-0.92 of the limit, 3.0-3.1% 429s, shares 0.32-1.60",
                "beside a live client at 30%": "the live client sees 1.3-2.2%: the bucket's burst hides the limit",
                "4 shards beside a live client at 30%": "the live client sees 2.2-3.6%, shares 0.82-1.40",
                "beside a live client at 30%, arriving at random": "the live client sees 3.0-5.2%",
                "4 shards beside a live client at 30%, arriving at random":
                    "the live client sees 2.7-3.1%, shares 0.82-1.34",
                "a shard starts 15 s late": "the late shard needs more than 10 s to reach 0.75 of a share",
                "beside a live client at 30%, arriving at random, limit stated": "the live client sees 0.6-1.3%",
            ],
        ]
        return misses[kind]?[name]
    }

    /// The floor beside live traffic that arrives at random: 8% of its requests refused at most.
    static let randomLiveFloor: PacingBounds = {
        var floor = PacingBounds.floor
        floor.live.refused = 0.08
        return floor
    }()

    /// The floor at Apple's sandbox limit (5/s): each probe that finds it is a fifth of a second's
    /// requests, and the cut after it measures whole requests (4 of 5); see docs/pacing.md.
    static let sandboxFloor: PacingBounds = {
        var floor = PacingBounds.floor
        floor.alone = (0.8, 0.06)
        return floor
    }()

    /// The floor beside users arriving at random when the limit is stated: 2.5% of theirs refused.
    static let statedLiveFloor: PacingBounds = {
        var floor = PacingBounds.floor
        floor.live.refused = 0.025
        return floor
    }()

    static let cases: [Case] = RateLimiterKind.allCases.flatMap { kind -> [Case] in
        [
            Case(name: "\(kind): alone, 20 ms", build: scenario(kind, rows: 6000)),
            Case(
                name: "\(kind): alone, 0 ms",
                build: scenario(kind, rows: 6000) {
                    $0.latency = 0; $0.jitter = 0.001
                }),
            Case(
                name: "\(kind): alone, 200 ms",
                build: scenario(kind, rows: 6000) {
                    $0.latency = 0.2; $0.jitter = 0.02
                }),
            Case(name: "\(kind): alone at 40/s", build: scenario(kind, rows: 2400) { $0.limit = 40 }),
            // Apple's sandbox: a tenth of production's limit, where an app's first run usually goes.
            Case(
                name: "\(kind): alone at 5/s",
                build: scenario(kind, rows: 600) {
                    $0.limit = 5; $0.latency = 0.1
                }, floor: sandboxFloor),
            Case(name: "\(kind): 2 shards", build: scenario(kind, processes: 2, rows: 2500)),
            Case(name: "\(kind): 4 shards", build: scenario(kind, processes: 4, rows: 1250)),
            Case(name: "\(kind): 8 shards", build: scenario(kind, processes: 8, rows: 625)),
            Case(
                name: "\(kind): beside a live client at 30%",
                build: scenario(kind, rows: 2500) {
                    $0.liveRate = 30; $0.starts = [2]
                }),
            Case(
                name: "\(kind): 4 shards beside a live client at 30%",
                build: scenario(kind, processes: 4, rows: 700) {
                    $0.liveRate = 30; $0.starts = [2, 2, 2, 2]
                }),
            // An app's users arrive at random, not a few per cent either side of an even spacing: a
            // second with more of them than usual finds the window full. What `simulate --live-rate`
            // rehearses, and what bench/pacing.sh measures. Its floor says only that the live client is
            // not shut out.
            Case(
                name: "\(kind): beside a live client at 30%, arriving at random",
                build: scenario(kind, rows: 2500) {
                    $0.liveRate = 30; $0.starts = [2]; $0.livePoisson = true
                }, floor: randomLiveFloor),
            Case(
                name: "\(kind): 4 shards beside a live client at 30%, arriving at random",
                build: scenario(kind, processes: 4, rows: 700) {
                    $0.liveRate = 30; $0.starts = [2, 2, 2, 2]; $0.livePoisson = true
                }, floor: randomLiveFloor),
            Case(name: "\(kind): alone, limit stated", build: scenario(kind, rows: 6000) { $0.statesLimit = true }),
            // The window's remaining count shows how much the users' share of it varies: the job
            // keeps room for their busier seconds (its floor: 2.5% of theirs refused at most).
            Case(
                name: "\(kind): beside a live client at 30%, arriving at random, limit stated",
                build: scenario(kind, rows: 2500) {
                    $0.liveRate = 30; $0.starts = [2]; $0.livePoisson = true; $0.statesLimit = true
                }, floor: statedLiveFloor),
            Case(
                name: "\(kind): alone at 40/s, limit stated",
                build: scenario(kind, rows: 2400) {
                    $0.limit = 40; $0.statesLimit = true
                }),
            Case(
                name: "\(kind): 4 shards, limit stated",
                build: scenario(kind, processes: 4, rows: 1250) { $0.statesLimit = true }),
            Case(
                name: "\(kind): 8 shards, limit stated",
                build: scenario(kind, processes: 8, rows: 625) { $0.statesLimit = true }),
            Case(
                name: "\(kind): the limit halves, then doubles",
                build: scenario(kind, rows: 9000) { $0.limitChanges = [(30, 50), (60, 100)] }),
            Case(
                name: "\(kind): a shard starts 15 s late",
                build: scenario(kind, processes: 4, rows: 1500) { $0.starts = [0, 0, 0, 15] }),
        ].map { testCase in
            var testCase = testCase
            testCase.knownMiss = knownMiss(kind, String(testCase.name.dropFirst("\(kind): ".count)))
            return testCase
        }
    }

    @Test(arguments: cases)
    func meetsTheTargets(_ testCase: Case) {
        for seed in Self.seeds {
            let scenario = testCase.build(seed)
            let outcome = PacingModel.run(scenario)
            let replay = "\(scenario) (replay: BOTSI_PACING_SEED=\(seed)): "
            let failures = outcome.failures(.targets)
            if let knownMiss = testCase.knownMiss {
                withKnownIssue(Comment(rawValue: knownMiss), isIntermittent: true) {
                    #expect(failures.isEmpty, Comment(rawValue: replay + failures.joined(separator: "; ")))
                }
                // Where the targets are missed, the floor still holds: no starved process, no storm.
                let floor = outcome.failures(testCase.floor)
                #expect(floor.isEmpty, Comment(rawValue: replay + "below the floor: " + floor.joined(separator: "; ")))
            } else {
                #expect(failures.isEmpty, Comment(rawValue: replay + failures.joined(separator: "; ")))
            }
        }
    }

    /// A service with no limit that answers a few requests 429 at random is not a limit: once ten of
    /// those refusals came at or under the ceiling, the rate goes back to where the concurrency puts
    /// it (32 at 20 ms: 1,600/s) and stays there. Before the background rule each scattered 429 was
    /// an episode, and the cuts ratcheted the pace down to 67-184/s for the whole run.
    @Test(arguments: [0.0033, 0.0067])
    func scatteredRefusalsAreNotALimit(share: Double) {
        for seed in Self.seeds {
            var scenario = PacingScenario()
            scenario.limit = 1_000_000
            scenario.rowsPerProcess = 150_000
            scenario.randomRefusals = share
            scenario.retryAfter = 0
            scenario.seed = seed
            let outcome = PacingModel.run(scenario)
            let accepted = outcome.processes[0].accepted
            let lastMinute = Double(accepted.filter { $0 >= outcome.end - 60 }.count) / 60
            let replay = "\(scenario) (replay: BOTSI_PACING_SEED=\(seed))"
            #expect(outcome.allEnded && outcome.end < 300, "\(replay): not finished in 300 s")
            #expect(
                lastMinute >= 0.8 * 1600, "\(replay): \(Int(lastMinute)) rows/s in the last minute, not 0.8 of 1,600")
        }
    }
}
