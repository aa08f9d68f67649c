import BotsiSimulator
import Foundation
import Glibc

/// A blocking raw-socket HTTP client, so tests can see exactly what the server put on the wire:
/// resets, early closes and bodies shorter than their Content-Length. The one such client of the
/// simulator's tests and of the end-to-end tests that talk to `botsi-restore simulate`.
public final class TestClient {
    public struct Response {
        public let status: Int
        /// By lowercased name.
        public let headers: [String: String]
        public let body: [UInt8]
        /// The status line and header lines as they came, each with its CRLF, and the blank line.
        public let head: String

        public var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
        public var code: String? { json["code"] as? String }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public enum Outcome {
        case response(Response)
        /// The server closed the connection; `received` is whatever came before.
        case closed(received: [UInt8])
        case reset
        case timedOut

        /// The reply, when one came whole.
        public var reply: Response? {
            if case .response(let response) = self { return response }
            return nil
        }
    }

    private var descriptor: Int32
    private var buffer: [UInt8] = []

    public init(port: Int, receiveTimeoutSeconds: Int = 15) throws {
        descriptor = try Loopback.connect(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds)
    }

    deinit { close() }

    /// Closes the connection now (the server sees the close); later sends fail.
    public func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// True while nothing has arrived and the connection is still open.
    public var replyPending: Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw TestSupportError("send failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// `contentLengths`: the Content-Length values to send in place of the body's length (none,
    /// several, or ones that are not numbers), for tests of the parser's refusals.
    public static func request(
        method: String = "POST", path: String = "/v2/purchases/apple-store/restore", version: String = "HTTP/1.1",
        authorization: String? = Simulator.defaultKey, body: String? = nil, extraHeaders: [String] = [],
        contentLengths: [String]? = nil
    ) -> String {
        var lines = ["\(method) \(path) \(version)", "Host: 127.0.0.1"]
        if let authorization { lines.append("Authorization: \(authorization)") }
        if let body {
            lines.append("Content-Type: application/json")
            lines += (contentLengths ?? ["\(body.utf8.count)"]).map { "Content-Length: \($0)" }
        }
        lines += extraHeaders
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    public static func restoreBody(_ profileId: String, _ transactionId: String) -> String {
        "{\"profileId\":\"\(profileId)\",\"originalTransactionId\":\"\(transactionId)\"}"
    }

    /// Sends one restore and reads the reply.
    public func restore(
        _ profileId: String, _ transactionId: String, authorization: String? = Simulator.defaultKey
    ) throws -> Outcome {
        try send(Self.request(authorization: authorization, body: Self.restoreBody(profileId, transactionId)))
        return readResponse()
    }

    /// Like `restore`, but anything other than a complete reply is a test failure.
    public func restoreResponse(_ profileId: String, _ transactionId: String) throws -> Response {
        try require(restore(profileId, transactionId))
    }

    public func require(_ outcome: Outcome) throws -> Response {
        guard case .response(let response) = outcome else {
            throw TestSupportError("expected a complete reply, got \(outcome)")
        }
        return response
    }

    /// A GET of the simulator's statistics (`/__simulator/stats`) and its reply.
    public func stats() throws -> Outcome {
        try send(Self.request(method: "GET", path: "/__simulator/stats", authorization: nil))
        return readResponse()
    }

    public func readResponse() -> Outcome {
        while true {
            if let headEnd = find([0x0D, 0x0A, 0x0D, 0x0A]) {
                let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] =
                        line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                let bodyStart = headEnd + 4
                if buffer.count - bodyStart >= length {
                    let body = Array(buffer[bodyStart..<(bodyStart + length)])
                    let rawHead = String(decoding: buffer[0..<bodyStart], as: UTF8.self)
                    buffer.removeFirst(bodyStart + length)
                    return .response(Response(status: status, headers: headers, body: body, head: rawHead))
                }
            }
            switch receiveMore() {
            case .some(let failure): return failure
            case .none: continue
            }
        }
    }

    /// Reads until the server closes; for checking that nothing (or only part of a reply) arrives.
    public func readUntilClosed() -> Outcome {
        while true {
            if let failure = receiveMore() { return failure }
        }
    }

    private func receiveMore() -> Outcome? {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return nil
        }
        if count == 0 { return .closed(received: buffer) }
        if errno == EINTR { return nil }
        if errno == ECONNRESET { return .reset }
        if errno == EAGAIN || errno == EWOULDBLOCK { return .timedOut }
        return .closed(received: buffer)
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for start in 0...(buffer.count - pattern.count)
        where buffer[start..<(start + pattern.count)].elementsEqual(pattern) {
            return start
        }
        return nil
    }
}
