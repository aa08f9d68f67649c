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

    /// The cap the samples, metrics, progress line and page show is the one the pacer holds to,
    /// as given (before the headroom): `--rate`, or the shard's share of `--job-rate`.
    @Test(
        arguments: [
            (nil, nil, 1, 0.0), (Double?(30), nil, 1, 0.0), (nil, Double?(100), 2, 0.0), (8, 40, 4, 25),
            (20, 40, 4, 10),
        ] as [(Double?, Double?, Int, Double)])
    func theCapShownIsThePacersBeforeTheHeadroom(rate: Double?, jobRate: Double?, shards: Int, headroom: Double) {
        var options = RunOptions()
        options.rate = rate
        options.jobRate = jobRate
        options.shardCount = shards
        options.headroom = headroom
        #expect(options.rateCap.map { $0 * (1 - headroom / 100) } == PacingConfiguration(options).rateCap)
    }
}
