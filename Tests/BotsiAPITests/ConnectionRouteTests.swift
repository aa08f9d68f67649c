import Foundation
import Testing

@testable import BotsiAPI

private func route(
    _ baseURL: String, _ setting: ProxySetting = .environment, _ environment: [String: String] = [:]
) throws -> ConnectionRoute {
    try connectionRoute(baseURL: baseURL, setting: setting, environment: environment)
}

/// Every variable libcurl would read on its own, all pointing at one proxy.
private let everyProxyVariable = Dictionary(uniqueKeysWithValues: proxyVariables.map { ($0, "http://10.9.9.9:3128") })

@Suite struct ConnectionRouteTests {
    /// The issue's reproduction at the route level: with http_proxy or ALL_PROXY set, libcurl sent
    /// `Authorization: <key>` to the proxy in clear. A plain http:// base URL now never has a proxy.
    @Test(arguments: [.environment, .url("http://10.9.9.9:3128")] as [ProxySetting])
    func plainHTTPNeverUsesAProxy(setting: ProxySetting) throws {
        let chosen = try route("http://127.0.0.1:8080", setting, everyProxyVariable)
        #expect(chosen.curlProxy == "", "an empty CURLOPT_PROXY also stops libcurl reading the environment")
        #expect(chosen.proxyForDisplay == nil)
        #expect(chosen.description.hasPrefix("directly (plain http:// never goes through a proxy"))
        #expect(chosen.description.contains("ALL_PROXY"), "the start line names what it ignores")
    }

    /// A request without the key (the metrics push) is routed by the same rules, to any host.
    @Test func aPublishingRequestTakesTheSameRoutesToAnyHost() throws {
        let plain = try publishingRoute(
            url: "http://user:secret@pushgateway.corp:9091/metrics/job/x", setting: .environment,
            environment: everyProxyVariable)
        #expect(plain.curlProxy == "" && plain.description.hasPrefix("directly (plain http:// never goes through"))
        #expect(!plain.description.contains("secret"))
        let tunnelled = try publishingRoute(
            url: "https://pushgateway.corp/metrics", setting: .environment, environment: ["HTTPS_PROXY": "p:3128"])
        #expect(tunnelled.curlProxy == "http://p:3128" && tunnelled.description.contains("CONNECT tunnel"))
        let listed = try publishingRoute(
            url: "https://PushGateway.corp:9091", setting: .environment,
            environment: ["HTTPS_PROXY": "p:3128", "NO_PROXY": ".corp"])
        #expect(listed.curlProxy == "" && listed.description == "directly (NO_PROXY lists .corp)")
        let none = try publishingRoute(
            url: "https://pushgateway.corp", setting: ProxySetting(proxy: "http://p:1", noProxy: true),
            environment: everyProxyVariable)
        #expect(none.curlProxy == "" && none.description == "directly (--no-proxy)")
        let pinned = try publishingRoute(url: "http://localhost:9091/x", setting: .environment, environment: [:])
        #expect(pinned.pinnedAddresses == ["localhost:9091:127.0.0.1,::1"])
        #expect(throws: ClientError.self) {
            try publishingRoute(url: "ftp://pushgateway.corp", setting: .environment, environment: [:])
        }
    }

    @Test func httpsGoesThroughHTTPSProxyFromTheEnvironment() throws {
        for variable in ["HTTPS_PROXY", "https_proxy"] {
            let chosen = try route("https://api.botsi.com", .environment, [variable: "proxy.corp:3128"])
            #expect(chosen.curlProxy == "http://proxy.corp:3128")
            #expect(chosen.description.hasPrefix("through the proxy http://proxy.corp:3128 (\(variable);"))
        }
        let lowerFirst = try route(
            "https://api.botsi.com", .environment, ["https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2"])
        #expect(lowerFirst.proxyForDisplay == "http://a:1", "libcurl's order: lower case first")
    }

    @Test func httpsIgnoresAllProxyAndHttpProxyAndSaysSo() throws {
        let chosen = try route(
            "https://api.botsi.com", .environment, ["ALL_PROXY": "http://10.9.9.9:1", "http_proxy": "http://x:1"])
        #expect(chosen.curlProxy == "")
        #expect(chosen.description.contains("ALL_PROXY is not used"))
    }

    @Test func credentialsReachCurlButNeverTheStartLine() throws {
        let chosen = try route("https://api.botsi.com", .environment, ["HTTPS_PROXY": "http://me:s3cret@proxy:8080/"])
        #expect(chosen.curlProxy == "http://me:s3cret@proxy:8080/")
        #expect(!chosen.description.contains("s3cret"))
        #expect(chosen.proxyForDisplay == "http://proxy:8080")
    }

    /// Whatever the base URL: a reviewer saw an http:// run accept it, record it in the journal and
    /// repeat it in its advice.
    @Test(arguments: ["https://api.botsi.com", "http://127.0.0.1:8080"])
    func anExplicitProxyWithCredentialsIsRefusedBecauseArgvIsPublic(baseURL: String) {
        #expect {
            try route(baseURL, .url("http://me:s3cret@proxy:8080"))
        } throws: { error in
            let message = (error as? ClientError)?.message ?? ""
            return message.contains("HTTPS_PROXY") && !message.contains("s3cret")
        }
    }

    /// Only the credentials are refused whatever the base URL: a --proxy that does not parse is
    /// still no matter to a plain http:// run, which never uses one.
    @Test func anUnusableProxyIsNoMatterToPlainHTTP() throws {
        for proxy in ["not a url", "proxy:abc", "http://"] {
            #expect(try route("http://127.0.0.1:8080", .url(proxy)).curlProxy == "", "\(proxy)")
        }
    }

    @Test func noProxyAndTheNoProxyListBothGoDirect() throws {
        #expect(try route("https://api.botsi.com", .none, ["HTTPS_PROXY": "http://p:1"]).curlProxy == "")
        let cases: [(String, String)] = [
            ("https://api.botsi.com", "botsi.com"), ("https://api.botsi.com", ".botsi.com"),
            ("https://api.botsi.com", "example.org, API.BOTSI.COM"), ("https://api.botsi.com", "*"),
            ("https://10.1.2.3:8443", "10.0.0.0/8"), ("https://[::1]:8443", "::1"),
            ("https://127.0.0.1:8443", "localhost,127.0.0.1"),
        ]
        for (baseURL, list) in cases {
            for setting in [.environment, .url("http://p:1")] as [ProxySetting] {
                let chosen = try route(baseURL, setting, ["HTTPS_PROXY": "http://p:1", "NO_PROXY": list])
                #expect(chosen.curlProxy == "", "\(baseURL) with NO_PROXY=\(list)")
                #expect(chosen.description.contains("NO_PROXY lists"))
            }
        }
        let notCovered: [(String, String)] = [
            ("https://api.botsi.com", "i.botsi.com"), ("https://api.botsi.com", "botsi.co"),
            ("https://11.1.2.3", "10.0.0.0/8"), ("https://api.botsi.com", ""),
        ]
        for (baseURL, list) in notCovered {
            let chosen = try route(baseURL, .environment, ["HTTPS_PROXY": "http://p:1", "no_proxy": list])
            #expect(chosen.curlProxy == "http://p:1", "\(baseURL) with NO_PROXY=\(list)")
        }
    }

    @Test(arguments: ["ftp://p:21", "http://p:99999", "http://p/path", "http://p 1:80", ":8080"])
    func unusableProxiesAreRefusedNamingTheirSource(proxy: String) {
        #expect {
            try route("https://api.botsi.com", .environment, ["HTTPS_PROXY": proxy])
        } throws: { error in
            (error as? ClientError)?.message.hasPrefix("The proxy in HTTPS_PROXY") ?? false
        }
    }

    /// `localhost` is answered by the client, never by DNS or /etc/hosts.
    @Test func localhostIsPinnedToLoopbackAddresses() throws {
        #expect(try route("http://localhost:9000").pinnedAddresses == ["localhost:9000:127.0.0.1,::1"])
        #expect(try route("http://LocalHost").pinnedAddresses == ["localhost:80:127.0.0.1,::1"])
        #expect(try route("https://localhost").pinnedAddresses == ["localhost:443:127.0.0.1,::1"])
        #expect(try route("http://127.0.0.1:9000").pinnedAddresses == [])
        #expect(try route("https://api.botsi.com").pinnedAddresses == [])
    }
}

@Suite struct KeyRedactorTests {
    static let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"

    @Test func theWholeKeyATruncatedOneAndAnUpperCasedOneAreRedacted() {
        let redactor = KeyRedactor(key: Self.key)
        #expect(redactor.clean("bad key \(Self.key)!") == "bad key [redacted]!")
        #expect(redactor.clean("bad key SK_LIVE_4EC39HQLYJWD…") == "bad key [redacted]…")
        #expect(redactor.clean("tail: jwdarjtt1zdp7dc") == "tail: [redacted]")
        #expect(redactor.clean("twice \(Self.key) and \(Self.key.prefix(13))") == "twice [redacted] and [redacted]")
    }

    @Test func fewerThanTwelveCharactersOfTheKeyAreLeftAlone() {
        let redactor = KeyRedactor(key: Self.key)
        #expect(redactor.redact("sk_live_4eC is a prefix everyone has") == nil)
        #expect(redactor.clean("sk_live_4eC3") == "[redacted]", "twelve characters are enough")
        #expect(redactor.redact("") == nil)
        #expect(redactor.redact("Apple has no subscription for originalTransactionId: 2000000000000002") == nil)
    }

    @Test func aShortKeyIsRedactedOnlyWhole() {
        let redactor = KeyRedactor(key: "abc123")
        #expect(redactor.clean("xxABC123yy") == "xx[redacted]yy")
        #expect(redactor.redact("abc12") == nil)
    }

    /// Every kind of reply that carries the server's text has it scrubbed, not only failures:
    /// a 404's or a 401's message is printed and recorded as well.
    @Test func everyKindOfReplyHasItsMessageScrubbed() {
        let redactor = KeyRedactor(key: Self.key)
        let echo = "key \(Self.key.dropFirst(2))"
        #expect(redactor.scrub(.nothingToRestore(message: echo)) == .nothingToRestore(message: "key [redacted]"))
        #expect(redactor.scrub(.profileNotFound(message: echo)) == .profileNotFound(message: "key [redacted]"))
        #expect(
            redactor.scrub(.rejected(code: "bad_request", message: echo))
                == .rejected(code: "bad_request", message: "key [redacted]"))
        #expect(
            redactor.scrub(.fatal(.unauthorized, httpStatus: 401, message: echo))
                == .fatal(.unauthorized, httpStatus: 401, message: "key [redacted]"))
        #expect(redactor.scrub(.nothingToRestore(message: nil)) == .nothingToRestore(message: nil))
    }

    @Test func repliesAreScrubbedInMessagesCodesAndSnapshots() {
        let redactor = KeyRedactor(key: Self.key)
        let echo = Self.key.uppercased().dropFirst(3).prefix(14)
        #expect(
            redactor.scrub(.failed(code: "x\(echo)", httpStatus: 422, message: "m \(echo)"))
                == .failed(code: "http_422", httpStatus: 422, message: "m [redacted]"))
        #expect(
            redactor.scrub(.retryable(code: "rate_limited", httpStatus: 429, retryAfter: 3, message: "\(echo)"))
                == .retryable(code: "rate_limited", httpStatus: 429, retryAfter: 3, message: "[redacted]"))
        let snapshot = ProfileSnapshot(
            profileId: "p-1", state: "state \(echo)",
            accessLevels: ["lvl\(echo)": AccessLevelSnapshot(isActive: true, sourceProductId: "\(echo)")])
        guard case .restored(let scrubbed) = redactor.scrub(.restored(snapshot)) else {
            Issue.record("a 200 stays a 200")
            return
        }
        #expect(scrubbed.state == "state [redacted]")
        #expect(scrubbed.accessLevels.keys.sorted() == ["lvl[redacted]"])
        #expect(scrubbed.accessLevels.values.first?.sourceProductId == "[redacted]")
        let plain = ProfileSnapshot(profileId: "p-1", state: "subscribed", accessLevels: [:])
        #expect(redactor.scrub(.restored(plain)) == .restored(plain))
    }
}
