/// The parts of a request head the simulator acts on.
struct HTTPRequestHead {
    enum Method {
        case get, post, other
    }

    enum Route {
        case restore, stats
        case other(path: String)
    }

    var method: Method
    var methodName: String
    var route: Route
    var keepAlive: Bool
    var authorization: [UInt8]?
    var contentLength = 0
    var expectsContinue = false
    /// The query holds `pairs=1` (or `pairs=true`): the stats route is asked to list every pair.
    var listsPairs = false
}

enum HTTPParseResult {
    /// The head or body is not complete yet; `expectsContinue` once a head asked for `100 Continue`.
    /// `headSearched`: how many leading bytes hold no head end, so the next parse need not search them again.
    case needMore(expectsContinue: Bool, headSearched: Int)
    case request(HTTPRequestHead, body: [UInt8], consumed: Int)
    /// The request cannot be served; the connection closes after the reply.
    case failure(status: Int, message: String)
}

/// An HTTP/1.1 request parser over raw bytes. Strict on purpose: CRLF line ends, `Content-Length`
/// bodies only (a chunked body gets 411), no obsolete line folding.
enum HTTPParser {
    static let maximumHeadBytes = 16 * 1024
    static let maximumBodyBytes = 1024 * 1024

    private static let restorePath = Array("/v2/purchases/apple-store/restore".utf8)
    private static let statsPath = Array("/__simulator/stats".utf8)

    /// `headSearched` is what an earlier `needMore` said about the same buffer (0 for a new request): a head
    /// trickled in byte by byte is then searched once in all, not once per byte received.
    static func parse(_ buffer: UnsafeBufferPointer<UInt8>, headSearched: Int = 0) -> HTTPParseResult {
        // A TLS handshake record (an https:// base URL): it holds no CRLF CRLF, so the connection
        // waited for a head until the client's timeout (two minutes). Answered at once instead.
        if buffer.first == 0x16 {
            return .failure(status: 400, message: "The simulator speaks plain HTTP, not TLS: use an http:// base URL")
        }
        // The head ends with CRLF CRLF; no head may be longer than `maximumHeadBytes` including that end,
        // so the search never looks further, whatever else the buffer holds.
        let searchable = UnsafeBufferPointer(rebasing: buffer[0..<min(buffer.count, maximumHeadBytes)])
        guard let headEnd = findHeadEnd(searchable, from: max(0, headSearched - 3)) else {
            if buffer.count >= maximumHeadBytes { return headTooLarge }
            return .needMore(expectsContinue: false, headSearched: buffer.count)
        }
        let head: HTTPRequestHead
        switch parseHead(UnsafeBufferPointer(rebasing: buffer[0..<headEnd])) {
        case .success(let parsed): head = parsed
        case .failure(let refusal): return .failure(status: refusal.status, message: refusal.message)
        }
        let bodyStart = headEnd + 4
        guard buffer.count - bodyStart >= head.contentLength else {
            return .needMore(expectsContinue: head.expectsContinue, headSearched: 0)
        }
        let body = Array(buffer[bodyStart..<(bodyStart + head.contentLength)])
        return .request(head, body: body, consumed: bodyStart + head.contentLength)
    }

    private static let headTooLarge = HTTPParseResult.failure(
        status: 431, message: "Request head is larger than \(maximumHeadBytes) bytes")

    private struct Refusal: Error {
        let status: Int
        let message: String

        static func malformed(_ message: String) -> Refusal {
            Refusal(status: 400, message: message)
        }
    }

    /// The offset of the CRLF CRLF that ends the head, searching from `start`.
    private static func findHeadEnd(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        var index = start
        let last = buffer.count - 4
        while index <= last {
            if buffer[index + 3] != 0x0A {
                index += buffer[index + 3] == 0x0D ? 1 : 4
                continue
            }
            if buffer[index] == 0x0D, buffer[index + 1] == 0x0A, buffer[index + 2] == 0x0D { return index }
            index += 1
        }
        return nil
    }

    private static func parseHead(_ head: UnsafeBufferPointer<UInt8>) -> Result<HTTPRequestHead, Refusal> {
        var lines = LineReader(head)
        guard let requestLine = lines.next() else { return .failure(.malformed("Empty request line")) }
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[1].first == UInt8(ascii: "/") else {
            return .failure(.malformed("Malformed request line"))
        }
        let keepAliveByDefault: Bool
        if parts[2].elementsEqual("HTTP/1.1".utf8) {
            keepAliveByDefault = true
        } else if parts[2].elementsEqual("HTTP/1.0".utf8) {
            keepAliveByDefault = false
        } else {
            return .failure(.malformed("Unsupported HTTP version"))
        }
        let methodBytes = parts[0]
        let method: HTTPRequestHead.Method =
            methodBytes.elementsEqual("POST".utf8) ? .post : methodBytes.elementsEqual("GET".utf8) ? .get : .other
        let target = parts[1]
        let path = target.prefix { $0 != UInt8(ascii: "?") }
        let route: HTTPRequestHead.Route =
            path.elementsEqual(restorePath)
            ? .restore
            : path.elementsEqual(statsPath) ? .stats : .other(path: String(decoding: path, as: UTF8.self))
        var request = HTTPRequestHead(
            method: method, methodName: String(decoding: methodBytes, as: UTF8.self), route: route,
            keepAlive: keepAliveByDefault)
        if case .stats = route, path.count < target.count {
            let query = target[(path.endIndex + 1)...]
            request.listsPairs = query.split(separator: UInt8(ascii: "&")).contains {
                $0.elementsEqual("pairs=1".utf8) || $0.elementsEqual("pairs=true".utf8)
            }
        }
        var contentLength: Int?
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                return .failure(.malformed("Malformed header line"))
            }
            let name = line[line.startIndex..<colon]
            guard name.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                return .failure(.malformed("Malformed header name"))
            }
            let value = trimmed(line[(colon + 1)...])
            if equalsIgnoringCase(name, "content-length") {
                guard !value.isEmpty, value.count <= 10, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    return .failure(.malformed("Malformed Content-Length"))
                }
                let length = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                if let contentLength, contentLength != length {
                    return .failure(.malformed("Conflicting Content-Length headers"))
                }
                contentLength = length
            } else if equalsIgnoringCase(name, "authorization") {
                request.authorization = Array(value)
            } else if equalsIgnoringCase(name, "connection") {
                for token in value.split(separator: UInt8(ascii: ",")) {
                    let option = trimmed(token)
                    if equalsIgnoringCase(option, "close") { request.keepAlive = false }
                    if equalsIgnoringCase(option, "keep-alive") { request.keepAlive = true }
                }
            } else if equalsIgnoringCase(name, "transfer-encoding") {
                return .failure(
                    Refusal(status: 411, message: "Transfer-Encoding is not supported; send a Content-Length body"))
            } else if equalsIgnoringCase(name, "expect") {
                request.expectsContinue = equalsIgnoringCase(value, "100-continue")
            }
        }
        request.contentLength = contentLength ?? 0
        if request.contentLength > maximumBodyBytes {
            return .failure(Refusal(status: 413, message: "Request body is larger than \(maximumBodyBytes) bytes"))
        }
        return .success(request)
    }

    private static func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    /// `lowercase` must be lowercase ASCII.
    private static func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString)
        -> Bool
    {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            var index = 0
            for byte in bytes {
                let folded = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                if folded != expected[index] { return false }
                index += 1
            }
            return true
        }
    }

    /// Splits a head into CRLF-terminated lines.
    private struct LineReader {
        let buffer: UnsafeBufferPointer<UInt8>
        var position = 0

        init(_ buffer: UnsafeBufferPointer<UInt8>) {
            self.buffer = buffer
        }

        mutating func next() -> Slice<UnsafeBufferPointer<UInt8>>? {
            guard position < buffer.count else { return nil }
            var end = position
            while end < buffer.count, !(buffer[end] == 0x0D && end + 1 < buffer.count && buffer[end + 1] == 0x0A) {
                end += 1
            }
            let line = buffer[position..<end]
            position = end + 2
            return line
        }
    }
}
