import Foundation
import Testing

@testable import BotsiRestore
@testable import BotsiSimulator

/// Prints the model's figures (BOTSI_PACING_EXPLORE=1): for working on the controller.
/// BOTSI_PACING_TUNING="backoff=0.9,cubic=0.002" tries other constants; BOTSI_PACING_ONLY="live"
/// keeps the scenarios whose description contains it; BOTSI_PACING_TRACE=1 prints each second.
@Suite struct PacingExplore {
    static let environment = ProcessInfo.processInfo.environment

    static func tuning() -> RateController.Tuning {
        var tuning = RateController.Tuning()
        for pair in (environment["BOTSI_PACING_TUNING"] ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=")
            guard parts.count == 2 else { continue }
            let value = Double(parts[1])
            switch parts[0] {
            case "startRate": tuning.startRate = value!
            case "startGrowth": tuning.startGrowth = value!
            case "backoff": tuning.backoff = value!
            case "recoveryTime": tuning.recoveryTime = value!
            case "plateau": tuning.plateau = value!
            case "probe": tuning.probe = value!
            case "probeScale": tuning.probeScale = value!
            case "holdoff": tuning.holdoff = value!
            case "measureOver": tuning.measureOver = value!
            case "trickle": tuning.trickle = value!
            case "recutShare": tuning.recutShare = value!
            case "recutCount": tuning.recutCount = Int(value!)
            case "closedShare": tuning.closedShare = value!
            case "openingWindows": tuning.openingWindows = value!
            case "lowRemaining": tuning.lowRemaining = value!
            case "longClosed": tuning.longClosed = value!
            case "othersSteadyShare": tuning.othersSteadyShare = value!
            case "othersSteadyGrowth": tuning.othersSteadyGrowth = value!
            case "othersSteadySamples": tuning.othersSteadySamples = Int(value!)
            default: Issue.record("unknown constant \(parts[0])")
            }
        }
        return tuning
    }

    /// BOTSI_PACING_CASES=1: the figures `PacingSharingTests` judges, for each of its scenarios
    /// (seeds from BOTSI_PACING_SEEDS, default 1,2): what docs/pacing.md's tables are made of.
    /// BOTSI_PACING_ONLY keeps the scenarios whose name contains it; BOTSI_PACING_HEADROOM=20 and
    /// BOTSI_PACING_RATE=60 run them with `--headroom 20%` and `--rate 60`.
    @Test(.enabled(if: environment["BOTSI_PACING_CASES"] != nil))
    func cases() {
        let seeds = (Self.environment["BOTSI_PACING_SEEDS"] ?? "1,2").split(separator: ",").compactMap { UInt64($0) }
        let only = Self.environment["BOTSI_PACING_ONLY"] ?? ""
        let headroom = (Self.environment["BOTSI_PACING_HEADROOM"].flatMap(Double.init) ?? 0) / 100
        let rate = Self.environment["BOTSI_PACING_RATE"].flatMap(Double.init)
        var (runs, misses, floorsBroken) = (0, 0, 0)
        defer { print("\(misses) of \(runs) scenario-seeds miss a target; \(floorsBroken) below the floor") }
        for testCase in PacingSharingTests.cases where only.isEmpty || testCase.name.contains(only) {
            for seed in seeds {
                runs += 1
                var scenario = testCase.build(seed)
                scenario.pacing = PacingConfiguration(
                    concurrency: scenario.pacing.concurrency, rateCap: rate.map { $0 * (1 - headroom) },
                    headroom: headroom)
                scenario.pacing.tuning = Self.tuning()
                let outcome = PacingModel.run(scenario)
                let from = outcome.settledFrom
                var line = String(
                    format: "%@ | seed %d | utilization %.3f | 429s %.2f%%", testCase.name, seed,
                    outcome.utilization(from: from == outcome.firstStart ? nil : from),
                    outcome.refusedShare(from: from) * 100)
                if scenario.liveRate > 0 {
                    // And from 10 s after the job started: what its start costs the users, apart.
                    let settled = (scenario.starts.min() ?? 0) + 10
                    line += String(
                        format: " | live 429s %.2f%% (%.2f%% from 10 s in)", outcome.liveRefusedShare * 100,
                        outcome.liveRefusedShare(from: settled) * 100)
                }
                if scenario.processes > 1 {
                    let fair = outcome.fairness(from: from)
                    line += String(format: " | shares %.2f–%.2f", fair.lowest, fair.highest)
                }
                let failures = outcome.failures(.targets)
                let floor = outcome.failures(testCase.floor)
                if !failures.isEmpty { misses += 1 }
                if !floor.isEmpty { floorsBroken += 1 }
                line += failures.isEmpty ? " | met" : " | missed"
                if !floor.isEmpty { line += " | BELOW THE FLOOR: " + floor.joined(separator: "; ") }
                print(line)
                if Self.environment["BOTSI_PACING_TRACE"] != nil { print(outcome.trace) }
            }
        }
    }

    @Test(.enabled(if: environment["BOTSI_PACING_EXPLORE"] != nil))
    func explore() {
        var scenarios: [PacingScenario] = []
        let seeds = (Self.environment["BOTSI_PACING_SEEDS"] ?? "1").split(separator: ",").compactMap { UInt64($0) }
        for seed in seeds {
            for kind in RateLimiterKind.allCases {
                func make(_ change: (inout PacingScenario) -> Void) -> PacingScenario {
                    var s = PacingScenario()
                    s.kind = kind
                    s.seed = seed
                    s.pacing.tuning = Self.tuning()
                    change(&s)
                    return s
                }
                for n in [1, 2, 4, 8] {
                    scenarios.append(
                        make {
                            $0.processes = n; $0.rowsPerProcess = 3000 / n
                        })
                }
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 6000; $0.latency = 0.2; $0.jitter = 0.02
                    })
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 6000; $0.latency = 0; $0.jitter = 0.001
                    })
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 2500; $0.liveRate = 30; $0.starts = [2]
                    })
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 2500; $0.liveRate = 30; $0.starts = [2]; $0.livePoisson = true
                    })
                scenarios.append(make { $0.rowsPerProcess = 6000 })
                for limit in [100, 40] {
                    scenarios.append(
                        make {
                            $0.rowsPerProcess = 6000
                            $0.latency = 0.05
                            $0.jitter = 0.002
                            $0.limit = limit
                        })
                }
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 2400; $0.limit = 40
                    })
                scenarios.append(
                    make {
                        $0.processes = 4; $0.rowsPerProcess = 300; $0.limit = 10
                    })
                scenarios.append(
                    make {
                        $0.processes = 4; $0.rowsPerProcess = 1000; $0.statesLimit = true
                    })
                scenarios.append(
                    make {
                        $0.processes = 4; $0.rowsPerProcess = 1500; $0.starts = [0, 0, 0, 15]
                    })
                scenarios.append(
                    make {
                        $0.rowsPerProcess = 9000; $0.limitChanges = [(30, 50), (60, 100)]
                    })
            }
        }
        if let only = Self.environment["BOTSI_PACING_ONLY"], !only.isEmpty {
            scenarios = scenarios.filter { $0.description.contains(only) }
        }
        for s in scenarios {
            let outcome = PacingModel.run(s)
            let fair = outcome.fairness(from: (s.starts.max() ?? 0) + 10)
            print(outcome.report)
            if Self.environment["BOTSI_PACING_TRACE"] != nil { print(outcome.trace) }
            print(
                String(
                    format: "  fairness %.2f–%.2f over %d windows, finish spread %.2f", fair.lowest, fair.highest,
                    fair.windows, outcome.finishSpread))
            print("  " + (outcome.failures.isEmpty ? "OK" : "FAIL " + outcome.failures.joined(separator: "; ")))
        }
    }
}

extension PacingExplore {
    /// BOTSI_PACING_LONG=1: a limit enforced over a long window (BOTSI_PACING_WINDOW seconds, 60 by
    /// default: Apple's hour scaled down), alone and beside users at 30% of it; the whole run's
    /// figures and those from the third window on. BOTSI_PACING_TRACE=1 adds, for every 10 s:
    /// accepted / refused / the users' refusals @ the rate at its end.
    @Test(.enabled(if: environment["BOTSI_PACING_LONG"] != nil))
    func longWindow() {
        let seeds = (Self.environment["BOTSI_PACING_SEEDS"] ?? "1").split(separator: ",").compactMap { UInt64($0) }
        let window = Int(Self.environment["BOTSI_PACING_WINDOW"] ?? "60") ?? 60
        for seed in seeds {
            for kind in RateLimiterKind.allCases {
                for users in [false, true] {
                    var scenario = PacingLongWindowTests.scenario(kind, users: users, seed: seed)
                    scenario.window = window
                    scenario.rowsPerProcess = 50 * window * 6
                    scenario.giveUpAt = Double(window * 12)
                    scenario.pacing.tuning = Self.tuning()
                    var outcome = PacingModel.run(scenario)
                    if let carry = Self.environment["BOTSI_PACING_CARRY"] {
                        // Runs on one journal, each from what the last left (or the first from
                        // CYCLE:RATE; BOTSI_PACING_CARRY_RUNS of them after the first, 1 by
                        // default): the last one's figures.
                        let given = carry.split(separator: ":").compactMap { Double($0) }
                        let runs = Int(Self.environment["BOTSI_PACING_CARRY_RUNS"] ?? "1") ?? 1
                        for run in 0..<runs {
                            scenario.pacing.carried =
                                given.count == 2 && run == 0
                                ? LongWindowPace(cycle: given[0], rate: given[1]) : outcome.processes[0].longWindow
                            scenario.seed += 1000
                            print("carried: \(String(describing: scenario.pacing.carried))")
                            outcome = PacingModel.run(scenario)
                        }
                    }
                    let settled = Double(3 * window)
                    var line = String(
                        format: "%@: utilization %.3f, 429s %.2f%%, users refused %.2f%%", scenario.description,
                        outcome.utilization(), outcome.refusedShare * 100, outcome.liveRefusedShare * 100)
                    line += String(
                        format: "; from %.0f s: %.3f of the room, 429s %.2f%%, users refused %.2f%%", settled,
                        outcome.utilization(from: settled), outcome.refusedShare(from: settled) * 100,
                        outcome.liveRefusedShare(from: settled) * 100)
                    print(line)
                    guard Self.environment["BOTSI_PACING_TRACE"] != nil else { continue }
                    let process = outcome.processes[0]
                    var trace = ""
                    for from in stride(from: 0.0, to: outcome.end, by: 10) {
                        let within = { (time: Double) in time >= from && time < from + 10 }
                        let rate = process.timeline.last { $0.time <= from + 10 }?.rate ?? 0
                        trace += String(
                            format: " %3.0f:%d/%d/%d@%.0f", from, process.accepted.filter(within).count,
                            process.refusedAt.filter(within).count, outcome.liveRefusedAt.filter(within).count, rate)
                    }
                    print(trace)
                }
            }
        }
    }
}
