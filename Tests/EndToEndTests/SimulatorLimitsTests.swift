import BotsiTestSupport
import Foundation
import Glibc
import Testing

/// `botsi-restore simulate` as a process of its own: its flags, and its descriptor limit lowered without
/// touching the test process (where every other test would then run out of descriptors too).
@Suite("simulate as a command")
struct SimulatorLimitsTests {
    @Test func atTheDescriptorLimitTheAcceptLoopWaitsWithoutSpinningAndServesOnceDescriptorsAreFree() throws {
        let workspace = Workspace()
        let child = try Child(["simulate", "--port", "0"], key: nil, in: workspace)
        defer {
            child.send(SIGTERM)
            _ = child.wait(timeout: 10)
        }
        let port = try #require(listeningPort(child), "simulate did not say where it listens")
        let pid = child.pid

        // One round trip first, so whatever the server opens lazily is open before the limit is counted;
        // then its descriptors are counted once the round trip's connection is closed again.
        let sockets = { descriptors(pid).values.filter { $0.hasPrefix("socket:") }.count }
        let socketsBefore = sockets()
        let warmUp = try RawConnection(port: port)
        #expect(warmUp.statsReply()?.hasPrefix("HTTP/1.1 200") == true)
        warmUp.close()
        #expect(eventually(timeout: 10) { sockets() == socketsBefore }, "\(descriptors(pid))")

        // Room for three connections, then none. The limit is on descriptor numbers (a new one gets the
        // lowest free number), so it goes just above the third free number.
        let inUse = Set(descriptors(pid).keys)
        var free: [Int] = []
        var number = 0
        while free.count < 3 {
            if !inUse.contains(number) { free.append(number) }
            number += 1
        }
        let limit = free[2] + 1
        let limitReached = { Set(descriptors(pid).keys).isSuperset(of: 0..<limit) }
        let prlimit = try Process.run(
            URL(fileURLWithPath: "/usr/bin/prlimit"), arguments: ["--pid", "\(pid)", "--nofile=\(limit):"])
        prlimit.waitUntilExit()
        try #require(prlimit.terminationStatus == 0, "prlimit could not lower the child's RLIMIT_NOFILE")

        let accepted = try (0..<3).map { _ in try RawConnection(port: port) }
        let queued = try (0..<3).map { _ in try RawConnection(port: port) }
        for connection in accepted + queued { connection.sendStatsRequest() }
        for connection in accepted { #expect(connection.readReply()?.hasPrefix("HTTP/1.1 200") == true) }
        #expect(eventually(timeout: 10) { limitReached() }, "the limit was never reached")

        // The three queued connections are ready to accept, and accept fails with EMFILE: the loop must
        // wait rather than retry. Measured over two seconds of the child's own CPU time.
        usleep(300_000)
        let cpuBefore = try #require(cpuSeconds(pid))
        usleep(2_000_000)
        let cpuUsed = try #require(cpuSeconds(pid)) - cpuBefore
        #expect(cpuUsed < 0.25, "the simulator used \(cpuUsed) s of CPU in 2 s while it could not accept")
        #expect(queued[0].replyPending, "a queued connection was served beyond the descriptor limit")

        // Free the descriptors: the queued requests are served, and so is a new one.
        for connection in accepted { connection.close() }
        for connection in queued { #expect(connection.readReply()?.hasPrefix("HTTP/1.1 200") == true) }
        for connection in queued { connection.close() }
        let fresh = try RawConnection(port: port)
        let reply = try #require(fresh.statsReply())
        #expect(reply.hasPrefix("HTTP/1.1 200"))
        #expect(reply.contains("\"acceptBackoffs\":"), "\(reply)")
        #expect(!reply.contains("\"acceptBackoffs\":0"), "accept never failed, so the test proved nothing: \(reply)")
    }

    @Test func simulateHelpNamesEveryOptionItAccepts() throws {
        let workspace = Workspace()
        let help = try botsi(["simulate", "--help"], key: nil, in: workspace, timeout: 30).stdout
        let accepted = [
            "--host", "--port", "--latency", "--jitter", "--fault-rate", "--faults", "--retry-after", "--seed",
            "--scenario", "--mode", "--limit-rate", "--key", "--stall", "--idle-timeout", "--max-connections",
            "--limit-window", "--rate-limit-headers", "--retry-after-format",
        ]
        for option in accepted { #expect(help.contains(option + " "), "simulate --help does not mention \(option)") }
    }

    @Test func aNonLoopbackBindIsWarnedAboutOnStderr() throws {
        let workspace = Workspace()
        let child = try Child(["simulate", "--host", "0.0.0.0", "--port", "0"], key: nil, in: workspace)
        #expect(listeningPort(child) != nil)
        child.send(SIGTERM)
        let finished = child.wait(timeout: 10)
        #expect(finished.stderr.contains("warning: the simulator listens on every interface"), "\(finished.stderr)")

        let loopback = try Child(["simulate", "--port", "0"], key: nil, in: workspace)
        #expect(listeningPort(loopback) != nil)
        loopback.send(SIGTERM)
        #expect(!loopback.wait(timeout: 10).stderr.contains("warning"))
    }

    @Test func aLimiterThatCannotBeExactIsAUsageError() throws {
        let workspace = Workspace()
        let fractional = try botsi(["simulate", "--port", "0", "--limit-rate", "2.5"], key: nil, in: workspace)
        #expect(fractional.status == 64, "\(fractional.stderr)")
        #expect(fractional.stderr.contains("whole number"), "\(fractional.stderr)")
        let style = try botsi(
            ["simulate", "--port", "0", "--limit-rate", "5", "--rate-limit-headers", "draft"], key: nil, in: workspace)
        #expect(style.status == 64, "\(style.stderr)")
        #expect(style.stderr.contains("ietf, ratelimit-limit or x-ratelimit"), "\(style.stderr)")
    }

    @Test func theLimiterFlagsReachTheWire() throws {
        let workspace = Workspace()
        let child = try Child(
            [
                "simulate", "--port", "0", "--limit-rate", "2.5", "--limit-window", "2s", "--rate-limit-headers",
                "ietf", "--retry-after", "3", "--retry-after-format", "unix-ms",
            ], key: nil, in: workspace)
        defer {
            child.send(SIGTERM)
            _ = child.wait(timeout: 10)
        }
        let port = try #require(listeningPort(child))
        let connection = try RawConnection(port: port)
        let body = #"{"profileId":"p-1","originalTransactionId":"2000000000000002"}"#
        let request =
            "POST /v2/purchases/apple-store/restore HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: sim_secret_key\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let replies = (0..<6).map { _ in connection.exchange(request) ?? "" }
        #expect(replies.prefix(5).allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(replies)")
        #expect(replies.allSatisfy { $0.contains("RateLimit-Policy: \"default\";q=5;w=2\r\n") })
        #expect(replies[4].contains("RateLimit: \"default\";r=0;t="))
        #expect(replies[5].hasPrefix("HTTP/1.1 429"))
        let now = Date().timeIntervalSince1970 * 1000
        let retryAfter = replies[5].split(separator: "\r\n").first { $0.hasPrefix("Retry-After: ") }
        let value = try #require(retryAfter.flatMap { Double($0.dropFirst("Retry-After: ".count)) })
        #expect(abs(value - (now + 3000)) < 2000, "Retry-After \(value) is not about 3 s from now (\(now) ms)")
    }

    private func listeningPort(_ child: Child) -> Int? {
        var port: Int?
        _ = eventually(timeout: 20) {
            let output = (try? String(contentsOfFile: child.stdoutPath, encoding: .utf8)) ?? ""
            guard let line = output.split(separator: "\n").first(where: { $0.contains("listening on") }) else {
                return false
            }
            port = line.split(separator: ":").last.flatMap { Int($0) }
            return port != nil
        }
        return port
    }

    /// The process's open descriptors and what each refers to ("socket:[…]", a path, …).
    private func descriptors(_ pid: Int32) -> [Int: String] {
        let directory = "/proc/\(pid)/fd"
        var result: [Int: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let number = Int(name) else { continue }
            result[number] = (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + name)) ?? ""
        }
        return result
    }

    /// User plus system CPU time of the process so far (/proc/PID/stat fields 14 and 15, in clock ticks).
    private func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After the command name's closing parenthesis come fields 3, 4, …
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// A plain loopback TCP connection; just enough HTTP to send a request and read one reply whole.
private final class RawConnection {
    private var descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
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
            Glibc.close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    func sendStatsRequest() {
        send("GET /__simulator/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    }

    func send(_ request: String) {
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func exchange(_ request: String) -> String? {
        send(request)
        return readReply()
    }

    func statsReply() -> String? {
        sendStatsRequest()
        return readReply()
    }

    /// Whatever arrives until the head and `Content-Length` bytes of body are in, or nil on close/timeout.
    func readReply() -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let lengthLine = text[..<headEnd.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                let length = lengthLine.flatMap {
                    Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
                }
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) >= length ?? 0 {
                    return text
                }
            }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            received += buffer[0..<count]
        }
    }

    /// True when nothing has arrived (and the connection is still open).
    var replyPending: Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}
