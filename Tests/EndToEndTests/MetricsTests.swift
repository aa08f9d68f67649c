import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `run --metrics-file` and `--metrics-push` with the real binary, the real simulator, and the
/// real Prometheus tools (`promtool`, `prometheus-pushgateway`; CI installs them).
@Suite("metrics, end to end")
struct MetricsTests {
    static let promtool = "/usr/bin/promtool"
    static let pushgateway = "/usr/bin/prometheus-pushgateway"
    static let hasPromtool = FileManager.default.isExecutableFile(atPath: promtool)
    static let hasPushgateway = FileManager.default.isExecutableFile(atPath: pushgateway)

    @Test func aRunWritesTheMetricsFileWithMode0644() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let metricsFile = workspace.file("botsi.prom")
        let before = Date().timeIntervalSince1970
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(50))], workspace, simulator, ["--metrics-file", metricsFile]),
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")

        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        let attributes = try FileManager.default.attributesOfItem(atPath: metricsFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o644, "node_exporter must be able to read it")
        #expect(text.contains(#"botsi_restore_rows{journal="journal.sqlite",status="restored"} 45"#), "\(text)")
        #expect(text.contains(#"botsi_restore_rows{journal="journal.sqlite",status="nothing_to_restore"} 5"#))
        #expect(
            text.contains(#"botsi_restore_requests_total{journal="journal.sqlite",outcome="restored",code="200"} 45"#))
        #expect(text.contains(#"botsi_restore_exit_code{journal="journal.sqlite"} 0"#))
        #expect(text.contains(#"botsi_restore_rows_owed{journal="journal.sqlite"} 0"#))
        #expect(text.contains(#"botsi_restore_running{journal="journal.sqlite"} 0"#))
        let lastSuccess = try #require(Self.value(of: "botsi_restore_last_success_timestamp_seconds", in: text))
        #expect(lastSuccess >= before.rounded(.down) && lastSuccess <= Date().timeIntervalSince1970 + 1)
        #expect(!text.contains(Simulator.defaultKey), "the key is in the metrics file")
        #expect(!FileManager.default.fileExists(atPath: workspace.file("botsi.prom.tmp")))

    }

    @Test(.enabled(if: hasPromtool, "promtool is not installed (Debian package prometheus)"))
    func promtoolAcceptsTheMetricsFile() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.faultRate = 0.2 }
        defer { simulator.stop() }
        let metricsFile = workspace.file("botsi.prom")
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(60))], workspace, simulator, ["--metrics-file", metricsFile]),
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        let check = try runProgram(Self.promtool, ["check", "metrics"], input: metricsFile)
        let text = (try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? ""
        #expect(check.status == 0, "promtool check metrics refused the file: \(check.output)\(check.error)\n\(text)")
        #expect(text.contains("outcome=\"retry\""), "faults should have caused retries: \(text)")
    }

    @Test func aRefusedRunLeavesTheLastSuccessAsItWasAndSaysItsExitCode() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let metricsFile = workspace.file("botsi.prom")
        let arguments = runArguments(
            [workspace.csv(Pair.generate(20))], workspace, simulator, ["--metrics-file", metricsFile])
        let first = try botsi(arguments, key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let success = try #require(
            Self.value(
                of: "botsi_restore_last_success_timestamp_seconds",
                in: String(contentsOfFile: metricsFile, encoding: .utf8)))
        Thread.sleep(forTimeInterval: 1.1)

        // New rows, and a key the simulator refuses: exit 77, not a success.
        let refused = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(5, prefix: "q"), name: "more.csv")], workspace, simulator,
                [
                    "--metrics-file", metricsFile,
                ]), key: "sk_wrong_key_0123456789", in: workspace)
        #expect(refused.status == 77, "stderr: \(refused.stderr)")
        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        #expect(text.contains(#"botsi_restore_exit_code{journal="journal.sqlite"} 77"#), "\(text)")
        #expect(Self.value(of: "botsi_restore_last_success_timestamp_seconds", in: text) == success, "\(text)")
        #expect(!text.contains("sk_wrong_key_0123456789"))
    }

    @Test func aRunWhoseWindowEndsAfterProgressCountsAsASuccess() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 100 }
        defer { simulator.stop() }
        let metricsFile = workspace.file("botsi.prom")
        let child = try Child(
            runArguments(
                [workspace.csv(Pair.generate(400))], workspace, simulator,
                [
                    "--metrics-file", metricsFile, "--max-duration", "2s", "--concurrency", "2", "--log-interval",
                    "0.2",
                ]), key: Simulator.defaultKey, in: workspace)
        // While it runs, the file says so (every --log-interval).
        #expect(
            eventually(timeout: 10) {
                ((try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? "").contains(
                    #"botsi_restore_running{journal="journal.sqlite"} 1"#)
            }, "no metrics file while the run was going")
        let finished = child.wait()
        #expect(finished.status == 75, "stderr: \(finished.stderr)")
        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        #expect(text.contains(#"botsi_restore_exit_code{journal="journal.sqlite"} 75"#), "\(text)")
        let owed = try #require(Self.value(of: "botsi_restore_rows_owed", in: text))
        #expect(owed > 0, "\(text)")
        let lastSuccess = try #require(Self.value(of: "botsi_restore_last_success_timestamp_seconds", in: text))
        #expect(lastSuccess > Date().timeIntervalSince1970 - 60, "the window ended after progress: \(text)")
    }

    @Test(.enabled(if: hasPromtool, "promtool is not installed (Debian package prometheus)"))
    func promtoolPassesTheAlertRulesTests() throws {
        let result = try runProgram(
            Self.promtool, ["test", "rules", "botsi-restore.rules.test.yml"], directory: Locations.packageRoot + "/cron"
        )
        #expect(result.status == 0, "\(result.output)\(result.error)")
    }

    @Test(
        .enabled(if: hasPushgateway, "prometheus-pushgateway is not installed (Debian package prometheus-pushgateway)"))
    func theMetricsArePushedToAPushgatewayWithoutTheKey() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let port = try Loopback.freePort()
        let gateway = Process()
        gateway.executableURL = URL(fileURLWithPath: Self.pushgateway)
        gateway.arguments = ["--web.listen-address=127.0.0.1:\(port)"]
        gateway.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        gateway.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try gateway.run()
        defer {
            kill(gateway.processIdentifier, SIGKILL)
            gateway.waitUntilExit()
        }
        #expect(eventually(timeout: 20) { Self.get(port: port, path: "/-/ready")?.contains(" 200 OK") ?? false })

        let finished = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(30))], workspace, simulator,
                [
                    "--metrics-push", "http://127.0.0.1:\(port)",
                ]), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains("warning"), "stderr: \(finished.stderr)")
        let served = try #require(Self.get(port: port, path: "/metrics"))
        let line = served.split(separator: "\n").first {
            $0.hasPrefix("botsi_restore_rows{") && $0.contains(#"status="restored""#)
        }
        let restored = try #require(line, "the Pushgateway does not serve botsi_restore_rows: \(served)")
        #expect(restored.contains(#"job="botsi-restore""#) && restored.contains(#"journal="journal.sqlite""#))
        #expect(restored.hasSuffix(" 27"), "\(restored)")
        #expect(served.contains("botsi_restore_last_success_timestamp_seconds{"))
        #expect(!served.contains(Simulator.defaultKey), "the key reached the Pushgateway")
    }

    @Test func aFailedPushIsAWarningAndLeavesTheExitStatus() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let port = try Loopback.freePort()
        let finished = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(10))], workspace, simulator,
                [
                    "--metrics-push", "http://127.0.0.1:\(port)",
                ]), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("warning: could not push the metrics"), "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains(Simulator.defaultKey))
    }

    @Test func aMetricsTargetThatCanNeverBeWrittenIsRefusedBeforeTheRun() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(5))
        for (extra, said) in [
            (["--metrics-file", workspace.path], "it is a directory"),
            (["--metrics-file", workspace.journal], "it is the journal"),
            (["--metrics-push", "pushgateway:9091"], "http:// or https:// URL"),
        ] {
            // The journal exists from a first run, so a metrics file named like it is refused.
            if extra.last == workspace.journal {
                _ = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
            }
            let requests = simulator.stats().requests
            let refused = try botsi(
                runArguments([input], workspace, simulator, extra), key: Simulator.defaultKey, in: workspace)
            #expect(refused.status == 64, "\(extra): \(refused.stderr)")
            #expect(refused.stderr.contains(said), "\(extra): \(refused.stderr)")
            #expect(simulator.stats().requests == requests, "\(extra): the run sent requests")
        }
    }

    // MARK: Helpers

    /// A sample's value, for a metric with one sample.
    static func value(of metric: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(metric + "{") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    /// A plain HTTP/1.0 GET over loopback; the whole reply (status line, headers, body), or nil.
    static func get(port: Int, path: String) -> String? {
        guard let descriptor = try? Loopback.connect(port: port) else { return nil }
        defer { close(descriptor) }
        // HTTP/1.0: the reply is never chunked, so a line is never split by a chunk header.
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(descriptor, request, request.count, 0) == request.count else { return nil }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            reply += buffer[0..<count]
        }
        return String(decoding: reply, as: UTF8.self)
    }
}
