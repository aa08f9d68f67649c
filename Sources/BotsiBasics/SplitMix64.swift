/// A small seeded generator (SplitMix64): fast, good enough for fault draws, jitter and test data,
/// and the same seed gives the same sequence on every platform, which `SystemRandomNumberGenerator`
/// cannot — so a run's jitter or a failing test's input can be replayed from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// Uniform in 0..<1 with 53 bits of precision.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform in 0..<count; `count` must be positive. The modulo bias is irrelevant at these sizes.
    public mutating func nextIndex(below count: Int) -> Int {
        Int(next() % UInt64(count))
    }
}
