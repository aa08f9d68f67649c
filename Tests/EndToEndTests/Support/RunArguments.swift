import BotsiSimulator
import Foundation

/// `run` against a simulator, with short backoff so that injected faults do not slow a test down.
func runArguments(
    _ inputs: [String], _ workspace: Workspace, _ simulator: Simulator, _ extra: [String] = []
) -> [String] {
    ["run"] + inputs + [
        "--journal", workspace.journal, "--base-url", simulator.baseURL, "--backoff-base", "0.01",
        "--backoff-cap", "0.05", "--retry-after-cap", "0.05", "--timeout", "10",
    ] + extra
}

/// SplitMix64, so that a test's random moments repeat from run to run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
