import Dispatch
import Glibc

/// One event loop of the server: a share of the connections, all driven by Dispatch sources that target
/// one serial queue.
///
/// Why Dispatch sources on serial queues (and not an epoll loop of our own): Glibc's Swift module does
/// not export epoll, and the package gives this target no C shim. Dispatch already multiplexes with epoll
/// underneath, and a serial queue makes its loop the single owner of its connections, so connection
/// state needs no locks and the shared mutex is taken only to decide a request. Delays use one timer
/// source over a min-heap of deadlines instead of a timer per reply, so 256 connections at 50 ms cost a
/// heap push and pop per request, not a kernel timer each.
final class ServerLoop: @unchecked Sendable {
    // Invariant for @unchecked Sendable: every `var` below is read and written only on `queue`. Source
    // handlers and the timer all target `queue`; the server reaches the loop only through `queue`.
    let queue: DispatchQueue
    private let core: SimulatorCore
    private let openDescriptors: DispatchGroup
    /// Told when a connection's descriptor is closed (weak: the server owns its loops).
    private weak var server: Server?
    private var connections: [UInt64: Connection] = [:]
    private var nextConnectionId: UInt64 = 1
    private var timers = DeadlineHeap()
    private var timerSource: DispatchSourceTimer?
    private var armedDeadline: UInt64 = .max
    private var timerLateness: UInt64 = 0
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
        self.server = server
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [self] in fireDueTimers() }
        // Fires once, soon, for nothing: Dispatch opens its timer descriptor the first time it arms a timer
        // for the future, and at the descriptor limit that fails silently: the accept back-off's timer
        // would then never fire.
        timer.schedule(deadline: .now() + .milliseconds(100), leeway: .nanoseconds(0))
        timerSource = timer
        timer.resume()
    }

    /// Runs on `queue`: closes every connection (stalled ones included) and the timer.
    func shutdown() {
        guard !stopped else { return }
        stopped = true
        for connection in Array(connections.values) { close(connection) }
        timerSource?.cancel()
        timerSource = nil
        timers = DeadlineHeap()
    }

    /// Runs on `queue`: takes over an accepted socket, for which the server already entered the group.
    func adopt(_ descriptor: Int32) {
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
        guard !connection.closed else { return }
        while true {
            var arrival: UInt64?
            let count =
                timesArrivals
                ? receiveTimed(connection.descriptor, arrival: &arrival)
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

    /// `recvmsg` with the kernel's receive timestamp, converted to the uptime clock the timers use.
    private func receiveTimed(_ descriptor: Int32, arrival: inout UInt64?) -> Int {
        var vector = iovec(iov_base: scratch.baseAddress, iov_len: scratch.count)
        var message = msghdr()
        let count = withUnsafeMutablePointer(to: &vector) { vectorPointer in
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control.baseAddress
            message.msg_controllen = control.count
            return recvmsg(descriptor, &message, 0)
        }
        guard count > 0, message.msg_controllen >= MemoryLayout<cmsghdr>.size + MemoryLayout<timespec>.size else {
            return count
        }
        let header = control.load(as: cmsghdr.self)
        guard header.cmsg_level == SOL_SOCKET, header.cmsg_type == SO_TIMESTAMPNS_OLD else { return count }
        // CMSG_DATA: the payload follows the header, which is already 8-byte aligned on 64-bit Linux.
        let stamp = control.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: timespec.self)
        var wallNow = timespec()
        clock_gettime(CLOCK_REALTIME, &wallNow)
        let age =
            (Int64(wallNow.tv_sec) - Int64(stamp.tv_sec)) * 1_000_000_000
            + (Int64(wallNow.tv_nsec) - Int64(stamp.tv_nsec))
        let uptimeNow = DispatchTime.now().uptimeNanoseconds
        // A stepped wall clock could make the age absurd; trust it only within a second.
        if age >= 0, age < 1_000_000_000, UInt64(age) < uptimeNow { arrival = uptimeNow - UInt64(age) }
        return count
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
        let plan: ReplyPlan
        switch (head.route, head.method) {
        case (.restore, .post):
            plan = core.planRestore(authorization: head.authorization, body: body, keepAlive: head.keepAlive)
        case (.stats, .get):
            let reply = core.statsReply(
                keepAlive: head.keepAlive, listingPairs: head.listsPairs, authorization: head.authorization)
            plan = ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive))
        case (.restore, _), (.stats, _):
            let body = Responses.errorBody("Method \(head.methodName) is not allowed here", code: "method_not_allowed")
            let allow: StaticString = head.route.isRestore ? "Allow: POST\r\n" : "Allow: GET\r\n"
            let reply = Responses.make(status: 405, body: body, keepAlive: head.keepAlive, extraHeader: allow)
            plan = ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive), delayNanoseconds: core.drawDelay())
        case (.other(let path), _):
            let body = Responses.errorBody("No route for \(head.methodName) \(path)", code: "not_found")
            let reply = Responses.make(status: 404, body: body, keepAlive: head.keepAlive)
            plan = ReplyPlan(action: .send(reply, closeAfter: !head.keepAlive), delayNanoseconds: core.drawDelay())
        }
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

    /// Arms a reply (or a stall's end) `nanoseconds` from now. The timer source wakes a little late (the
    /// wake-up travels through Dispatch's event thread to this queue), so the deadline is brought forward by
    /// the lateness measured so far, capped at a tenth of the delay: replies then leave on average after
    /// the configured latency rather than a millisecond after it, which 256 connections at 50 ms notice.
    private func schedule(after nanoseconds: UInt64, from arrival: UInt64?, _ connection: Connection) {
        let now = DispatchTime.now().uptimeNanoseconds
        let start = min(arrival ?? now, now)
        let compensation = min(timerLateness, nanoseconds / 10)
        pushDeadline(max(start &+ nanoseconds &- compensation, now), .reply, connection)
    }

    private func pushDeadline(_ time: UInt64, _ kind: Deadline.Kind, _ connection: Connection) {
        timers.push(Deadline(time: time, kind: kind, connectionId: connection.id, generation: connection.generation))
        if time < armedDeadline { arm(time) }
    }

    private func arm(_ deadline: UInt64) {
        armedDeadline = deadline
        timerSource?.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .nanoseconds(0))
    }

    private func fireDueTimers() {
        armedDeadline = .max
        let now = DispatchTime.now().uptimeNanoseconds
        while let next = timers.peek(), next.time <= now + 100_000 {
            timers.pop()
            // Moving average of how late timers fire (1/16 weight for the newest sample).
            let lateness = now > next.time ? now - next.time : 0
            timerLateness = timerLateness - timerLateness / 16 + min(lateness, 5_000_000) / 16
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
        if let next = timers.peek() { arm(next.time) }
    }
}
