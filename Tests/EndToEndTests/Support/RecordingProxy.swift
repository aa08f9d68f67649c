import BotsiTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization

/// A small HTTP proxy on loopback that keeps every byte any client sent it. `CONNECT host:port` is
/// tunnelled to the target (so a TLS client works through it, and the test can check the key stayed
/// inside TLS); any other request is answered 502 after its bytes are kept, as a proxy that cannot
/// reach the origin would.
final class RecordingProxy: Sendable {
    let port: Int
    var url: String { "http://127.0.0.1:\(port)" }
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var received = Data()
        var connections = 0
        var closed = false
    }

    /// Everything clients sent so far, tunnelled bytes included.
    var received: Data { state.withLock { $0.received } }
    var connections: Int { state.withLock { $0.connections } }

    init() throws {
        let bound = try Loopback.bind(listening: 64)
        listener = bound.descriptor
        port = bound.port
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting; connections already tunnelled end when their peers close.
    func stop() {
        state.withLock { $0.closed = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if state.withLock({ $0.closed }) || errno != EINTR { break }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            state.withLock { $0.connections += 1 }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
        close(listener)
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var head = Data()
        while head.range(of: Data("\r\n\r\n".utf8)) == nil {
            guard let chunk = readChunk(client) else { return }
            head.append(chunk)
        }
        let requestLine = String(decoding: head.prefix { $0 != 0x0D }, as: UTF8.self)
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT", let colon = parts[1].lastIndex(of: ":"),
            let targetPort = UInt16(parts[1][parts[1].index(after: colon)...])
        else {
            writeAll(client, Data("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            // Keep reading what the client still sends (a request body) until it gives up.
            while readChunk(client) != nil {}
            return
        }
        guard let target = try? Loopback.connect(port: Int(targetPort), host: String(parts[1][..<colon])) else {
            writeAll(client, Data("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".utf8))
            return
        }
        defer { close(target) }
        writeAll(client, Data("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
        let back = Thread { [self] in
            while let chunk = readChunk(target, record: false) { writeAll(client, chunk) }
            shutdown(client, Int32(SHUT_WR))
        }
        back.start()
        let rest = head[(head.range(of: Data("\r\n\r\n".utf8))!.upperBound)...]
        if !rest.isEmpty { writeAll(target, Data(rest)) }
        while let chunk = readChunk(client) { writeAll(target, chunk) }
        shutdown(target, Int32(SHUT_WR))
        // Let the other direction finish before the descriptors close.
        while !back.isFinished { usleep(10_000) }
    }

    private func readChunk(_ descriptor: Int32, record: Bool = true) -> Data? {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let chunk = Data(buffer[0..<count])
        if record { state.withLock { $0.received.append(chunk) } }
        return chunk
    }

    private func writeAll(_ descriptor: Int32, _ data: Data) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
