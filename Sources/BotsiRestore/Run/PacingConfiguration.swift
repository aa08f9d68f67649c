/// How one process paces its sends, from the run's options: what `SendScheduler` is built from.
struct PacingConfiguration: Sendable, Equatable {
    /// Requests in flight at most (`--concurrency`).
    var concurrency: Int
    /// Requests per second this process never exceeds: `--rate`, and this shard's share of
    /// `--job-rate`, whichever is lower, less the headroom. Nil: only the replies limit it.
    var rateCap: Double?
    /// Slow down on 429/503 and follow stated limits (`--no-adaptive` turns it off).
    var adaptive: Bool
    /// The share of a limit left unused (`--headroom`), 0 ≤ headroom < 1.
    var headroom: Double
    /// The controller's constants (docs/pacing.md); tests try others.
    var tuning = RateController.Tuning()
    /// A long window an earlier run on this journal learned: the pace to start from, instead of a
    /// climb that would spend the window's budget in its first minutes. Nil: climb.
    var carried: LongWindowPace?

    init(concurrency: Int, rateCap: Double? = nil, adaptive: Bool = true, headroom: Double = 0) {
        self.concurrency = max(1, concurrency)
        self.rateCap = rateCap
        self.adaptive = adaptive
        self.headroom = min(max(headroom, 0), 0.99)
    }

    init(_ options: RunOptions) {
        let headroom = options.headroom / 100
        let cap = options.rateCap.map { $0 * (1 - headroom) }
        self.init(concurrency: options.concurrency, rateCap: cap, adaptive: options.adaptive, headroom: headroom)
    }
}

/// A limit enforced over a long window (Apple's, over an hour), as a run learned it: how long the
/// window takes from one opening to the next, and the pace that made it last that long.
struct LongWindowPace: Sendable, Equatable {
    /// Seconds, opening to opening.
    var cycle: Double
    /// Requests per second the window gave this process over a cycle.
    var rate: Double
    /// This process saw the window stay closed for long and open again (not only carried it).
    var seen = false
}

/// What the pacing did over a run, for its summary.
struct PacingSummary: Sendable, Equatable {
    /// Times the send rate was cut on 429s or a burst of 503s.
    var throttleEvents = 0
    /// The lowest send-rate limit a cut set.
    var lowestRate: Double?
    /// The send-rate limit in force at the end when it was below the cap (or there is none).
    var finalRate: Double?
}
