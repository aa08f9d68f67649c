import BotsiSimulator
import BotsiTestSupport
import Foundation
import Glibc

/// A blocking raw-socket HTTP client, so tests can see exactly what the server put on the wire:
/// resets, early closes and bodies shorter than their Content-Length.
final class TestClient {
    struct Response {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
        var code: String? { json["code"] as? String }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Outcome {
        case response(Response)
        /// The server closed the connection; `received` is whatever came before.
        case closed(received: [UInt8])
        case reset
        case timedOut
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: Int, receiveTimeoutSeconds: Int = 15) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket failed") }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure(description: "connect failed: \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(descriptor)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw Failure(description: "send failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    static func request(
        method: String = "POST", path: String = "/v2/purchases/apple-store/restore",
        authorization: String? = Simulator.defaultKey, body: String? = nil, extraHeaders: [String] = []
    ) -> String {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: 127.0.0.1"]
        if let authorization { lines.append("Authorization: \(authorization)") }
        if let body {
            lines.append("Content-Type: application/json")
            lines.append("Content-Length: \(body.utf8.count)")
        }
        lines += extraHeaders
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    static func restoreBody(_ profileId: String, _ transactionId: String) -> String {
        "{\"profileId\":\"\(profileId)\",\"originalTransactionId\":\"\(transactionId)\"}"
    }

    /// Sends one restore and reads the reply.
    func restore(
        _ profileId: String, _ transactionId: String, authorization: String? = Simulator.defaultKey
    ) throws -> Outcome {
        try send(Self.request(authorization: authorization, body: Self.restoreBody(profileId, transactionId)))
        return readResponse()
    }

    /// Like `restore`, but anything other than a complete reply is a test failure.
    func restoreResponse(_ profileId: String, _ transactionId: String) throws -> Response {
        try require(restore(profileId, transactionId))
    }

    func require(_ outcome: Outcome) throws -> Response {
        guard case .response(let response) = outcome else {
            throw Failure(description: "expected a complete reply, got \(outcome)")
        }
        return response
    }

    func readResponse() -> Outcome {
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
                    buffer.removeFirst(bodyStart + length)
                    return .response(Response(status: status, headers: headers, body: body))
                }
            }
            switch receiveMore() {
            case .some(let failure): return failure
            case .none: continue
            }
        }
    }

    /// Reads until the server closes; for checking that nothing (or only part of a reply) arrives.
    func readUntilClosed() -> Outcome {
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

/// The shared launcher, with the port the raw-socket client connects to.
func startSimulatorOnPort(_ configure: (inout SimulatorOptions) -> Void = { _ in }) throws -> (Simulator, Int) {
    let simulator = try startSimulator(configure)
    return (simulator, simulator.port)
}
