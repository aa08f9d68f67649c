import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `--shard auto/N` through the built binary: the index comes from the variable a Kubernetes
/// Indexed Job or an AWS Batch array job sets, and a run without one stops before any request.
@Suite("--shard auto")
struct ShardFromEnvironmentTests {
    @Test func theIndexComesFromJobCompletionIndexAndEachShardSendsOnlyItsRows() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(30))
        var sent = 0
        for index in 0..<3 {
            var environment = Child.environment(key: Simulator.defaultKey)
            environment["JOB_COMPLETION_INDEX"] = String(index)
            // Each shard its own journal, as the Indexed Job's volume gives one per index.
            let shard = Workspace()
            let finished = try botsi(
                runArguments([input], shard, simulator, ["--shard", "auto/3"]), key: Simulator.defaultKey,
                in: shard, environment: environment)
            #expect(finished.status == 0, "stderr: \(finished.stderr)")
            sent = simulator.stats().requests
        }
        #expect(sent == 30, "the three shards together send every row once")
        #expect(simulator.stats().pairs.allSatisfy { $0.requests == 1 })
    }

    @Test func withoutTheSchedulersVariableTheRunStopsBeforeAnyRequest() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        var environment = Child.environment(key: Simulator.defaultKey)
        environment["JOB_COMPLETION_INDEX"] = nil
        environment["AWS_BATCH_JOB_ARRAY_INDEX"] = nil
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(3))], workspace, simulator, ["--shard", "auto/3"]),
            key: Simulator.defaultKey, in: workspace, environment: environment)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("JOB_COMPLETION_INDEX"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
    }
}
