import Dispatch
import Foundation
import Glibc
import Synchronization

/// The listening socket and the event loops it hands connections to, round-robin.
///
/// One loop per core (two on the build machine): each loop is one serial queue, so two loops let the
/// server use both cores, and on a machine crowded with other work two runnable threads keep a fairer
/// share of the CPU than one.
///
/// Accepting pauses (the listener's source is suspended; new connections wait in the kernel's backlog)
/// while `maxConnections` are open, and for a back-off when `accept` fails for want of descriptors or
/// memory: the listener stays readable then, so retrying at once would spin a core. A connection closing
/// ends either pause at once; the back-off timer ends the second even if none does.
final class Server: @unchecked Sendable {
    // Invariant for @unchecked Sendable: `listenerSource`, `nextLoop`, `stopped`, `paused`,
    // `pauseGeneration` and `backoffNanoseconds` are touched only on `acceptQueue`; the loops are reached
    // only through their own queues; `wakeOnRelease` is atomic. Checked at run time: each method that
    // touches them begins with `dispatchPrecondition(.onQueue(acceptQueue))`.
    private let acceptQueue = DispatchQueue(label: "botsi.simulator.accept")
    private let core: SimulatorCore
    private let openDescriptors = DispatchGroup()
    private let loops: [ServerLoop]
    private let maxConnections: Int
    private var listenerSource: DispatchSourceRead?
    private var nextLoop = 0
    private var stopped = false
    private var paused = false
    /// Tells a back-off timer whether the pause it was set for is still the current one.
    private var pauseGeneration = 0
    private var backoffNanoseconds = Server.firstBackoffNanoseconds
    /// Set while paused, so a loop that closes a connection wakes the acceptor.
    private let wakeOnRelease = Atomic<Bool>(false)

    static let firstBackoffNanoseconds: UInt64 = 50_000_000
    static let longestBackoffNanoseconds: UInt64 = 1_000_000_000

    init(core: SimulatorCore, loopCount: Int = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))) {
        self.core = core
        maxConnections = max(1, core.options.maxConnections)
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
        for loop in loops { loop.queue.sync { loop.begin(server: self) } }
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
            // A suspended source runs no cancel handler (and must not be released suspended).
            if paused {
                paused = false
                listenerSource?.resume()
            }
            listenerSource = nil
        }
        for loop in loops { loop.queue.sync { loop.shutdown() } }
        _ = openDescriptors.wait(timeout: .now() + 10)
    }

    private func acceptPending(_ listener: Int32) {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        while !stopped, !paused {
            if core.openConnections.load(ordering: .sequentiallyConsistent) >= maxConnections {
                wakeOnRelease.store(true, ordering: .sequentiallyConsistent)
                // A connection may have closed between the check and the store; look once more.
                guard core.openConnections.load(ordering: .sequentiallyConsistent) >= maxConnections else {
                    wakeOnRelease.store(false, ordering: .sequentiallyConsistent)
                    continue
                }
                pause(backingOff: false)
                return
            }
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK:
                    return
                case EINTR, ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, ENONET,
                    ENOPROTOOPT, EOPNOTSUPP:
                    // That one connection failed (Linux reports its network error here); take the next.
                    continue
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything unforeseen: the connection stays queued.
                    wakeOnRelease.store(true, ordering: .sequentiallyConsistent)
                    pause(backingOff: true)
                    return
                }
            }
            backoffNanoseconds = Self.firstBackoffNanoseconds
            Socket.prepareAccepted(descriptor)
            // Counted before the hand-off, so no reply on the connection can come before its count.
            core.openConnections.add(1, ordering: .sequentiallyConsistent)
            core.recordAccepted(1)
            openDescriptors.enter()
            let loop = loops[nextLoop]
            nextLoop = (nextLoop + 1) % loops.count
            loop.queue.async { loop.adopt(descriptor) }
        }
    }

    /// Runs on `acceptQueue`.
    private func pause(backingOff: Bool) {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        guard let source = listenerSource, !paused else { return }
        paused = true
        source.suspend()
        pauseGeneration &+= 1
        core.recordAcceptPause(backingOff: backingOff)
        guard backingOff else { return }
        let generation = pauseGeneration
        let delay = backoffNanoseconds
        backoffNanoseconds = min(backoffNanoseconds * 2, Self.longestBackoffNanoseconds)
        acceptQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [weak self] in
            guard let self, pauseGeneration == generation else { return }
            resume()
        }
    }

    /// Runs on `acceptQueue`.
    private func resume() {
        dispatchPrecondition(condition: .onQueue(acceptQueue))
        wakeOnRelease.store(false, ordering: .sequentiallyConsistent)
        guard paused, !stopped else { return }
        paused = false
        listenerSource?.resume()
    }

    /// Called on a loop's queue once a connection's descriptor is closed: frees its slot under the cap, and
    /// ends a pause, since a descriptor is free again.
    func connectionReleased() {
        core.openConnections.subtract(1, ordering: .sequentiallyConsistent)
        if wakeOnRelease.load(ordering: .sequentiallyConsistent) {
            acceptQueue.async { [weak self] in self?.resume() }
        }
    }
}
