import BotsiBasics
internal import CCurl
import Dispatch
import Foundation
import Glibc

/// Owns the multi handle and every easy handle; runs on the driver thread only.
///
/// curl tells the driver which sockets to watch (socket callback) and when it next needs the clock
/// (timer callback); the driver waits on those sockets with epoll (idle connections stay in the set,
/// parked: `WatchedSockets`) and hands each ready one to `curl_multi_socket_action`, so a wakeup
/// costs work for the sockets that are ready rather than for every open connection.
final class MultiDriver {
    private let core: ClientCore
    private let multi: UnsafeMutableRawPointer
    private let epoll: Int32
    private let template: RequestTemplate
    private let onResult: @Sendable (RestoreResult) -> Void
    private var active = ActiveTransfers()
    private var watched = WatchedSockets()
    private var idle: [Transfer] = []
    private let idleLimit: Int
    /// When curl wants `CURL_SOCKET_TIMEOUT`, in `DispatchTime` nanoseconds; nil when it has no timer.
    private var timerDeadline: UInt64?
    private let redactor: KeyRedactor
    private var retryAfterCapNoticeGiven = false
    /// The thread `run` runs on: the only one that may touch the driver once it started
    /// (`DriverHandOver`'s invariant, checked where transfers start and finish).
    private var thread: pthread_t?
    /// The longest wait without a curl timer: a safety net, since submit and shutdown wake the loop.
    private static let idleWaitMilliseconds: Int32 = 1000
    private static let readyCapacity = 256
    /// Under load, replies are collected at most once a round (see `pauseUntil`), a round
    /// being this share of a typical transfer's time: a reply waits half a round on average, so the
    /// throughput lost stays near 2% whatever the server's latency (measured at 50 ms: a 2 ms round
    /// cost about 3% of the requests/s and saved about a fifth of the client's CPU per request).
    static let roundShareOfTransfer = 0.04
    /// The longest round, whatever the latency: what a slow server's reply may wait to be collected.
    static let longestRoundNanoseconds: UInt64 = 2_000_000
    /// How fast the typical transfer time follows new ones (an exponential average's weight).
    private static let transferTimeWeight = 1.0 / 16
    /// The typical transfer time in seconds (an exponential average of finished ones), nil before the first.
    private var typicalTransferSeconds: Double?
    /// Below this many transfers in flight, replies are collected as they come: too few arrive in a
    /// round to be worth a wait.
    static let pauseFromInFlight = 16

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
        redactor = KeyRedactor(key: template.configuration.apiKey)
    }

    /// Points curl's socket and timer callbacks at this driver; called once, before `run`.
    func installCallbacks() throws(ClientError) {
        // Unretained is enough: the client keeps the driver until its thread starts, and `run` keeps it
        // alive until tearDown has freed the multi handle.
        let userData = Unmanaged.passUnretained(self).toOpaque()
        try checkMulti(ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, userData), "the socket callback data")
        try checkMulti(
            ccurl_multi_setopt_socket_callback(multi) { _, socket, what, userData, _ in
                guard let userData else { return -1 }
                let driver = Unmanaged<MultiDriver>.fromOpaque(userData).takeUnretainedValue()
                return driver.watch(socket, what: what)
            }, "the socket callback")
        try checkMulti(ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, userData), "the timer callback data")
        try checkMulti(
            ccurl_multi_setopt_timer_callback(multi) { _, milliseconds, userData in
                guard let userData else { return -1 }
                Unmanaged<MultiDriver>.fromOpaque(userData).takeUnretainedValue().setTimer(milliseconds)
                return 0
            }, "the timer callback")
    }

    func run() {
        thread = pthread_self()
        core.state.withLock { $0.driverThread = pthread_self() }

        var readyDescriptors = [Int32](repeating: 0, count: Self.readyCapacity)
        var readyFlags = [Int32](repeating: 0, count: Self.readyCapacity)
        var roundStarted: UInt64 = 0
        while startSubmitted() {
            let round = active.count >= Self.pauseFromInFlight ? roundNanoseconds : 0
            if round > 0 {
                guard pauseUntil(roundStarted + round) else { break }
            }
            let readyCount = Int(
                ccurl_epoll_wait(
                    epoll, &readyDescriptors, &readyFlags, Int32(Self.readyCapacity), waitMilliseconds())
            )
            roundStarted = DispatchTime.now().uptimeNanoseconds
            core.wakeUps.add(1, ordering: .relaxed)
            if round > 0 { core.pacedRounds.add(1, ordering: .relaxed) }
            for index in 0..<max(readyCount, 0) {
                let descriptor = readyDescriptors[index]
                if descriptor == core.wakeupDescriptor {
                    ccurl_eventfd_drain(descriptor)
                } else {
                    act(on: descriptor, flags: readyFlags[index])
                }
            }
            fireTimerIfDue()
            collectFinishedTransfers()
        }
        tearDown()
    }

    /// Starts the requests submitted since the last look, oldest first, while a connection is
    /// free; the rest stay queued and start at the next look after transfers finish, in the same
    /// round (curl sends them on its next timer), where a request submitted only then would wait
    /// for the run's thread. No more than `core.transferLimit` (the connection cap) are in curl at
    /// once, so a request never waits there behind another one; what waits stays in the client's
    /// state, where `RestoreClient.withdrawQueued` can still take it back. False once the client is
    /// stopping.
    private func startSubmitted() -> Bool {
        let free = core.transferLimit - active.count
        let (batch, stopping) = core.state.withLock { state in
            state.wakeupSent = false
            guard !state.stopping else { return ([RestoreRequest](), true) }
            guard free < state.pending.count else {
                var batch: [RestoreRequest] = []
                swap(&batch, &state.pending)
                return (batch, false)
            }
            let batch = Array(state.pending.prefix(max(free, 0)))
            state.pending.removeFirst(batch.count)
            return (batch, false)
        }
        if stopping { return false }
        for request in batch { start(request) }
        return true
    }

    /// The round's length now: nothing before a transfer finished, then a share of their typical time.
    private var roundNanoseconds: UInt64 {
        guard let typical = typicalTransferSeconds else { return 0 }
        return min(Self.longestRoundNanoseconds, UInt64(typical * Self.roundShareOfTransfer * 1e9))
    }

    private func noteTransferTime(_ seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        guard let typical = typicalTransferSeconds else {
            typicalTransferSeconds = seconds
            return
        }
        typicalTransferSeconds = typical + (seconds - typical) * Self.transferTimeWeight
    }

    /// Replies are collected at most once a round while many transfers are in flight: each
    /// collection wakes this thread and hands a batch to the run's thread, and under load those
    /// wake-ups (the scheduler's work and the run's per-batch steps) cost more than the replies they
    /// carried. New requests are not held back meanwhile: a submission ends the wait and goes out at
    /// once. False once the client is stopping.
    private func pauseUntil(_ due: UInt64) -> Bool {
        while true {
            // curl's timers still fire on time: they start the requests just added, among others.
            fireTimerIfDue()
            collectFinishedTransfers()
            let now = DispatchTime.now().uptimeNanoseconds
            guard due > now else { return true }
            var wait = due - now
            if let deadline = timerDeadline { wait = deadline > now ? min(wait, deadline - now) : 0 }
            guard ccurl_wait_readable(core.wakeupDescriptor, Int64(wait)) > 0 else { continue }
            ccurl_eventfd_drain(core.wakeupDescriptor)
            guard startSubmitted() else { return false }
        }
    }

    /// The socket callback: keeps the epoll set in step with what curl wants from `socket`.
    private func watch(_ socket: Int32, what: Int32) -> Int32 {
        let change = what == CURL_POLL_REMOVE ? watched.release(socket) : watched.want(socket, for: what)
        switch change {
        case .none:
            return 0
        case .remove:
            ccurl_epoll_unwatch(epoll, socket)
            return 0
        case .add, .modify:
            // ccurl_epoll_watch corrects an ADD to a MOD and back if the set disagrees with the table.
            return ccurl_epoll_watch(epoll, socket, what, change == .modify ? 1 : 0) == 0 ? 0 : -1
        }
    }

    /// curl's close callback, for every socket it opened: the socket leaves the table, then closes.
    fileprivate func close(_ socket: Int32) -> Int32 {
        watched.closed(socket)
        return Glibc.close(socket) == 0 ? 0 : 1
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
        if watched.takeParked(socket) {
            ccurl_epoll_unwatch(epoll, socket)
            return
        }
        var running: Int32 = 0
        checkAction(curl_multi_socket_action(multi, socket, flags, &running))
    }

    private func fireTimerIfDue() {
        if let deadline = timerDeadline, deadline <= DispatchTime.now().uptimeNanoseconds { fireTimer() }
    }

    private func fireTimer() {
        timerDeadline = nil
        var running: Int32 = 0
        checkAction(curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running))
        guard timerDeadline == nil else { return }
        // curl only calls the timer callback when its next deadline changes; if this wake-up came a
        // hair early, nothing expired and the old deadline still stands, so ask for it.
        var milliseconds = -1
        if curl_multi_timeout(multi, &milliseconds) == CURLM_OK { setTimer(milliseconds) }
    }

    /// `BAD_SOCKET` is a socket curl closed while handling an earlier one of the same epoll batch: its
    /// readiness is stale, not a fault. Any other failure leaves the multi handle's state unknown, so
    /// every transfer in it is ended as a retryable connection error rather than left waiting.
    private func checkAction(_ code: CURLMcode) {
        guard code != CURLM_OK, code != CURLM_BAD_SOCKET else { return }
        let reason = String(cString: curl_multi_strerror(code))
        for transfer in active.all {
            let removed = curl_multi_remove_handle(multi, transfer.easy)
            var result = transfer.finish(code: CURLE_SEND_ERROR, now: Date())
            result = RestoreResult(
                tag: result.tag,
                reply: .retryable(
                    code: "connection_error", httpStatus: nil, retryAfter: nil,
                    message: "libcurl failed to drive the transfers (\(reason)); the request is retried."),
                httpStatus: nil, startedAt: result.startedAt, duration: result.duration)
            if removed == CURLM_OK && idle.count < idleLimit { idle.append(transfer) }
            deliver(result)
        }
        active.removeAll()
    }

    private func start(_ request: RestoreRequest) {
        checkOnDriverThread()
        let transfer: Transfer
        if let reused = idle.popLast() {
            transfer = reused
        } else {
            do throws(ClientError) {
                transfer = try Transfer(template: template)
                try closeSocketsThroughDriver(transfer)
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
        active.insert(transfer)
    }
    /// A connection keeps the close callback of the transfer that opened it; every transfer gets it.
    private func closeSocketsThroughDriver(_ transfer: Transfer) throws(ClientError) {
        let userData = Unmanaged.passUnretained(self).toOpaque()
        let code = ccurl_easy_close_sockets_with(transfer.easy, userData) { userData, socket in
            guard let userData else { return Glibc.close(socket) == 0 ? 0 : 1 }
            return Unmanaged<MultiDriver>.fromOpaque(userData).takeUnretainedValue().close(socket)
        }
        guard code == CURLE_OK else {
            throw ClientError(
                "libcurl refused the socket close callback (\(String(cString: curl_easy_strerror(code)))).")
        }
    }

    private func failure(_ request: RestoreRequest, message: String) -> RestoreResult {
        RestoreResult(
            tag: request.tag,
            reply: .retryable(code: "connection_error", httpStatus: nil, retryAfter: nil, message: message),
            httpStatus: nil, startedAt: Date(), duration: 0)
    }

    private func collectFinishedTransfers() {
        checkOnDriverThread()
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            // Read everything from the message before remove_handle invalidates it.
            let code = message.pointee.data.result
            let transfer = active.remove(UnsafeMutableRawPointer(easy))
            let removed = curl_multi_remove_handle(multi, easy)
            let result = transfer.finish(code: code, now: Date())
            noteTransferTime(result.duration)
            // A handle curl would not let go of is not reused; dropping it frees it.
            if removed == CURLM_OK && idle.count < idleLimit { idle.append(transfer) }
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

    /// Server text and curl's error buffer should never hold the key, but a journal or a terminal
    /// must not be the place it leaks if they ever do, truncated or upper-cased included.
    private func redacted(_ result: RestoreResult) -> RestoreResult {
        noticeLongRetryAfter(result.reply)
        return RestoreResult(
            tag: result.tag, reply: redactor.scrub(result.reply), httpStatus: result.httpStatus,
            startedAt: result.startedAt, duration: result.duration, rateLimit: result.rateLimit)
    }

    /// A `Retry-After` beyond `--retry-after-cap` is capped by the retry policy; say so once, so a
    /// run that waits the whole cap on every 429 explains itself.
    private func noticeLongRetryAfter(_ reply: RestoreReply) {
        guard !retryAfterCapNoticeGiven, let cap = template.configuration.retryAfterCap,
            case .retryable(_, let status, let retryAfter?, _) = reply, retryAfter > cap
        else { return }
        retryAfterCapNoticeGiven = true
        let statusText = status.map { " with its \($0)" } ?? ""
        Notices.post(
            Notice(
                .warning,
                "botsi-restore: the server asked\(statusText) to wait \(Basics.seconds(retryAfter)) (Retry-After), more "
                    + "than --retry-after-cap \(Basics.seconds(cap)); waiting \(Basics.seconds(cap)) instead. "
                    + "Said once per run."))
    }

    private func checkOnDriverThread() {
        guard let thread, pthread_equal(thread, pthread_self()) != 0 else {
            preconditionFailure("the client's driver was used off its thread")
        }
    }

    /// Frees every handle and descriptor; the last thing `run` does, or `RestoreClient.init` when the thread
    /// could not start.
    func tearDown() {
        // Easy handles leave the multi handle before they are cleaned up, and the multi handle goes last.
        for transfer in active.all {
            let removed = curl_multi_remove_handle(multi, transfer.easy)
            assert(removed == CURLM_OK, "an active easy handle was not in the multi handle")
        }
        active.removeAll()
        idle.removeAll()
        core.state.withLock { state in
            state.wakeupClosed = true
            state.pending.removeAll()
            state.inFlight = 0
        }
        // Cleanup may still report sockets to remove, so the epoll set outlives the multi handle.
        let cleaned = curl_multi_cleanup(multi)
        assert(cleaned == CURLM_OK, "curl_multi_cleanup failed on the driver's own handle")
        Glibc.close(epoll)
        Glibc.close(core.wakeupDescriptor)
        core.driverFinished.signal()
    }
}

/// The transfers in the multi handle, by the easy handle curl hands back when one finishes. The
/// driver adds no other handle, so each finished one is found; one that is not would leave its
/// request unanswered and the run waiting for in-flight to reach 0 forever, so it stops the
/// process loudly instead (the journal stays sound: such a row is sent again by the next run).
struct ActiveTransfers {
    private var byHandle: [UnsafeMutableRawPointer: Transfer] = [:]

    var all: Dictionary<UnsafeMutableRawPointer, Transfer>.Values { byHandle.values }
    var count: Int { byHandle.count }

    mutating func insert(_ transfer: Transfer) {
        byHandle[transfer.easy] = transfer
    }

    /// The transfer of `easy`, no longer active.
    mutating func remove(_ easy: UnsafeMutableRawPointer) -> Transfer {
        guard let transfer = byHandle.removeValue(forKey: easy) else {
            preconditionFailure(
                "libcurl finished a transfer the client never started (easy handle \(easy)): its request would "
                    + "never be answered and the run would wait for it forever")
        }
        return transfer
    }

    mutating func removeAll() { byHandle.removeAll() }
}
