import Dispatch
import Foundation
import Glibc

/// The listening socket and the event loops it hands connections to, round-robin.
///
/// One loop per core (two on the build machine): each loop is one serial queue, so two loops let the
/// server use both cores, and on a machine crowded with other work two runnable threads keep a fairer
/// share of the CPU than one.
final class Server: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `listenerSource`, `nextLoop` and `stopped` are touched only on
    // `acceptQueue`; the loops are reached only through their own queues.
    private let acceptQueue = DispatchQueue(label: "botsi.simulator.accept")
    private let core: SimulatorCore
    private let openDescriptors = DispatchGroup()
    private let loops: [ServerLoop]
    private var listenerSource: DispatchSourceRead?
    private var nextLoop = 0
    private var stopped = false

    init(core: SimulatorCore, loopCount: Int = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))) {
        self.core = core
        let group = openDescriptors
        loops = (0..<loopCount).map {
            ServerLoop(core: core, openDescriptors: group, label: "botsi.simulator.loop.\($0)")
        }
    }

    func start(host: String, port: Int) throws -> Int {
        let listener = try Socket.listen(host: host, port: port)
        let boundPort: Int
        do {
            boundPort = try Socket.localPort(listener)
        } catch {
            Glibc.close(listener)
            throw error
        }
        for loop in loops { loop.queue.sync { loop.begin() } }
        acceptQueue.sync {
            openDescriptors.enter()
            let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: acceptQueue)
            source.setEventHandler { [self] in acceptPending(listener) }
            source.setCancelHandler { [self] in
                Glibc.close(listener)
                openDescriptors.leave()
            }
            listenerSource = source
            source.resume()
        }
        return boundPort
    }

    /// Stops accepting, closes every connection and waits (bounded) until every descriptor is closed.
    /// Connections handed to a loop before this are either closed by its shutdown or refused by `adopt`.
    func stop() {
        acceptQueue.sync {
            guard !stopped else { return }
            stopped = true
            listenerSource?.cancel()
            listenerSource = nil
        }
        for loop in loops { loop.queue.sync { loop.shutdown() } }
        _ = openDescriptors.wait(timeout: .now() + 10)
    }

    private func acceptPending(_ listener: Int32) {
        while !stopped {
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            Socket.prepareAccepted(descriptor)
            // Counted before the hand-off, so no reply on the connection can come before its count.
            core.recordAccepted(1)
            openDescriptors.enter()
            let loop = loops[nextLoop]
            nextLoop = (nextLoop + 1) % loops.count
            loop.queue.async { loop.adopt(descriptor) }
        }
    }
}
