import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// Where the key may travel: only to the base URL, inside TLS unless the host is loopback, never to a
/// proxy in clear, never into a key-log file, never back out of a server's echo. Each test runs the
/// real binary with a real environment, as cron or a shell would start it.
@Suite("the key goes only where the base URL says")
struct KeyTransportTests {
    static let key = "sk_transport_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()

    /// The environment of a shell where every proxy variable libcurl knows points at `proxy`.
    static func environment(proxy: String?, _ extra: [String: String] = [:]) -> [String: String] {
        var environment = Child.environment(key: key)
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            environment[name] = proxy
        }
        environment["no_proxy"] = nil
        environment["NO_PROXY"] = nil
        return environment.merging(extra) { $1 }
    }

    /// True when any 12 consecutive characters of the key appear, in any case.
    static func echoesTheKey(_ data: Data) -> Bool {
        let text = String(decoding: data, as: UTF8.self).lowercased()
        let key = Array(Self.key.lowercased())
        return (0...(key.count - 12)).contains { text.contains(String(key[$0..<$0 + 12])) }
    }

    /// The reproduction: with http_proxy or ALL_PROXY set and a loopback http:// base URL,
    /// the proxy received `Authorization: <key>` in clear.
    @Test func aPlainHTTPBaseURLNeverGoesThroughAProxyWhateverTheEnvironmentSays() throws {
        let workspace = Workspace()
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let simulator = try startSimulator { $0.keys = [Self.key] }
        defer { simulator.stop() }
        let rows = Pair.generate(5, prefix: "proxy")
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator), key: Self.key, in: workspace,
            environment: Self.environment(proxy: proxy.url))
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(proxy.connections == 0, "the proxy was contacted: \(String(decoding: proxy.received, as: UTF8.self))")
        #expect(!Self.echoesTheKey(proxy.received))
        #expect(simulator.requestsByPair().count == 5)
        #expect(finished.stderr.contains("sending to \(simulator.baseURL) directly (plain http://"))
        #expect(finished.stderr.contains("not using http_proxy, HTTP_PROXY, https_proxy, HTTPS_PROXY"))
    }

    /// `--metrics-push` went through `http_proxy`: TextPut set no proxy option, so libcurl read the
    /// environment (issue 20, item 6). Now the push takes the route the tool decides, as the restore
    /// requests do: plain http:// never through a proxy; https:// through HTTPS_PROXY as a CONNECT
    /// tunnel, or directly with --no-proxy.
    @Test func theMetricsPushTakesTheRouteTheToolDecides() throws {
        let workspace = Workspace()
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        // Records the PUT and answers 502, which the run reports as a warning.
        let gateway = try RecordingProxy()
        defer { gateway.stop() }
        let simulator = try startSimulator { $0.keys = [Self.key] }
        defer { simulator.stop() }
        let input = workspace.csv(Pair.generate(3, prefix: "push"))
        func run(_ extra: [String]) throws -> Finished {
            try botsi(
                runArguments([input], workspace, simulator, extra), key: Self.key, in: workspace,
                environment: Self.environment(proxy: proxy.url))
        }

        let plain = try run(["--metrics-push", gateway.url])
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        #expect(proxy.connections == 0, "the proxy got: \(String(decoding: proxy.received, as: UTF8.self))")
        let pushed = String(decoding: gateway.received, as: UTF8.self)
        #expect(pushed.hasPrefix("PUT /metrics/job/botsi-restore/journal/journal.sqlite HTTP/1.1\r\n"), "\(pushed)")
        #expect(!Self.echoesTheKey(gateway.received))

        // Nothing listens on `closed`: the tunnel (or the direct connection) fails at once, a warning.
        let closed = try Loopback.freePort()
        let tunnelled = try run(["--metrics-push", "https://127.0.0.1:\(closed)"])
        #expect(tunnelled.status == 0, "stderr: \(tunnelled.stderr)")
        let seen = String(decoding: proxy.received, as: UTF8.self)
        #expect(seen.hasPrefix("CONNECT 127.0.0.1:\(closed) HTTP/1.1\r\n"), "the proxy saw: \(seen.prefix(200))")
        #expect(proxy.connections == 1)
        let direct = try run(["--metrics-push", "https://127.0.0.1:\(closed)", "--no-proxy"])
        #expect(direct.status == 0 && direct.stderr.contains("could not push"), "stderr: \(direct.stderr)")
        #expect(proxy.connections == 1, "--no-proxy still went through the proxy")
    }

    /// The environment's HTTPS_PROXY is used for an https:// base URL, through CONNECT: the proxy sees
    /// where the tunnel goes and TLS records, never the request or the key.
    @Test(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed"))
    func anHTTPSBaseURLMayUseHTTPSProxyAndTheKeyStaysInsideTLS() throws {
        let workspace = Workspace()
        let authority = try TestAuthority(directory: workspace.path)
        let server = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { server.stop() }
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let finished = try botsi(
            Self.arguments(workspace, server, authority), key: Self.key, in: workspace,
            environment: Self.environment(proxy: proxy.url))
        #expect(finished.status == 75, "the HTML 200 leaves the row pending; stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("through the proxy \(proxy.url) (https_proxy; a CONNECT tunnel"))
        let seen = String(decoding: proxy.received, as: UTF8.self)
        #expect(seen.hasPrefix("CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\n"), "proxy saw: \(seen.prefix(200))")
        #expect(!seen.contains("Authorization"), "the request crossed the proxy in clear")
        #expect(!Self.echoesTheKey(proxy.received))
        #expect(waitUntil { server.received.contains("Authorization: \(Self.key)") }, "the server got the key")
    }

    @Test(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed"))
    func noProxyAndAllProxyAloneGoDirect() throws {
        let workspace = Workspace()
        let authority = try TestAuthority(directory: workspace.path)
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let cases: [(environment: [String: String], says: String)] = [
            (Self.environment(proxy: proxy.url, ["NO_PROXY": "example.org,127.0.0.1"]), "NO_PROXY lists 127.0.0.1"),
            (
                Self.environment(proxy: nil, ["ALL_PROXY": proxy.url, "http_proxy": proxy.url]),
                "ALL_PROXY is not used"
            ),
        ]
        for (environment, says) in cases {
            let server = try TLSServer(authority: authority, reply: Self.htmlReply)
            defer { server.stop() }
            let finished = try botsi(
                Self.arguments(workspace, server, authority), key: Self.key, in: workspace, environment: environment)
            #expect(finished.status == 75, "stderr: \(finished.stderr)")
            #expect(finished.stderr.contains("directly ("), "stderr: \(finished.stderr)")
            #expect(finished.stderr.contains(says), "stderr: \(finished.stderr)")
            #expect(waitUntil { server.received.contains("POST /v2/purchases/apple-store/restore") })
        }
        #expect(proxy.connections == 0)
    }

    /// `--proxy URL` takes the place of HTTPS_PROXY for an https:// base URL; `--no-proxy` ignores
    /// HTTPS_PROXY; a plain http:// base URL ignores `--proxy` and says so.
    @Test(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed"))
    func proxyAndNoProxyOnTheCommandLine() throws {
        let workspace = Workspace()
        let authority = try TestAuthority(directory: workspace.path)
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let unused = try RecordingProxy()
        defer { unused.stop() }

        let server = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { server.stop() }
        let through = try botsi(
            Self.arguments(workspace, server, authority) + ["--proxy", proxy.url], key: Self.key, in: workspace,
            environment: Self.environment(proxy: unused.url))
        #expect(through.status == 75, "stderr: \(through.stderr)")
        #expect(through.stderr.contains("through the proxy \(proxy.url) (--proxy; a CONNECT tunnel"))
        #expect(String(decoding: proxy.received, as: UTF8.self).hasPrefix("CONNECT 127.0.0.1:\(server.port) "))
        #expect(!Self.echoesTheKey(proxy.received))

        let direct = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { direct.stop() }
        let noProxy = try botsi(
            Self.arguments(workspace, direct, authority) + ["--no-proxy"], key: Self.key, in: workspace,
            environment: Self.environment(proxy: unused.url))
        #expect(noProxy.status == 75, "stderr: \(noProxy.stderr)")
        #expect(noProxy.stderr.contains("directly (--no-proxy)"))
        #expect(waitUntil { direct.received.contains("POST ") })
        #expect(unused.connections == 0)

        let simulator = try startSimulator { $0.keys = [Self.key] }
        defer { simulator.stop() }
        let plain = try botsi(
            runArguments([workspace.csv(Pair.generate(2))], workspace, simulator, ["--proxy", proxy.url]),
            key: Self.key, in: workspace, environment: Self.environment(proxy: nil))
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        #expect(plain.stderr.contains("not using --proxy"))
        #expect(proxy.connections == 1, "only the https run went through it")

        let withPassword = try botsi(
            Self.arguments(workspace, server, authority) + ["--proxy", "http://me:hunter2@127.0.0.1:\(proxy.port)"],
            key: Self.key, in: workspace, environment: Self.environment(proxy: nil))
        #expect(withPassword.status == 64, "stderr: \(withPassword.stderr)")
        #expect(withPassword.stderr.contains("HTTPS_PROXY") && !withPassword.stderr.contains("hunter2"))
        let both = try botsi(
            Self.arguments(workspace, server, authority) + ["--proxy", proxy.url, "--no-proxy"], key: Self.key,
            in: workspace, environment: Self.environment(proxy: nil))
        #expect(both.status == 64 && both.stderr.contains("contradict"), "stderr: \(both.stderr)")
    }

    /// libcurl opens SSLKEYLOGFILE when it initializes and appends every TLS session's secrets to it
    /// (mode 0644): whoever reads that file decrypts the traffic, key included.
    @Test(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed"))
    func sslKeyLogFileIsIgnored() throws {
        let workspace = Workspace()
        let authority = try TestAuthority(directory: workspace.path)
        let server = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { server.stop() }
        let keyLog = workspace.file("tls-secrets.log")
        let finished = try botsi(
            Self.arguments(workspace, server, authority), key: Self.key, in: workspace,
            environment: Self.environment(proxy: nil, ["SSLKEYLOGFILE": keyLog]))
        #expect(finished.status == 75, "stderr: \(finished.stderr)")
        #expect(waitUntil { server.received.contains("POST ") }, "a TLS session was made")
        #expect(!FileManager.default.fileExists(atPath: keyLog), "TLS secrets were written to SSLKEYLOGFILE")
    }

    /// A system OpenSSL configuration that allows TLS 1.0/1.1 (as old ones did) does not lower the
    /// client's floor: it asks for TLS 1.2 at least, so a TLS 1.1 server fails the handshake.
    @Test(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed"))
    func tlsBelowOnePointTwoIsRefusedEvenWhenOpenSSLWouldAllowIt() throws {
        let workspace = Workspace()
        let authority = try TestAuthority(directory: workspace.path)
        let lenient = workspace.write(
            "openssl-lenient.cnf",
            """
            openssl_conf = default_conf
            [default_conf]
            ssl_conf = ssl_sect
            [ssl_sect]
            system_default = system_default_sect
            [system_default_sect]
            MinProtocol = TLSv1
            CipherString = DEFAULT@SECLEVEL=0

            """)
        let environment = Self.environment(proxy: nil, ["OPENSSL_CONF": lenient])
        let old = try TLSServer(
            authority: authority, reply: Self.htmlReply, extraArguments: ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
        defer { old.stop() }
        let refused = try botsi(
            Self.arguments(workspace, old, authority), key: Self.key, in: workspace, environment: environment)
        #expect(refused.status == 69, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("TLS with the server failed"), "stderr: \(refused.stderr)")
        #expect(!old.received.contains("POST "), "the request went out over TLS 1.1")
        // The same configuration against a TLS 1.2 server works: what failed was the protocol version.
        let current = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { current.stop() }
        let accepted = try botsi(
            Self.arguments(workspace, current, authority), key: Self.key, in: workspace, environment: environment)
        #expect(accepted.status == 75, "stderr: \(accepted.stderr)")
        #expect(waitUntil { current.received.contains("POST ") })
    }

    @Test func skippingTLSVerificationIsSaidLoudly() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.keys = [Self.key] }
        defer { simulator.stop() }
        let finished = try botsi(
            runArguments([workspace.csv(Pair.generate(2))], workspace, simulator, ["--insecure-skip-tls-verify"]),
            key: Self.key, in: workspace, environment: Self.environment(proxy: nil))
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains("WARNING: --insecure-skip-tls-verify: the server's certificate is NOT checked"))
        let second = Workspace()
        let quiet = try botsi(
            runArguments([second.csv(Pair.generate(2))], second, simulator, ["--insecure-skip-tls-verify", "--quiet"]),
            key: Self.key, in: second, environment: Self.environment(proxy: nil))
        #expect(quiet.stderr.contains("WARNING: --insecure-skip-tls-verify"), "a warning survives --quiet")
        #expect(!quiet.stderr.contains("sending to"), "the start line does not")
    }

    /// The reproduction: a truncated or upper-cased echo of the key in a reply reached stderr
    /// and the journal. Every reply text is scrubbed before it goes anywhere.
    @Test func echoesOfTheKeyInRepliesReachNeitherStderrNorTheJournalNorAReport() throws {
        let workspace = Workspace()
        let key = Self.key
        typealias Reply = SimulatorScenario.FixedReply
        let simulator = try startSimulator { options in
            options.keys = [key]
            options.scenario = SimulatorScenario(
                createUnknownProfiles: true, unlistedTransactions: .rule,
                replies: [
                    Reply(
                        originalTransactionId: "2000000000000012", status: 422, code: "unprocessable",
                        message: "key \(key.uppercased()) is not allowed here"),
                    Reply(
                        originalTransactionId: "2000000000000022", status: 500,
                        message: "upstream saw \(key.dropFirst(4).prefix(14))…"),
                    Reply(
                        originalTransactionId: "2000000000000032", status: 401,
                        message: "unknown key \(key.dropFirst(9).prefix(12).uppercased())"),
                ], forbiddenKeys: [])
        }
        defer { simulator.stop() }
        let input = workspace.csv([
            Pair("echo-1", "2000000000000012"), Pair("echo-2", "2000000000000022"), Pair("echo-3", "2000000000000032"),
        ])
        let finished = try botsi(
            runArguments([input], workspace, simulator, ["--concurrency", "1", "--max-attempts", "1"]), key: key,
            in: workspace, environment: Self.environment(proxy: nil))
        #expect(finished.status == 77, "the 401 stops the run; stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("[redacted]"), "stderr: \(finished.stderr)")
        let report = try botsi(
            ["report", "--journal", workspace.journal, "--format", "csv"], key: nil, in: workspace)
        #expect(report.stdout.contains("[redacted]"), "report: \(report.stdout)")
        var outputs: [(String, Data)] = [
            ("stderr", Data(finished.stderr.utf8)), ("stdout", Data(finished.stdout.utf8)),
            ("report", Data(report.stdout.utf8)),
        ]
        for suffix in ["", "-wal"] {
            if let bytes = FileManager.default.contents(atPath: workspace.journal + suffix) {
                outputs.append(("journal\(suffix)", bytes))
            }
        }
        for (name, bytes) in outputs {
            #expect(!Self.echoesTheKey(bytes), "an echo of the key reached \(name)")
        }
    }

    private static let htmlReply =
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>"

    private static func arguments(_ workspace: Workspace, _ server: TLSServer, _ authority: TestAuthority)
        -> [String]
    {
        let input = workspace.csv([Pair("tls-1", "2000000000000002")], name: "tls-\(UUID().uuidString).csv")
        return [
            "run", input, "--journal", workspace.file("tls-\(UUID().uuidString).sqlite"), "--base-url",
            server.baseURL, "--cacert", authority.certificatePath, "--max-attempts", "1", "--timeout", "10",
        ]
    }
}
