import BotsiSimulator
import BotsiTestSupport
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
