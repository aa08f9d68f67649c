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

        // Round trips first, on connections open at once so that every event loop takes one (they are
        // handed out in turn), so whatever the server opens lazily is open before the limit is
        // counted; then its descriptors are counted once those connections are closed again. With a
        // single round trip (one loop warmed), one full test run saw two of the three connections the
        // limit left room for never served while every descriptor under it was in use: two were
        // taken after the count.
        let sockets = { descriptors(pid).values.filter { $0.hasPrefix("socket:") }.count }
        let socketsBefore = sockets()
        let warmUps = try (0..<4).map { _ in try TestClient(port: port) }
        for warmUp in warmUps { #expect(try warmUp.stats().reply?.status == 200) }
        for warmUp in warmUps { warmUp.close() }
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
        let prlimit = try runProgram("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(limit):"])
        try #require(prlimit.status == 0, "prlimit could not lower the child's RLIMIT_NOFILE: \(prlimit.error)")

        let accepted = try (0..<3).map { _ in try TestClient(port: port) }
        let queued = try (0..<3).map { _ in try TestClient(port: port) }
        let statsRequest = TestClient.request(method: "GET", path: "/__simulator/stats", authorization: nil)
        for connection in accepted + queued { try connection.send(statsRequest) }
        for connection in accepted { #expect(connection.readResponse().reply?.status == 200) }
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
        for connection in queued { #expect(connection.readResponse().reply?.status == 200) }
        for connection in queued { connection.close() }
        let fresh = try TestClient(port: port)
        let reply = try #require(try fresh.stats().reply)
        #expect(reply.status == 200)
        let stats = reply.text
        #expect(stats.contains("\"acceptBackoffs\":"), "\(stats)")
        #expect(!stats.contains("\"acceptBackoffs\":0"), "accept never failed, so the test proved nothing: \(stats)")
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
        let connection = try TestClient(port: port)
        let replies = try (0..<6).map { _ in try connection.restore("p-1", "2000000000000002").reply?.head ?? "" }
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
