import BotsiSimulator
import BotsiTestSupport

/// The shared launcher, with the port the raw-socket client connects to.
func startSimulatorOnPort(_ configure: (inout SimulatorOptions) -> Void = { _ in }) throws -> (Simulator, Int) {
    let simulator = try startSimulator(configure)
    return (simulator, simulator.port)
}
