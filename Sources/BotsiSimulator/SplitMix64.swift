/// A small seeded generator (SplitMix64): fast, good enough for fault draws and jitter, and the same
/// seed gives the same sequence on every platform, which `SystemRandomNumberGenerator` cannot.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// Uniform in 0..<1 with 53 bits of precision.
    mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform in 0..<count; `count` must be positive. The modulo bias is irrelevant at these sizes.
    mutating func nextIndex(below count: Int) -> Int {
        Int(next() % UInt64(count))
    }
}
