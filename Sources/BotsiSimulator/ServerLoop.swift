import Dispatch
import Glibc

/// One event loop of the server: a share of the connections, all driven by Dispatch sources that target
/// one serial queue.
///
/// Why Dispatch sources on serial queues (and not an epoll loop of our own): Glibc's Swift module does
/// not export epoll, and the package gives this target no C shim. Dispatch already multiplexes with epoll
/// underneath, and a serial queue makes its loop the single owner of its connections, so connection
/// state needs no locks and the shared mutex is taken only to decide a request. Delays and idle
/// timeouts share one timer source (`LoopTimers`).
final class ServerLoop: @unchecked Sendable {
    // Invariant for @unchecked Sendable: every `var` below is read and written only on `queue`. Source
    // handlers and the timer all target `queue`; the server reaches the loop only through `queue`.
    // Checked at run time where the loop is entered (begin, shutdown, adopt, each source's and the
    // timer's handler): `dispatchPrecondition(.onQueue(queue))`; the private methods run from those.
    let queue: DispatchQueue
    private let core: SimulatorCore
    private let openDescriptors: DispatchGroup
    /// Told when a connection's descriptor is closed (weak: the server owns its loops).
    private weak var server: Server?
    private var connections: [UInt64: Connection] = [:]
    private var nextConnectionId: UInt64 = 1
    private var timers = LoopTimers()
    private var stopped = false
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    private let control = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
    /// With a latency configured, the delay runs from the kernel's receive timestamp of the request, not
    /// from the moment this queue got round to reading it, so the time the event spent travelling through
    /// Dispatch's threads is part of the latency instead of added to it.
    private let timesArrivals: Bool
    private let idleTimeoutNanoseconds: UInt64

    init(core: SimulatorCore, openDescriptors: DispatchGroup, label: String) {
        self.core = core
        self.openDescriptors = openDescriptors
        queue = DispatchQueue(label: label)
        timesArrivals = core.options.latencyMilliseconds > 0 || core.options.jitterMilliseconds > 0
        idleTimeoutNanoseconds = UInt64(min(core.options.idleTimeoutSeconds, 86_400) * 1_000_000_000)
    }

    deinit {
        scratch.deallocate()
        control.deallocate()
    }

    /// Runs on `queue`.
    func begin(server: Server) {
        dispatchPrecondition(condition: .onQueue(queue))
        self.server = server
        timers.start(on: queue) { [self] in fireDueTimers() }
    }

    /// Runs on `queue`: closes every connection (stalled ones included) and the timer.
    func shutdown() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        stopped = true
        for connection in Array(connections.values) { close(connection) }
        timers.stop()
    }

    /// Runs on `queue`: takes over an accepted socket, for which the server already entered the group.
    func adopt(_ descriptor: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else {
            Glibc.close(descriptor)
            server?.connectionReleased()
            openDescriptors.leave()
            return
        }
        if timesArrivals { Socket.enableReceiveTimestamps(descriptor) }
        let connection = Connection(id: nextConnectionId, descriptor: descriptor)
        nextConnectionId += 1
        connections[connection.id] = connection
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [self] in readAvailable(connection) }
        source.setCancelHandler { [self] in sourceCancelled(connection) }
        connection.readSource = source
        connection.liveSources += 1
        startIdleClock(connection)
        source.resume()
    }

    // MARK: Reading and dispatching requests

    private func readAvailable(_ connection: Connection) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !connection.closed else { return }
        while true {
            var arrival: UInt64?
            let count =
                timesArrivals
                ? Socket.receiveTimed(connection.descriptor, into: scratch, control: control, arrival: &arrival)
                : recv(connection.descriptor, scratch.baseAddress, scratch.count, 0)
            if count > 0 {
                if connection.inbound.isEmpty, connection.phase == .reading { connection.requestArrival = arrival }
                connection.inbound.append(
                    contentsOf: UnsafeRawBufferPointer(start: scratch.baseAddress, count: count))
                if connection.inbound.count > HTTPParser.maximumHeadBytes + HTTPParser.maximumBodyBytes {
                    close(connection)
                    return
                }
                // A short read drained the socket; more data will raise a new event, so skip the
                // extra recv that would only say EAGAIN (one syscall less per request).
                if count < scratch.count { break }
                continue
            }
            if count == 0 {
                // The peer is gone: nobody will read a reply, so drop whatever is pending.
                close(connection)
                return
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            close(connection)
            return
        }
        processInbound(connection)
    }

    /// Serves the requests buffered on a connection one at a time (pipelined ones wait their turn).
    /// A loop rather than recursion, so a long pipeline cannot grow the stack.
    private func processInbound(_ connection: Connection) {
        guard !connection.insideProcessing else { return }
        connection.insideProcessing = true
        defer { connection.insideProcessing = false }
        while connection.phase == .reading, !connection.closed, !connection.inbound.isEmpty {
            let searched = connection.headSearched
            let result = connection.inbound.withUnsafeBufferPointer { HTTPParser.parse($0, headSearched: searched) }
            switch result {
            case .needMore(let expectsContinue, let headSearched):
                connection.headSearched = headSearched
                if expectsContinue, !connection.sentContinue {
                    connection.sentContinue = true
                    _ = Responses.continueLine.withUnsafeBytes {
                        send(connection.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                }
                return
            case .failure(let status, let message):
                let body = Responses.errorBody(message, code: status == 400 ? "bad_request" : "invalid_request")
                connection.inbound.removeAll()
                connection.headSearched = 0
                perform(
                    .send(Responses.make(status: status, body: body, keepAlive: false), closeAfter: true),
                    on: connection)
            case .request(let head, let body, let consumed):
                connection.headSearched = 0
                if consumed == connection.inbound.count {
                    connection.inbound.removeAll(keepingCapacity: true)
                } else {
                    connection.inbound.removeFirst(consumed)
                }
                connection.sentContinue = false
                dispatch(head, body: body, on: connection)
            }
        }
    }

    private func dispatch(_ head: HTTPRequestHead, body: [UInt8], on connection: Connection) {
        let plan = core.plan(head, body: body)
        connection.inFlight = plan.inFlight
        connection.generation &+= 1
        let arrival = connection.requestArrival
        connection.requestArrival = nil
        if case .stall = plan.action {
            connection.phase = .stalled
            let seconds = min(core.options.stallSeconds, 1e9)
            schedule(after: UInt64(seconds * 1_000_000_000), from: nil, connection)
        } else if plan.delayNanoseconds > 0 {
            connection.phase = .waiting
            connection.pendingAction = plan.action
            schedule(after: plan.delayNanoseconds, from: arrival, connection)
        } else {
            perform(plan.action, on: connection)
        }
    }

    private func perform(_ action: ReplyPlan.Action, on connection: Connection) {
        switch action {
        case .send(let bytes, let closeAfter):
            write(bytes, closeAfter: closeAfter, on: connection)
        case .truncated(let bytes):
            write(bytes, closeAfter: true, on: connection)
        case .trickle(let head, let chunk, let interval):
            connection.trickle = Trickle(chunk: chunk, intervalNanoseconds: interval)
            write(head, closeAfter: false, on: connection)
        case .reset:
            close(connection, reset: true)
        case .stall:
            close(connection)
        }
    }

    // MARK: Writing

    private func write(_ bytes: [UInt8], closeAfter: Bool, on connection: Connection) {
        // The request stops counting as in flight before its reply goes out: once the bytes are
        // sent, the client may read them and send its next request before this loop runs again,
        // and the stats would count two in flight for one profile. A never-ending reply stays in
        // flight until its connection closes.
        if connection.trickle == nil, let token = connection.inFlight {
            connection.inFlight = nil
            core.finish(token)
        }
        connection.phase = .writing
        startIdleClock(connection)
        connection.outbound = bytes
        connection.outboundOffset = 0
        connection.closeAfterWrite = closeAfter
        flush(connection)
    }

    private func flush(_ connection: Connection) {
        dispatchPrecondition(condition: .onQueue(queue))
        while connection.outboundOffset < connection.outbound.count {
            let written = connection.outbound.withUnsafeBytes { bytes in
                send(
                    connection.descriptor, bytes.baseAddress! + connection.outboundOffset,
                    bytes.count - connection.outboundOffset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                connection.outboundOffset += written
            } else if written < 0, errno == EINTR {
                continue
            } else if written < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                waitUntilWritable(connection)
                return
            } else {
                close(connection)
                return
            }
        }
        connection.outbound = []
        if let source = connection.writeSource {
            connection.writeSource = nil
            source.cancel()
        }
        if let trickle = connection.trickle {
            // The reply never ends, so the request stays in flight until the connection closes.
            connection.phase = .trickling
            schedule(after: trickle.intervalNanoseconds, from: nil, connection)
            return
        }
        if connection.closeAfterWrite {
            close(connection)
        } else {
            connection.phase = .reading
            startIdleClock(connection)
            processInbound(connection)
        }
    }

    private func waitUntilWritable(_ connection: Connection) {
        guard connection.writeSource == nil else { return }
        let source = DispatchSource.makeWriteSource(fileDescriptor: connection.descriptor, queue: queue)
        source.setEventHandler { [self] in
            guard !connection.closed, connection.phase == .writing else { return }
            // The client took some of the reply: that is progress, so its idle clock starts again.
            connection.idleSince = DispatchTime.now().uptimeNanoseconds
            flush(connection)
        }
        source.setCancelHandler { [self] in sourceCancelled(connection) }
        connection.writeSource = source
        connection.liveSources += 1
        source.resume()
    }

    /// One small non-blocking send per tick. A client that stops reading only fills its socket buffer,
    /// so a full buffer skips the tick instead of waiting for room.
    private func trickleMore(_ connection: Connection) {
        guard let trickle = connection.trickle else { return }
        let written = trickle.chunk.withUnsafeBytes {
            send(connection.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        if written < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
            close(connection)
            return
        }
        schedule(after: trickle.intervalNanoseconds, from: nil, connection)
    }

    // MARK: Closing

    /// Closes at once: the descriptor itself is closed once Dispatch has let go of it (the last cancel
    /// handler), as Dispatch requires.
    private func close(_ connection: Connection, reset: Bool = false) {
        guard !connection.closed else { return }
        connection.closed = true
        connections[connection.id] = nil
        connection.pendingAction = nil
        connection.inbound = []
        connection.outbound = []
        if let token = connection.inFlight {
            connection.inFlight = nil
            core.finish(token)
        }
        if reset { Socket.setResetOnClose(connection.descriptor) }
        connection.readSource?.cancel()
        connection.readSource = nil
        connection.writeSource?.cancel()
        connection.writeSource = nil
    }

    private func sourceCancelled(_ connection: Connection) {
        dispatchPrecondition(condition: .onQueue(queue))
        connection.liveSources -= 1
        if connection.liveSources == 0, connection.closed {
            Glibc.close(connection.descriptor)
            server?.connectionReleased()
            openDescriptors.leave()
        }
    }

    // MARK: Idle connections

    /// Starts the idle clock for a phase in which the client owes the next step: sending a request, or
    /// taking a reply. The whole request must arrive within the timeout, so a head trickled a byte at a
    /// time cannot hold a connection. One idle deadline per connection is in the heap at most; when it
    /// comes due early (the clock restarted since), it is pushed again for the new time.
    private func startIdleClock(_ connection: Connection) {
        let now = DispatchTime.now().uptimeNanoseconds
        connection.idleSince = now
        guard !connection.idleDeadlinePending else { return }
        connection.idleDeadlinePending = true
        pushDeadline(now &+ idleTimeoutNanoseconds, .idle, connection)
    }

    private func idleDeadlineDue(_ connection: Connection, now: UInt64) {
        connection.idleDeadlinePending = false
        switch connection.phase {
        case .reading, .writing:
            let due = connection.idleSince &+ idleTimeoutNanoseconds
            if now + 100_000 >= due {
                core.recordIdleTimeout()
                close(connection)
            } else {
                connection.idleDeadlinePending = true
                pushDeadline(due, .idle, connection)
            }
        case .waiting, .stalled, .trickling:
            // The server holds the reply back on purpose; the clock starts again with the next phase.
            break
        }
    }

    // MARK: Timers

    /// Arms a reply (or a stall's end) `nanoseconds` from `arrival`, or from now.
    private func schedule(after nanoseconds: UInt64, from arrival: UInt64?, _ connection: Connection) {
        pushDeadline(timers.replyDeadline(after: nanoseconds, from: arrival), .reply, connection)
    }

    private func pushDeadline(_ time: UInt64, _ kind: Deadline.Kind, _ connection: Connection) {
        timers.push(Deadline(time: time, kind: kind, connectionId: connection.id, generation: connection.generation))
    }

    private func fireDueTimers() {
        dispatchPrecondition(condition: .onQueue(queue))
        timers.disarm()
        let now = DispatchTime.now().uptimeNanoseconds
        while let next = timers.popDue(now: now) {
            guard let connection = connections[next.connectionId] else { continue }
            if next.kind == .idle {
                idleDeadlineDue(connection, now: now)
                continue
            }
            guard connection.generation == next.generation else { continue }
            switch connection.phase {
            case .waiting:
                if let action = connection.pendingAction {
                    connection.pendingAction = nil
                    perform(action, on: connection)
                }
            case .stalled:
                close(connection)
            case .trickling:
                trickleMore(connection)
            case .reading, .writing:
                break
            }
        }
        timers.rearm()
    }
}
