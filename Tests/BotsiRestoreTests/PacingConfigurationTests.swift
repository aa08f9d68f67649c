import Testing

@testable import BotsiRestore

/// What `SendScheduler` is built from, from the run's options.
@Suite struct PacingConfigurationTests {
    @Test func eachShardPacesAtItsShareOfTheJobRateLessTheHeadroom() {
        var options = RunOptions()
        options.jobRate = 40
        options.shardCount = 4
        #expect(PacingConfiguration(options).rateCap == 10)
        options.rate = 8
        #expect(PacingConfiguration(options).rateCap == 8, "--rate still caps each process")
        options.headroom = 25
        #expect(PacingConfiguration(options).rateCap == 6)
        #expect(PacingConfiguration(options).headroom == 0.25)
        options.rate = nil
        options.jobRate = nil
        #expect(PacingConfiguration(options).rateCap == nil, "no cap: the replies set the pace")
    }
}
