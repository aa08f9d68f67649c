import BotsiBasics
internal import CCurl
import Dispatch
import Foundation

/// `curl_global_init` must run once before any other curl call; a global `let` is initialized
/// lazily, exactly once, even when several threads race to it.
///
/// `SSLKEYLOGFILE` is removed from the environment first: libcurl opens that file at global init
/// and appends every TLS session's secrets to it (mode 0644), which would let whoever reads it
/// decrypt the traffic, key included.
let curlGlobalInitCode: CURLcode = {
    unsetenv("SSLKEYLOGFILE")
    return curl_global_init(Int(CURL_GLOBAL_ALL))
}()

/// What every easy handle shares: the URL, the route, the header list and the configuration.
final class RequestTemplate: @unchecked Sendable {
    // Invariant: nothing here changes after init. libcurl reads the lists and the parsed URL only from the driver
    // thread (and from the probe handle in RestoreClient.init, before that thread starts); they are
    // freed in deinit, after the driver has cleaned up every easy handle.
    let url: String
    let headers: UnsafeMutablePointer<curl_slist>
    /// `CURLOPT_RESOLVE` entries pinning `localhost`; nil for every other host.
    let pinnedAddresses: UnsafeMutablePointer<curl_slist>?
    /// `url`, parsed once (`CURLOPT_CURLU`): given as a string, libcurl parsed it again and printed
    /// it back for every request (~13,000 instructions each); with a parsed URL it copies it.
    let parsedURL: OpaquePointer
    let route: ConnectionRoute
    let configuration: ClientConfiguration

    init(configuration: ClientConfiguration, route: ConnectionRoute) throws(ClientError) {
        self.configuration = configuration
        self.route = route
        url = configuration.baseURL + restoreEndpointPath
        parsedURL = try Self.parse(url)
        do {
            headers = try Self.list([
                "Authorization: \(configuration.apiKey)",
                "Content-Type: application/json",
                "Accept: application/json",
                "User-Agent: \(configuration.userAgent)",
                // An empty Expect header stops curl from waiting for "100 Continue".
                "Expect:",
            ])
        } catch {
            curl_url_cleanup(parsedURL)
            throw error
        }
        do {
            pinnedAddresses = route.pinnedAddresses.isEmpty ? nil : try Self.list(route.pinnedAddresses)
        } catch {
            curl_slist_free_all(headers)
            curl_url_cleanup(parsedURL)
            throw error
        }
    }

    /// The URL as libcurl parses a `CURLOPT_URL` string at each transfer, with the same flags.
    private static func parse(_ url: String) throws(ClientError) -> OpaquePointer {
        guard let handle = curl_url() else {
            throw ClientError(
                "libcurl could not allocate the request URL; the machine may be out of memory.", kind: .localResource)
        }
        let code = curl_url_set(handle, CURLUPART_URL, url, UInt32(CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME))
        guard code == CURLUE_OK else {
            curl_url_cleanup(handle)
            let reason = String(cString: curl_url_strerror(code))
            if code == CURLUE_OUT_OF_MEMORY {
                throw ClientError(
                    "libcurl ran out of memory parsing the URL \(url) (\(reason)); free memory and run again.",
                    kind: .localResource)
            }
            throw ClientError("libcurl refused the URL \(url) (\(reason)); check --base-url.")
        }
        return handle
    }

    private static func list(_ lines: [String]) throws(ClientError) -> UnsafeMutablePointer<curl_slist> {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw ClientError(
                    "libcurl could not allocate the request headers; the machine may be out of memory.",
                    kind: .localResource)
            }
            list = appended
        }
        return list!
    }

    deinit {
        curl_slist_free_all(headers)
        curl_slist_free_all(pinnedAddresses)
        curl_url_cleanup(parsedURL)
    }
}

/// Sets the route `connectionRoute` or `publishingRoute` decided on an easy handle: the one way
/// every request the tool makes is routed. An empty proxy means none, whatever http_proxy, ALL_PROXY
/// and the like say; an empty NOPROXY stops libcurl from reading NO_PROXY itself; a proxy is always
/// a CONNECT tunnel; `pinned` (the route's `CURLOPT_RESOLVE` list) answers localhost. Returns the
/// option libcurl refused, if one was.
func applyRoute(
    _ route: ConnectionRoute, pinned: UnsafeMutablePointer<curl_slist>?, to easy: UnsafeMutableRawPointer
) -> (code: CURLcode, what: String)? {
    var code = ccurl_easy_setopt_string(easy, CURLOPT_PROXY, route.curlProxy)
    guard code == CURLE_OK else { return (code, "the proxy") }
    code = ccurl_easy_setopt_string(easy, CURLOPT_NOPROXY, "")
    guard code == CURLE_OK else { return (code, "the proxy exceptions") }
    code = ccurl_easy_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1)
    guard code == CURLE_OK else { return (code, "the proxy tunnel") }
    if let pinned {
        code = ccurl_easy_setopt_slist(easy, CURLOPT_RESOLVE, pinned)
        guard code == CURLE_OK else { return (code, "the localhost addresses") }
    }
    return nil
}

/// One easy handle with the buffers libcurl writes into. Reused from a pool so that connections and
/// TLS sessions stay warm. Owned by the driver thread only.
final class Transfer {
    let easy: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// errno of the last socket(2) that failed for this transfer (0: none), written by the shim.
    let socketError: UnsafeMutablePointer<Int32>
    let maxBodyBytes: Int
    var body: [UInt8] = []
    var retryAfter: String?
    /// Rate-limit fields (name, value), at most a few: pacing reads them, nothing stores them.
    var rateLimitFields: [(String, String)] = []
    var bodyTooLarge = false
    var headerBytes = 0
    var headersTooLarge = false
    var request: RestoreRequest?
    /// Times libcurl was about to send the current request; more than one is its own silent resend.
    var sends = 0
    var resendRefused = false
    var startedAt = Date()
    var startedUptime: UInt64 = 0

    init(template: RequestTemplate) throws(ClientError) {
        guard let easy = curl_easy_init() else {
            throw ClientError(
                "libcurl could not create a handle; the machine may be out of memory.", kind: .localResource)
        }
        self.easy = easy
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        socketError = .allocate(capacity: 1)
        socketError.initialize(to: 0)
        maxBodyBytes = template.configuration.maxResponseBytes
        // From here on deinit frees the handle, even if configuring it throws.
        try configure(template)
    }

    deinit {
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
        socketError.deallocate()
    }

    private func configure(_ template: RequestTemplate) throws(ClientError) {
        let configuration = template.configuration
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        try check(
            ccurl_easy_setopt_pointer(easy, CURLOPT_CURLU, UnsafeMutableRawPointer(template.parsedURL)), "the URL")
        try check(ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        try check(
            ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds(configuration.requestTimeout)), "the timeout")
        try check(
            ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(configuration.connectTimeout)),
            "the connect timeout")
        if let (code, what) = applyRoute(template.route, pinned: template.pinnedAddresses, to: easy) {
            try check(code, what)
        }
        try check(ccurl_easy_setopt_long(easy, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)), "TLS 1.2 at least")
        let verify = configuration.insecureSkipTLSVerify ? 0 : 1
        try check(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, verify), "TLS verification")
        try check(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, verify * 2), "TLS host verification")
        if let caCertificatePath = configuration.caCertificatePath {
            try check(ccurl_easy_setopt_string(easy, CURLOPT_CAINFO, caCertificatePath), "the CA certificate file")
        }
        try check(ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "redirect handling")
        // Refuses up front a reply whose Content-Length is over the limit; the write callback catches the rest.
        try check(
            ccurl_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBytes)),
            "the reply size limit")
        try check(ccurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "the allowed protocols")
        // A libcurl built without HTTP/2 answers UNSUPPORTED_PROTOCOL and speaks HTTP/1.1, which works.
        let http2 = ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        if http2 != CURLE_UNSUPPORTED_PROTOCOL { try check(http2, "HTTP/2 over TLS") }
        // Over TLS, ALPN tells within the handshake whether HTTP/2 can multiplex, so a new request may wait
        // for it rather than open another connection. Over plain http:// curl would only learn that from
        // the first reply, and every request would queue behind it.
        if template.url.hasPrefix("https://") {
            try check(ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1), "waiting for a multiplexed connection")
        }
        try check(ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "TCP keep-alive")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "the error buffer")
        try check(ccurl_easy_open_sockets_recording_errors(easy, socketError), "the socket opener")
        try check(ccurl_easy_setopt_long(easy, CURLOPT_POST, 1), "POST")
        try check(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, template.headers), "the request headers")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, userdata), "the body buffer")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, userdata), "the header buffer")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, userdata), "the send counter")
        try check(
            ccurl_easy_setopt_write_callback(easy) { data, size, count, userdata in
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.receiveBody(data, byteCount: size * count)
            }, "the body callback")
        try check(
            ccurl_easy_setopt_header_callback(easy) { data, size, count, userdata in
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.receiveHeader(data, byteCount: size * count)
            }, "the header callback")
        // When a reused connection closes without a reply byte, libcurl sends the request again on a
        // fresh one by itself, and has no option to stop that: Botsi would get a request no attempt
        // records. This callback runs before every send, so the second one is refused instead.
        try check(
            ccurl_easy_setopt_prereq_callback(easy) { userdata, _, _, _, _ in
                let transfer = Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.allowSend()
            }, "the resend guard")
    }

    private func check(_ code: CURLcode, _ what: String) throws(ClientError) {
        guard code == CURLE_OK else {
            let reason = String(cString: curl_easy_strerror(code))
            if code == CURLE_OUT_OF_MEMORY {
                throw ClientError(
                    "libcurl ran out of memory setting \(what) (\(reason)); free memory and run again.",
                    kind: .localResource)
            }
            throw ClientError("libcurl refused \(what) (\(reason)); check the client settings.")
        }
    }

    /// Readies the handle for `request`; false if libcurl refused the body.
    func prepare(_ request: RestoreRequest) -> Bool {
        self.request = request
        body.removeAll(keepingCapacity: true)
        retryAfter = nil
        rateLimitFields.removeAll(keepingCapacity: true)
        bodyTooLarge = false
        headerBytes = 0
        headersTooLarge = false
        sends = 0
        resendRefused = false
        errorBuffer[0] = 0
        socketError.pointee = 0
        let payload = restoreRequestBody(
            profileId: request.profileId, originalTransactionId: request.originalTransactionId)
        // The size goes first: COPYPOSTFIELDS copies exactly that many bytes.
        guard ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count)) == CURLE_OK else {
            return false
        }
        let copied = payload.withUnsafeBytes { bytes in
            ccurl_easy_setopt_pointer(
                easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        }
        startedAt = request.submittedAt
        startedUptime = DispatchTime.now().uptimeNanoseconds
        return copied == CURLE_OK
    }

    /// `CURL_PREREQFUNC_OK` for the request's first send on a connection, `ABORT` for any resend.
    fileprivate func allowSend() -> Int32 {
        sends += 1
        guard sends > 1 else { return Int32(CURL_PREREQFUNC_OK) }
        resendRefused = true
        return Int32(CURL_PREREQFUNC_ABORT)
    }

    fileprivate func receiveBody(_ data: UnsafeMutablePointer<CChar>?, byteCount: Int) -> Int {
        guard byteCount > 0, let data else { return 0 }
        guard body.count + byteCount <= maxBodyBytes else {
            bodyTooLarge = true
            return 0  // anything but byteCount aborts the transfer with CURLE_WRITE_ERROR
        }
        data.withMemoryRebound(to: UInt8.self, capacity: byteCount) { bytes in
            body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: byteCount))
        }
        return byteCount
    }

    /// Keeps only `Retry-After` and the rate-limit fields; other headers (and anything they might echo) are never stored.
    /// Returns `byteCount` to go on; anything else aborts the transfer.
    fileprivate func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, byteCount: Int) -> Int {
        guard let data, byteCount > 0 else { return byteCount }
        headerBytes += byteCount
        // libcurl 7.x bounds each header line but not their sum; a server that never ends its header
        // section would otherwise hold the request until the timeout.
        guard headerBytes <= maxHeaderBytes else {
            headersTooLarge = true
            return 0
        }
        let line = UnsafeRawBufferPointer(start: data, count: byteCount)
        if line.starts(with: "HTTP/".utf8) {
            retryAfter = nil  // a new response (after a 1xx) starts over
            rateLimitFields.removeAll(keepingCapacity: true)
            return byteCount
        }
        if byteCount < 512, rateLimitFields.count < 16, line.count > 10,
            ASCIICase.lowercased(line[0]) == UInt8(ascii: "r") || ASCIICase.lowercased(line[0]) == UInt8(ascii: "x"),
            let colon = line.firstIndex(of: UInt8(ascii: ":"))
        {
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            if RateLimitHeaderParser.fieldNames.contains(name) {
                let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
                rateLimitFields.append((name, value.trimmingCharacters(in: .whitespacesAndNewlines)))
                return byteCount
            }
        }
        let name = "retry-after:".utf8
        guard byteCount > name.count, byteCount < 512,
            zip(line, name).allSatisfy({ ASCIICase.lowercased($0) == $1 })
        else { return byteCount }
        let value = String(decoding: line.dropFirst(name.count), as: UTF8.self)
        retryAfter = value.trimmingCharacters(in: .whitespacesAndNewlines)
        return byteCount
    }

    /// Turns the finished transfer into a result; `code` is the transfer's CURLcode.
    func finish(code: CURLcode, now: Date) -> RestoreResult {
        var status = 0
        // A handle whose status cannot be read is treated as having none (a transport failure).
        if ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK { status = 0 }
        let httpStatus = status > 0 ? status : nil
        let reply: RestoreReply
        let retryAfterDelay = retryAfter.flatMap { parseRetryAfter($0, now: now) }
        if code == CURLE_OK {
            reply = classifyReply(httpStatus: status, body: body, retryAfter: retryAfterDelay)
        } else if code == CURLE_ABORTED_BY_CALLBACK && resendRefused {
            // The first send may have reached Botsi, like any reset without a reply: a retryable
            // connection error, which the retry policy counts and journals as an attempt.
            reply = .retryable(
                code: "connection_error", httpStatus: httpStatus, retryAfter: nil,
                message: "The connection closed without a reply (libcurl would have resent the request; "
                    + "botsi-restore retries it itself, counted as an attempt).")
        } else if code == CURLE_WRITE_ERROR && headersTooLarge {
            reply = .retryable(
                code: "invalid_response", httpStatus: httpStatus, retryAfter: nil,
                message: "The server's reply headers were larger than \(maxHeaderBytes) bytes and were not read.")
        } else if (code == CURLE_WRITE_ERROR && bodyTooLarge) || code == CURLE_FILESIZE_EXCEEDED {
            if (200..<300).contains(status) {
                reply = .retryable(
                    code: "invalid_response", httpStatus: status, retryAfter: nil,
                    message: "The server's \(status) reply was larger than \(maxBodyBytes) bytes and was not read.")
            } else {
                reply = classifyReply(httpStatus: status, body: [], retryAfter: retryAfterDelay)
            }
        } else {
            reply = classifyTransportFailure(
                code: code, detail: String(cString: errorBuffer), httpStatus: httpStatus,
                socketError: socketError.pointee)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- startedUptime) / 1e9
        let tag = request?.tag ?? -1
        request = nil
        body.removeAll(keepingCapacity: body.capacity <= 64 << 10)
        var rateLimit = RateLimitHeaderParser()
        for (name, value) in rateLimitFields { rateLimit.add(name: name, value: value, now: now) }
        return RestoreResult(
            tag: tag, reply: reply, httpStatus: httpStatus, startedAt: startedAt, duration: elapsed,
            rateLimit: rateLimit.result)
    }
}

/// Far above any real reply's header section, far below what would hurt memory.
private let maxHeaderBytes = 256 << 10

private func milliseconds(_ seconds: Double) -> Int {
    Int(min(max(seconds * 1000, 1), 1e9).rounded())
}

/// Maps a failed transfer's CURLcode onto the outcome table. TLS failures stop the run: retrying
/// cannot fix a certificate, and sending the key anywhere unverified is not an option.
func classifyTransportFailure(code: CURLcode, detail: String, httpStatus: Int?, socketError: Int32 = 0) -> RestoreReply
{
    let reason = String(cString: curl_easy_strerror(code))
    let detailText = detail.trimmingCharacters(in: .whitespacesAndNewlines)
    var text = VisibleText.oneLine(detailText.isEmpty || detailText == reason ? reason : "\(reason): \(detailText)")
    // Out of descriptors, a socket cannot even be made: curl says "Couldn't connect", as for a
    // server that refuses. Say whose limit it is.
    if socketError == EMFILE || socketError == ENFILE {
        text +=
            " — no socket could be made: \(localResourceReason(socketError)); a limit of this machine, not the server"
    }
    switch code {
    case CURLE_OPERATION_TIMEDOUT:
        return .retryable(code: "timeout", httpStatus: httpStatus, retryAfter: nil, message: text)
    case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
        return .retryable(code: "dns_error", httpStatus: httpStatus, retryAfter: nil, message: text)
    case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
        CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
        CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
        CURLE_USE_SSL_FAILED, CURLE_SSL_CLIENTCERT:
        return .fatal(
            .tlsFailure, httpStatus: httpStatus,
            message: "TLS with the server failed (\(text)). If the server uses a private CA, pass its certificate "
                + "with --cacert FILE; check that --base-url names the right host.")
    default:
        // Refused or reset connections, empty or cut-off replies (PARTIAL_FILE included), HTTP/2 stream errors.
        return .retryable(code: "connection_error", httpStatus: httpStatus, retryAfter: nil, message: text)
    }
}
