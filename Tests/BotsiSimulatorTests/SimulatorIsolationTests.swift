import Dispatch
import Testing

@testable import BotsiSimulator

/// The simulator's loops and acceptor keep their state on one serial queue each, an invariant
/// their `@unchecked Sendable` rests on; it is checked at run time (issue 18: each one left outside
/// `Run/` has a run-time check where one is possible). Entered from the right queue a loop works;
/// entered from another thread it traps instead of racing.
@Suite struct SimulatorIsolationTests {
    @Test func aLoopEnteredOnItsQueueWorks() {
        let loop = ServerLoop(
            core: SimulatorCore(options: SimulatorOptions()), openDescriptors: DispatchGroup(), label: "t")
        loop.queue.sync { loop.shutdown() }
    }

    @Test func aLoopEnteredOffItsQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = ServerLoop(
                core: SimulatorCore(options: SimulatorOptions()), openDescriptors: DispatchGroup(), label: "t")
            loop.shutdown()
        }
    }
}
