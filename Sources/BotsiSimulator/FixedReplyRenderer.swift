/// Turns a scenario's fixed reply into what goes on the wire. Runs outside the core's lock.
enum FixedReplyRenderer {
    /// Bytes sent per tick of a never-ending body.
    static let trickleChunk: [UInt8] = Array("xxxxxxxx".utf8)

    /// `currentProfile` is the profile's reply as it is now; only `hugeHeaders` uses it.
    static func action(
        for reply: SimulatorScenario.FixedReply, profileId: String, currentProfile: [UInt8], keepAlive: Bool,
        retryAfterFormat: RetryAfterFormat
    ) -> ReplyPlan.Action {
        let status = reply.effectiveStatus
        switch reply.kind {
        case .error:
            var json = JSONBytes(capacity: 96)
            json.raw("{\"error\":")
            json.string(reply.message ?? "Fixed reply \(status) from the simulator's scenario")
            if let code = reply.code {
                json.raw(",\"code\":")
                json.string(code)
            }
            json.raw("}")
            let retryAfter = reply.retryAfterSeconds.map { ReplyHeaders.retryAfter($0, format: retryAfterFormat) }
            let bytes = Responses.make(
                status: status, body: json.bytes, keepAlive: keepAlive, headers: retryAfter ?? [])
            return .send(bytes, closeAfter: !keepAlive)
        case .html:
            let page = Array(
                "<html>\r\n<head><title>\(status)</title></head>\r\n<body>\r\n<center><h1>\(status)</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
                    .utf8)
            return .send(
                Responses.make(status: status, contentType: .html, body: page, keepAlive: keepAlive),
                closeAfter: !keepAlive)
        case .hugeBody:
            let body = paddedProfile(
                profileId, totalBytes: reply.bytes ?? SimulatorScenario.FixedReply.defaultHugeBodyBytes)
            if reply.contentLength ?? true {
                return .send(Responses.make(status: 200, body: body, keepAlive: keepAlive), closeAfter: !keepAlive)
            }
            return .send(head(status: 200, contentLength: nil, keepAlive: false) + body, closeAfter: true)
        case .invalidJSON:
            var json = JSONBytes(capacity: 96)
            json.raw("{\"ok\":true,\"data\":{\"profileId\":")
            json.string(profileId)
            json.raw(",\"state\":subscribed,")
            return .send(Responses.make(status: 200, body: json.bytes, keepAlive: keepAlive), closeAfter: !keepAlive)
        case .okFalse:
            var json = JSONBytes(capacity: 96)
            json.raw("{\"ok\":false,\"error\":")
            json.string(reply.message ?? "The restore could not be completed")
            json.raw(",\"data\":null}")
            return .send(Responses.make(status: 200, body: json.bytes, keepAlive: keepAlive), closeAfter: !keepAlive)
        case .neverEndingBody:
            var json = JSONBytes(capacity: 96)
            json.raw("{\"ok\":true,\"data\":{\"profileId\":")
            json.string(profileId)
            json.raw(",\"padding\":\"")
            let milliseconds = reply.intervalMilliseconds ?? SimulatorScenario.FixedReply.defaultIntervalMilliseconds
            return .trickle(
                head: head(status: 200, contentLength: nil, keepAlive: false) + json.bytes, chunk: trickleChunk,
                intervalNanoseconds: max(1, UInt64(milliseconds * 1_000_000)))
        case .hugeHeaders:
            let padding = headerPadding(
                totalBytes: reply.bytes ?? SimulatorScenario.FixedReply.defaultHugeHeaderBytes,
                lineBytes: reply.lineBytes ?? SimulatorScenario.FixedReply.defaultHeaderLineBytes)
            let bytes =
                head(status: 200, contentLength: currentProfile.count, keepAlive: keepAlive, extra: padding)
                + currentProfile
            return .send(bytes, closeAfter: !keepAlive)
        case .redirect:
            var location: [UInt8] = []
            Responses.append("Location: ", to: &location)
            location.append(contentsOf: (reply.location ?? "").utf8)
            Responses.append("\r\n", to: &location)
            let bytes = head(
                status: status, contentType: false, contentLength: 0, keepAlive: keepAlive, extra: location)
            return .send(bytes, closeAfter: !keepAlive)
        }
    }

    /// A reply head; without a length the body runs until the connection closes, so it says close.
    private static func head(
        status: Int, contentType: Bool = true, contentLength: Int?, keepAlive: Bool, extra: [UInt8] = []
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + extra.count)
        Responses.appendStatusLine(status, to: &bytes)
        if contentType { Responses.append("Content-Type: application/json\r\n", to: &bytes) }
        if let contentLength {
            Responses.append("Content-Length: ", to: &bytes)
            Responses.appendDecimal(contentLength, to: &bytes)
            Responses.append("\r\n", to: &bytes)
        }
        bytes.append(contentsOf: extra)
        if !keepAlive || contentLength == nil { Responses.append("Connection: close\r\n", to: &bytes) }
        Responses.append("\r\n", to: &bytes)
        return bytes
    }

    /// Valid JSON of `totalBytes` (or the smallest it can be): only its size is hostile.
    static func paddedProfile(_ profileId: String, totalBytes: Int) -> [UInt8] {
        var json = JSONBytes(capacity: totalBytes + 64)
        json.raw("{\"ok\":true,\"data\":{\"profileId\":")
        json.string(profileId)
        json.raw(",\"padding\":\"")
        let closing = 3
        // Array(repeating:) and appending an array run as a fill and a copy inside the standard library;
        // a byte-by-byte loop here would take seconds for megabytes in a debug or sanitizer build.
        json.bytes.append(
            contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: max(0, totalBytes - json.bytes.count - closing)))
        json.raw("\"}}")
        return json.bytes
    }

    /// `X-Padding-N: xxx…` lines of `lineBytes` each (CRLF included) until at least `totalBytes`.
    static func headerPadding(totalBytes: Int, lineBytes: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(totalBytes + lineBytes)
        var index = 0
        while bytes.count < totalBytes {
            let lineStart = bytes.count
            Responses.append("X-Padding-", to: &bytes)
            Responses.appendDecimal(index, to: &bytes)
            Responses.append(": ", to: &bytes)
            let fill = max(1, lineBytes - (bytes.count - lineStart) - 2)
            bytes.append(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: fill))
            Responses.append("\r\n", to: &bytes)
            index += 1
        }
        return bytes
    }
}
