internal import CCurl
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Sends restore requests through one libcurl multi handle driven by one thread, so hundreds of
/// requests can be in flight without a thread each.
///
/// `submit` queues a request and wakes the driver; the driver adds it to the multi handle, waits in
/// `epoll_wait` on the sockets curl asked it to watch, and calls `onResult` for each finished
/// request, in completion order. Keep the handler short: while it runs, no other transfer makes
/// progress.
public final class RestoreClient: Sendable {
    private let core: ClientCore

    /// Starts the driver thread. Throws when the configuration cannot work (bad base URL, empty key,
    /// unreadable CA file) or libcurl cannot be set up.
    public init(configuration: ClientConfiguration, onResult: @escaping @Sendable (RestoreResult) -> Void)
        throws(ClientError)
    {
        guard curlGlobalInitCode == CURLE_OK else {
            throw ClientError("libcurl could not be initialized (curl_global_init failed); reinstall libcurl4.")
        }
        var configuration = configuration
        configuration.baseURL = try validateBaseURL(configuration.baseURL)
        try checkConfiguration(configuration)
        let template = try RequestTemplate(configuration: configuration)
        // A throwaway handle proves every option is accepted before the run relies on it.
        _ = try Transfer(template: template)

        let descriptors = try DriverDescriptors()
        guard let multi = curl_multi_init() else {
            descriptors.close()
            throw ClientError("libcurl could not create its multi handle; the machine may be out of memory.")
        }
        let connections = min(max(configuration.maxConnections, 1), 65_535)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections)
        // Keep every connection we were allowed to open: closing idle ones would cost new TLS handshakes.
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, connections)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)

        let core = ClientCore(wakeupDescriptor: descriptors.wakeup)
        self.core = core
        let handles = DriverHandles(multi: multi, epoll: descriptors.epoll)
        let thread = Thread {
            MultiDriver(core: core, handles: handles, template: template, onResult: onResult).run()
        }
        thread.name = "botsi-restore-curl"
        thread.start()
    }

    deinit {
        shutdown()
    }

    /// Queues a request; never blocks on the network. Ignored after `shutdown()`.
    public func submit(_ request: RestoreRequest) {
        core.state.withLock { state in
            guard !state.stopping else { return }
            state.pending.append(request)
            state.inFlight += 1
            core.wakeDriver(&state)
        }
    }

    /// Requests submitted whose result has not been delivered yet.
    public var inFlight: Int {
        core.state.withLock { $0.inFlight }
    }

    /// Cancels whatever is in flight (no results are delivered for it), stops the driver and frees
    /// every curl handle. Idempotent; returns once the driver is gone, except when called from
    /// `onResult`, where it only tells the driver to stop after the handler returns.
    public func shutdown() {
        let onDriverThread = core.state.withLock { state in
            state.stopping = true
            core.wakeDriver(&state)
            return state.driverThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        guard !onDriverThread else { return }
        core.driverFinished.wait()
        core.driverFinished.signal()  // let any other caller of shutdown() through as well
    }
}

/// Every check `RestoreClient.init` makes on a configuration before it starts anything (base URL,
/// key, timeouts, CA file), so that a dry run refuses what the real run would.
public func checkClientConfiguration(_ configuration: ClientConfiguration) throws(ClientError) {
    var configuration = configuration
    configuration.baseURL = try validateBaseURL(configuration.baseURL)
    try checkConfiguration(configuration)
}

private func checkConfiguration(_ configuration: ClientConfiguration) throws(ClientError) {
    let key = configuration.apiKey
    guard !key.isEmpty else {
        throw ClientError("The API key is empty; set the environment variable that holds it.")
    }
    guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
        throw ClientError("The API key contains a line break or control character; set it again without one.")
    }
    guard !configuration.userAgent.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
        throw ClientError("The user agent contains a control character.")
    }
    guard configuration.requestTimeout.isFinite, configuration.requestTimeout > 0 else {
        throw ClientError("The request timeout must be a positive number of seconds.")
    }
    guard configuration.connectTimeout.isFinite, configuration.connectTimeout > 0 else {
        throw ClientError("The connect timeout must be a positive number of seconds.")
    }
    guard configuration.maxConnections >= 1 else {
        throw ClientError("The connection limit must be at least 1.")
    }
    guard configuration.maxResponseBytes >= 1 else {
        throw ClientError("The response size limit must be at least 1 byte.")
    }
    if let path = configuration.caCertificatePath, !FileManager.default.isReadableFile(atPath: path) {
        throw ClientError("The CA certificate file \(path) cannot be read; check the path given to --cacert.")
    }
}

/// What submitters and the driver share, always under `state`'s lock.
struct ClientState {
    var pending: [RestoreRequest] = []
    var inFlight = 0
    var stopping = false
    var wakeupSent = false
    var wakeupClosed = false
    var driverThread: pthread_t?
}

/// The epoll set the driver waits on and the eventfd that interrupts the wait.
private struct DriverDescriptors {
    let epoll: Int32
    let wakeup: Int32

    init() throws(ClientError) {
        let epoll = ccurl_epoll_create()
        guard epoll >= 0 else {
            throw ClientError("Could not create an epoll set (\(String(cString: strerror(errno)))).")
        }
        let wakeup = ccurl_eventfd_create()
        guard wakeup >= 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(epoll)
            throw ClientError("Could not create an eventfd (\(reason)).")
        }
        guard ccurl_epoll_watch(epoll, wakeup, CURL_POLL_IN, 0) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(epoll)
            Glibc.close(wakeup)
            throw ClientError("Could not watch the eventfd (\(reason)).")
        }
        self.epoll = epoll
        self.wakeup = wakeup
    }

    func close() {
        Glibc.close(epoll)
        Glibc.close(wakeup)
    }
}

/// What the driver thread alone owns, handed over once when it starts.
struct DriverHandles: @unchecked Sendable {
    // Invariant: `init` finishes configuring the multi handle before it starts the driver thread;
    // from then on only that thread touches `multi` or `epoll`, and it frees both.
    let multi: UnsafeMutableRawPointer
    let epoll: Int32
}

final class ClientCore: Sendable {
    let state = Mutex(ClientState())
    let driverFinished = DispatchSemaphore(value: 0)
    /// An eventfd in the driver's epoll set. Other threads only write to it, under the state lock
    /// while `wakeupClosed` is false; the driver sets that flag under the lock before closing it.
    let wakeupDescriptor: Int32

    init(wakeupDescriptor: Int32) {
        self.wakeupDescriptor = wakeupDescriptor
    }

    /// Call with the lock held. One wakeup per batch is enough: the driver takes the whole queue.
    func wakeDriver(_ state: inout ClientState) {
        guard !state.wakeupSent, !state.wakeupClosed else { return }
        state.wakeupSent = true
        ccurl_eventfd_signal(wakeupDescriptor)
    }
}

/// Owns the multi handle and every easy handle; runs on the driver thread only.
///
/// curl tells the driver which sockets to watch (socket callback) and when it next needs the clock
/// (timer callback); the driver waits on exactly those sockets with epoll and hands each ready one
/// to `curl_multi_socket_action`, so a wakeup costs work for the sockets that are ready rather than
/// for every open connection.
final class MultiDriver {
    private let core: ClientCore
    private let multi: UnsafeMutableRawPointer
    private let epoll: Int32
    private let template: RequestTemplate
    private let onResult: @Sendable (RestoreResult) -> Void
    private var active: [ObjectIdentifier: Transfer] = [:]
    private var idle: [Transfer] = []
    private let idleLimit: Int
    /// When curl wants `CURL_SOCKET_TIMEOUT`, in `DispatchTime` nanoseconds; nil when it has no timer.
    private var timerDeadline: UInt64?
    /// The longest wait without a curl timer: a safety net, since submit and shutdown wake the loop.
    private static let idleWaitMilliseconds: Int32 = 1000
    private static let readyCapacity = 256

    init(
        core: ClientCore, handles: DriverHandles, template: RequestTemplate,
        onResult: @escaping @Sendable (RestoreResult) -> Void
    ) {
        self.core = core
        self.multi = handles.multi
        self.epoll = handles.epoll
        self.template = template
        self.onResult = onResult
        idleLimit = max(template.configuration.maxConnections * 2, 64)
    }

    func run() {
        core.state.withLock { $0.driverThread = pthread_self() }
        // Unretained is enough: `run` keeps the driver alive until tearDown has freed the multi handle.
        let userData = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, userData)
        _ = ccurl_multi_setopt_socket_callback(multi) { _, socket, what, userData, socketData in
            guard let userData else { return -1 }
            let driver = Unmanaged<MultiDriver>.fromOpaque(userData).takeUnretainedValue()
            return driver.watch(socket, what: what, known: socketData != nil)
        }
        _ = ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, userData)
        _ = ccurl_multi_setopt_timer_callback(multi) { _, milliseconds, userData in
            guard let userData else { return -1 }
            Unmanaged<MultiDriver>.fromOpaque(userData).takeUnretainedValue().setTimer(milliseconds)
            return 0
        }

        var readyDescriptors = [Int32](repeating: 0, count: Self.readyCapacity)
        var readyFlags = [Int32](repeating: 0, count: Self.readyCapacity)
        while true {
            let (batch, stopping) = core.state.withLock { state in
                var batch: [RestoreRequest] = []
                swap(&batch, &state.pending)
                state.wakeupSent = false
                return (batch, state.stopping)
            }
            if stopping { break }
            for request in batch { start(request) }

            let readyCount = Int(
                ccurl_epoll_wait(
                    epoll, &readyDescriptors, &readyFlags, Int32(Self.readyCapacity), waitMilliseconds())
            )
            for index in 0..<max(readyCount, 0) {
                let descriptor = readyDescriptors[index]
                if descriptor == core.wakeupDescriptor {
                    ccurl_eventfd_drain(descriptor)
                } else {
                    act(on: descriptor, flags: readyFlags[index])
                }
            }
            if let deadline = timerDeadline, deadline <= DispatchTime.now().uptimeNanoseconds {
                fireTimer()
            }
            collectFinishedTransfers()
        }
        tearDown()
    }

    /// The socket callback: keeps the epoll set in step with what curl wants from `socket`.
    private func watch(_ socket: Int32, what: Int32, known: Bool) -> Int32 {
        if what == CURL_POLL_REMOVE {
            ccurl_epoll_unwatch(epoll, socket)
            return 0
        }
        guard ccurl_epoll_watch(epoll, socket, what, known ? 1 : 0) == 0 else { return -1 }
        if !known {
            // Any non-nil value marks the socket as in the set; curl forgets it when the socket goes.
            _ = curl_multi_assign(multi, socket, UnsafeMutableRawPointer(bitPattern: 1))
        }
        return 0
    }

    /// The timer callback: -1 removes the timer, anything else is milliseconds from now.
    private func setTimer(_ milliseconds: Int) {
        guard milliseconds >= 0 else {
            timerDeadline = nil
            return
        }
        timerDeadline = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    }

    private func waitMilliseconds() -> Int32 {
        guard let deadline = timerDeadline else { return Self.idleWaitMilliseconds }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return 0 }
        // Rounded up: waking before curl's deadline would find nothing due.
        let milliseconds = (deadline - now + 999_999) / 1_000_000
        return Int32(min(milliseconds, UInt64(Self.idleWaitMilliseconds)))
    }

    private func act(on socket: Int32, flags: Int32) {
        var running: Int32 = 0
        _ = curl_multi_socket_action(multi, socket, flags, &running)
    }

    private func fireTimer() {
        timerDeadline = nil
        var running: Int32 = 0
        _ = curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
        guard timerDeadline == nil else { return }
        // curl only calls the timer callback when its next deadline changes; if this wake-up came a
        // hair early, nothing expired and the old deadline still stands, so ask for it.
        var milliseconds = -1
        if curl_multi_timeout(multi, &milliseconds) == CURLM_OK { setTimer(milliseconds) }
    }

    private func start(_ request: RestoreRequest) {
        let transfer: Transfer
        if let reused = idle.popLast() {
            transfer = reused
        } else {
            do throws(ClientError) {
                transfer = try Transfer(template: template)
            } catch {
                deliver(failure(request, message: error.message))
                return
            }
        }
        guard transfer.prepare(request) else {
            deliver(failure(request, message: "libcurl refused the request body."))
            return
        }
        guard curl_multi_add_handle(multi, transfer.easy) == CURLM_OK else {
            deliver(failure(request, message: "libcurl could not start the request."))
            return
        }
        active[ObjectIdentifier(transfer)] = transfer
    }
    private func failure(_ request: RestoreRequest, message: String) -> RestoreResult {
        RestoreResult(
            tag: request.tag,
            reply: .retryable(code: "connection_error", httpStatus: nil, retryAfter: nil, message: message),
            httpStatus: nil, startedAt: Date(), duration: 0)
    }

    private func collectFinishedTransfers() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            // Read everything from the message before remove_handle invalidates it.
            let code = message.pointee.data.result
            var owner: UnsafeMutableRawPointer?
            _ = ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &owner)
            _ = curl_multi_remove_handle(multi, easy)
            guard let owner else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(owner).takeUnretainedValue()
            let result = transfer.finish(code: code, now: Date())
            active[ObjectIdentifier(transfer)] = nil
            if idle.count < idleLimit { idle.append(transfer) }
            deliver(result)
        }
    }

    private func deliver(_ result: RestoreResult) {
        let delivering = core.state.withLock { state in
            guard !state.stopping else { return false }
            state.inFlight -= 1
            return true
        }
        guard delivering else { return }
        onResult(redacted(result))
    }

    /// Server text and curl's error buffer should never hold the key, but a message must not be
    /// the one place it leaks if they ever do.
    private func redacted(_ result: RestoreResult) -> RestoreResult {
        let key = template.configuration.apiKey
        guard key.count >= 4, result.reply.message?.contains(key) == true else { return result }
        return RestoreResult(
            tag: result.tag,
            reply: result.reply.mappingMessages { $0.replacingOccurrences(of: key, with: "[redacted]") },
            httpStatus: result.httpStatus, startedAt: result.startedAt, duration: result.duration)
    }

    private func tearDown() {
        // Easy handles leave the multi handle before they are cleaned up, and the multi handle goes last.
        for transfer in active.values { _ = curl_multi_remove_handle(multi, transfer.easy) }
        active.removeAll()
        idle.removeAll()
        core.state.withLock { state in
            state.wakeupClosed = true
            state.pending.removeAll()
            state.inFlight = 0
        }
        // Cleanup may still report sockets to remove, so the epoll set outlives the multi handle.
        _ = curl_multi_cleanup(multi)
        Glibc.close(epoll)
        Glibc.close(core.wakeupDescriptor)
        core.driverFinished.signal()
    }
}
