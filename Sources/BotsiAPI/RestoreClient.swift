import BotsiBasics
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
            let reason = String(cString: curl_easy_strerror(curlGlobalInitCode))
            throw ClientError(
                "libcurl could not be initialized (curl_global_init: \(reason)); the machine may be out of memory, "
                    + "or libcurl or OpenSSL is broken (reinstall libcurl4).", kind: .localResource)
        }
        var configuration = configuration
        configuration.baseURL = try validateBaseURL(configuration.baseURL)
        try checkConfiguration(configuration)
        let route = try connectionRoute(
            baseURL: configuration.baseURL, setting: configuration.proxy,
            environment: ProcessInfo.processInfo.environment)
        let template = try RequestTemplate(configuration: configuration, route: route)
        // A throwaway handle proves every option is accepted before the run relies on it.
        _ = try Transfer(template: template)

        let descriptors = try DriverDescriptors()
        guard let multi = curl_multi_init() else {
            descriptors.close()
            throw ClientError(
                "libcurl could not create its multi handle; the machine may be out of memory.", kind: .localResource)
        }
        let core = ClientCore(
            wakeupDescriptor: descriptors.wakeup, transferLimit: min(max(configuration.maxConnections, 1), 65_535))
        let driver = MultiDriver(
            core: core, handles: DriverHandles(multi: multi, epoll: descriptors.epoll), template: template,
            onResult: onResult)
        do throws(ClientError) {
            let connections = core.transferLimit
            try checkMulti(
                ccurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections), "the connection limit")
            try checkMulti(
                ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections),
                "the per-host connection limit")
            // Keep every connection we were allowed to open: closing idle ones would cost new TLS handshakes.
            try checkMulti(ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, connections), "the connection cache")
            try checkMulti(ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "multiplexing")
            try driver.installCallbacks()
        } catch {
            // Nothing was added to the handle yet, so cleaning it up cannot fail in a way that matters more
            // than the error being reported.
            let cleaned = curl_multi_cleanup(multi)
            assert(cleaned == CURLM_OK, "curl_multi_cleanup failed on an empty multi handle")
            descriptors.close()
            throw error
        }
        do throws(ClientError) {
            try DriverThread.start(DriverHandOver(driver: driver))
        } catch {
            // Nothing was added to the multi handle: the driver frees it and its descriptors here.
            driver.tearDown()
            throw error
        }
        self.core = core

        Notices.post(Notice(.info, "botsi-restore: sending to \(configuration.baseURL) \(route)"))
        if configuration.insecureSkipTLSVerify {
            Notices.post(
                Notice(
                    .warning,
                    "WARNING: --insecure-skip-tls-verify: the server's certificate is NOT checked, so anyone on the "
                        + "network path can pose as \(configuration.baseURL) and read the API key and every reply. "
                        + "For a private CA, pass its certificate with --cacert FILE instead."))
        }
    }

    deinit {
        shutdown()
    }

    /// Queues a request; never blocks on the network. Ignored after `shutdown()`. Beyond
    /// `maxConnections` in flight, a request waits in the client and starts on the driver's thread
    /// the moment a transfer finishes: a caller that keeps a few more submitted than it has
    /// connections keeps every connection busy between its own turns, and may take them back
    /// before they start (`withdrawQueued`).
    public func submit(_ request: RestoreRequest) {
        core.state.withLock { state in
            guard !state.stopping else { return }
            state.pending.append(request)
            state.inFlight += 1
            // With every connection busy the driver takes the request when a transfer ends; waking
            // it now would cost a wake-up for nothing.
            if state.inFlight <= core.transferLimit { core.wakeDriver(&state) }
        }
    }

    /// Takes back the requests submitted and not started yet (every connection was busy): no result
    /// comes for them. Returns their tags, oldest first.
    public func withdrawQueued() -> [Int64] {
        core.state.withLock { state in
            let tags = state.pending.map(\.tag)
            state.pending.removeAll()
            state.inFlight -= tags.count
            return tags
        }
    }

    /// How many times the driver collected replies at the end of a round: while enough transfers are
    /// in flight it collects them at most once a round, a share of a typical transfer's time capped at
    /// 2 ms (`MultiDriver.roundShareOfTransfer`, `longestRoundNanoseconds`). Under load the client's
    /// wake-ups, and so much of its CPU, follow this count rather than the replies.
    var pacedRounds: Int { core.pacedRounds.load(ordering: .relaxed) }

    /// How many times the driver's wait for its sockets returned, for whatever reason: an idle client
    /// wakes only when something happens (a submission, a curl timer, a socket that reports).
    var wakeUps: Int { core.wakeUps.load(ordering: .relaxed) }

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
/// key, timeouts, CA file, proxy), so that a dry run refuses what the real run would.
public func checkClientConfiguration(_ configuration: ClientConfiguration) throws(ClientError) {
    var configuration = configuration
    configuration.baseURL = try validateBaseURL(configuration.baseURL)
    try checkConfiguration(configuration)
    _ = try connectionRoute(
        baseURL: configuration.baseURL, setting: configuration.proxy, environment: ProcessInfo.processInfo.environment)
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
    /// Submitted and not started, oldest first: the driver takes them while a connection is free.
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
            throw localResourceError("could not create the client's epoll set", errno)
        }
        let wakeup = ccurl_eventfd_create()
        guard wakeup >= 0 else {
            let code = errno
            Glibc.close(epoll)
            throw localResourceError("could not create the client's wake-up eventfd", code)
        }
        guard ccurl_epoll_watch(epoll, wakeup, CURL_POLL_IN, 0) == 0 else {
            let code = errno
            Glibc.close(epoll)
            Glibc.close(wakeup)
            throw localResourceError("could not add the client's eventfd to its epoll set", code)
        }
        self.epoll = epoll
        self.wakeup = wakeup
    }

    func close() {
        Glibc.close(epoll)
        Glibc.close(wakeup)
    }
}

/// The multi handle and the epoll set the driver owns.
struct DriverHandles {
    let multi: UnsafeMutableRawPointer
    let epoll: Int32
}

/// The driver, handed to its thread once.
struct DriverHandOver: @unchecked Sendable {
    // Invariant: `RestoreClient.init` finishes configuring the driver and its multi handle before it
    // starts the driver thread; from then on only that thread touches the driver, and it frees both.
    // Checked at run time: the driver notes its thread in `run` and every transfer's start and end
    // checks it.
    let driver: MultiDriver
}

/// Turns a failed multi-handle option into a thrown error that names it.
func checkMulti(_ code: CURLMcode, _ what: String) throws(ClientError) {
    guard code == CURLM_OK else {
        let reason = String(cString: curl_multi_strerror(code))
        if code == CURLM_OUT_OF_MEMORY {
            throw ClientError(
                "libcurl ran out of memory setting \(what) (\(reason)); free memory and run again.",
                kind: .localResource)
        }
        throw ClientError("libcurl refused \(what) (\(reason)); check the client settings.")
    }
}

final class ClientCore: Sendable {
    let state = Mutex(ClientState())
    let driverFinished = DispatchSemaphore(value: 0)
    /// Rounds in which the driver collected replies after pausing (many transfers in flight).
    let pacedRounds = Atomic<Int>(0)
    /// Every return of the driver's wait for sockets, idle ones included.
    let wakeUps = Atomic<Int>(0)
    /// An eventfd in the driver's epoll set. Other threads only write to it, under the state lock
    /// while `wakeupClosed` is false; the driver sets that flag under the lock before closing it.
    let wakeupDescriptor: Int32
    /// Transfers in curl at once: the connection cap. Submissions beyond it wait in `ClientState.pending`.
    let transferLimit: Int

    init(wakeupDescriptor: Int32, transferLimit: Int) {
        self.wakeupDescriptor = wakeupDescriptor
        self.transferLimit = transferLimit
    }

    /// Call with the lock held. One wakeup per batch is enough: the driver looks at the whole queue.
    func wakeDriver(_ state: inout ClientState) {
        guard !state.wakeupSent, !state.wakeupClosed else { return }
        state.wakeupSent = true
        ccurl_eventfd_signal(wakeupDescriptor)
    }
}
