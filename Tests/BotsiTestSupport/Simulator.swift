import BotsiSimulator

/// Starts a simulator on a free loopback port for one test; it stops when released (or on `stop()`).
public func startSimulator(_ configure: (inout SimulatorOptions) -> Void = { _ in }) throws -> Simulator {
    var options = SimulatorOptions()
    configure(&options)
    let simulator = Simulator(options: options)
    _ = try simulator.start()
    return simulator
}
