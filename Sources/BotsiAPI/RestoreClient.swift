internal import CCurl
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Sends restore requests through one libcurl multi handle driven by one thread, so hundreds of
/// requests can be in flight without a thread each.
///
/// `submit` queues a request and wakes the driver; the driver adds it to the multi handle, waits in
/// `curl_multi_poll`, and calls `onResult` for each finished request, in completion order. Keep the
/// handler short: while it runs, no other transfer makes progress.
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

        guard let multi = curl_multi_init() else {
            throw ClientError("libcurl could not create its multi handle; the machine may be out of memory.")
        }
        let connections = min(max(configuration.maxConnections, 1), 65_535)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections)
        // Keep every connection we were allowed to open: closing idle ones would cost new TLS handshakes.
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, connections)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)

        let core = ClientCore(multi: MultiHandleReference(pointer: multi))
        self.core = core
        let thread = Thread {
            MultiDriver(core: core, template: template, onResult: onResult).run()
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
    var multiClosed = false
    var driverThread: pthread_t?
}

/// The multi handle, as other threads may see it: only to wake the driver.
struct MultiHandleReference: @unchecked Sendable {
    // Invariant: threads other than the driver only call curl_multi_wakeup on this pointer (documented
    // thread-safe), and only under the state lock while `multiClosed` is false; the driver sets
    // `multiClosed` under that lock before curl_multi_cleanup, and does everything else itself.
    let pointer: UnsafeMutableRawPointer
}

final class ClientCore: Sendable {
    let state = Mutex(ClientState())
    let multi: MultiHandleReference
    let driverFinished = DispatchSemaphore(value: 0)

    init(multi: MultiHandleReference) {
        self.multi = multi
    }

    /// Call with the lock held. One wakeup per batch is enough: the driver takes the whole queue.
    func wakeDriver(_ state: inout ClientState) {
        guard !state.wakeupSent, !state.multiClosed else { return }
        state.wakeupSent = true
        _ = curl_multi_wakeup(multi.pointer)
    }
}

/// Owns the multi handle and every easy handle; runs on the driver thread only.
final class MultiDriver {
    private let core: ClientCore
    private let multi: UnsafeMutableRawPointer
    private let template: RequestTemplate
    private let onResult: @Sendable (RestoreResult) -> Void
    private var active: [ObjectIdentifier: Transfer] = [:]
    private var idle: [Transfer] = []
    private let idleLimit: Int

    init(core: ClientCore, template: RequestTemplate, onResult: @escaping @Sendable (RestoreResult) -> Void) {
        self.core = core
        self.multi = core.multi.pointer
        self.template = template
        self.onResult = onResult
        idleLimit = max(template.configuration.maxConnections * 2, 64)
    }

    func run() {
        core.state.withLock { $0.driverThread = pthread_self() }
        var running: Int32 = 0
        while true {
            let (batch, stopping) = core.state.withLock { state in
                var batch: [RestoreRequest] = []
                swap(&batch, &state.pending)
                state.wakeupSent = false
                return (batch, state.stopping)
            }
            if stopping { break }
            for request in batch { start(request) }
            _ = curl_multi_perform(multi, &running)
            collectFinishedTransfers()
            // Sleeps until a socket is ready, curl's next timeout, a wakeup from submit/shutdown, or 1 s.
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        tearDown()
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
            state.multiClosed = true
            state.pending.removeAll()
            state.inFlight = 0
        }
        _ = curl_multi_cleanup(multi)
        core.driverFinished.signal()
    }
}
