/// Assembles HTTP/1.1 replies as bytes: one allocation per reply, status lines from static text.
enum Responses {
    enum ContentType {
        case json, html, none
    }

    static func make(
        status: Int, contentType: ContentType = .json, body: [UInt8], keepAlive: Bool, headers: [UInt8] = [],
        declaredLength: Int? = nil, extraHeader: StaticString? = nil
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + body.count)
        appendStatusLine(status, to: &bytes)
        switch contentType {
        case .json: append("Content-Type: application/json\r\n", to: &bytes)
        case .html: append("Server: nginx\r\nContent-Type: text/html\r\n", to: &bytes)
        case .none: break
        }
        append("Content-Length: ", to: &bytes)
        appendDecimal(declaredLength ?? body.count, to: &bytes)
        append("\r\n", to: &bytes)
        bytes.append(contentsOf: headers)
        if let extraHeader { append(extraHeader, to: &bytes) }
        if !keepAlive { append("Connection: close\r\n", to: &bytes) }
        append("\r\n", to: &bytes)
        bytes.append(contentsOf: body)
        return bytes
    }

    /// `{"error": message, "code": code}`, the shape of every Botsi error.
    static func errorBody(_ message: String, code: StaticString) -> [UInt8] {
        var json = JSONBytes(capacity: 64 + message.utf8.count)
        json.raw("{\"error\":")
        json.string(message)
        json.raw(",\"code\":\"")
        json.raw(code)
        json.raw("\"}")
        return json.bytes
    }

    static let badGatewayPage: [UInt8] = Array(
        """
        <html>\r
        <head><title>502 Bad Gateway</title></head>\r
        <body>\r
        <center><h1>502 Bad Gateway</h1></center>\r
        <hr><center>nginx</center>\r
        </body>\r
        </html>\r

        """.utf8)

    static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Static text for the statuses the simulator sends often; any other (a scenario's fixed reply)
    /// gets its number and a generic reason phrase, which HTTP/1.1 lets clients ignore.
    static func appendStatusLine(_ status: Int, to bytes: inout [UInt8]) {
        let line: StaticString
        switch status {
        case 200: line = "HTTP/1.1 200 OK\r\n"
        case 400: line = "HTTP/1.1 400 Bad Request\r\n"
        case 401: line = "HTTP/1.1 401 Unauthorized\r\n"
        case 403: line = "HTTP/1.1 403 Forbidden\r\n"
        case 404: line = "HTTP/1.1 404 Not Found\r\n"
        case 405: line = "HTTP/1.1 405 Method Not Allowed\r\n"
        case 411: line = "HTTP/1.1 411 Length Required\r\n"
        case 413: line = "HTTP/1.1 413 Content Too Large\r\n"
        case 429: line = "HTTP/1.1 429 Too Many Requests\r\n"
        case 431: line = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        case 500: line = "HTTP/1.1 500 Internal Server Error\r\n"
        case 502: line = "HTTP/1.1 502 Bad Gateway\r\n"
        case 503: line = "HTTP/1.1 503 Service Unavailable\r\n"
        default:
            append("HTTP/1.1 ", to: &bytes)
            appendDecimal(status, to: &bytes)
            append(" Status\r\n", to: &bytes)
            return
        }
        append(line, to: &bytes)
    }

    static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        guard value > 0 else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var digits: [UInt8] = []
        var rest = value
        while rest > 0 {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        }
        bytes.append(contentsOf: digits.reversed())
    }
}
