import Foundation
import Glibc

/// Whether requests may go through a proxy. libcurl is never left to read the environment itself:
/// the route is decided here and set explicitly, so the key only ever goes where the base URL says.
public enum ProxySetting: Sendable, Equatable {
    /// `HTTPS_PROXY`/`https_proxy` for an `https://` base URL, minus the hosts `NO_PROXY` lists.
    case environment
    /// Never a proxy (`--no-proxy`).
    case none
    /// This proxy for an `https://` base URL (`--proxy URL`), minus the hosts `NO_PROXY` lists.
    case url(String)
}

extension ProxySetting {
    /// `--no-proxy` and `--proxy URL` as the run's options hold them.
    public init(proxy: String?, noProxy: Bool) {
        self = noProxy ? .none : proxy.map { .url($0) } ?? .environment
    }
}

/// How the client reaches the server: directly or through one proxy, and why.
public struct ConnectionRoute: Sendable, Equatable, CustomStringConvertible {
    /// The value for `CURLOPT_PROXY`: empty for a direct connection (which also stops libcurl from
    /// reading `http_proxy`, `ALL_PROXY` and the like), else the proxy URL with any credentials.
    let curlProxy: String
    /// The proxy as it may be shown: scheme, host and port, never a user name or password.
    public let proxyForDisplay: String?
    /// Why this route, for the start line.
    public let reason: String
    /// `CURLOPT_RESOLVE` entries: `localhost` is answered here, never by DNS.
    let pinnedAddresses: [String]

    public var description: String {
        if let proxyForDisplay { return "through the proxy \(proxyForDisplay) (\(reason))" }
        return "directly (\(reason))"
    }
}

/// The route for `baseURL` (already validated) under `setting`, reading proxy variables from
/// `environment`. A plain `http://` base URL (loopback only) never uses a proxy: the key would
/// cross it in clear. An `https://` one may, through a CONNECT tunnel, inside which the key stays
/// encrypted end to end.
public func connectionRoute(
    baseURL: String, setting: ProxySetting, environment: [String: String]
) throws(ClientError) -> ConnectionRoute {
    try route(
        to: BaseURLParts(validating: baseURL), setting: setting, environment: environment,
        plainReason: "plain http:// never goes through a proxy, the key would cross it in clear")
}

/// The route for a request that carries no key, such as the metrics push (`url` any http:// or
/// https:// URL, loopback or not), decided by the same rules: plain http:// never through a proxy,
/// https:// through `HTTPS_PROXY` or `--proxy` as a CONNECT tunnel unless `NO_PROXY` lists the host.
public func publishingRoute(
    url: String, setting: ProxySetting, environment: [String: String]
) throws(ClientError) -> ConnectionRoute {
    try route(
        to: BaseURLParts(anyHTTP: url), setting: setting, environment: environment,
        plainReason: "plain http:// never goes through a proxy")
}

private func route(
    to target: BaseURLParts, setting: ProxySetting, environment: [String: String], plainReason: String
) throws(ClientError) -> ConnectionRoute {
    let pins = target.host == "localhost" ? ["localhost:\(target.port):127.0.0.1,::1"] : []
    func direct(_ reason: String) -> ConnectionRoute {
        ConnectionRoute(curlProxy: "", proxyForDisplay: nil, reason: reason, pinnedAddresses: pins)
    }
    if setting == .none { return direct("--no-proxy") }
    // Whatever the base URL: argv is public, and the run records its options (a reviewer saw an
    // http:// run keep --proxy's password in the journal and repeat it in its advice).
    // (A --proxy that does not parse is refused below only where a proxy is used, as before.)
    if case .url(let url) = setting, (try? ProxyURL(url, source: "--proxy"))?.hasCredentials == true {
        throw ClientError(
            "--proxy must not carry a user name or password: every user can read a command line with ps. "
                + "Put the proxy with its credentials in HTTPS_PROXY instead.")
    }
    if target.scheme == "http" {
        var ignored = proxyVariables.filter { !(environment[$0] ?? "").isEmpty }
        if case .url = setting { ignored.insert("--proxy", at: 0) }
        let note = ignored.isEmpty ? "" : "; not using " + ignored.joined(separator: ", ")
        return direct(plainReason + note)
    }
    let candidate: (url: String, source: String)
    if case .url(let url) = setting {
        candidate = (url, "--proxy")
    } else if let variable = ["https_proxy", "HTTPS_PROXY"].first(where: { !(environment[$0] ?? "").isEmpty }) {
        candidate = (environment[variable]!, variable)
    } else {
        let unused = ["all_proxy", "ALL_PROXY"].filter { !(environment[$0] ?? "").isEmpty }
        let note = unused.isEmpty ? "" : "; \(unused.joined(separator: ", ")) is not used, set HTTPS_PROXY or --proxy"
        return direct("no HTTPS_PROXY" + note)
    }
    let proxy = try ProxyURL(candidate.url, source: candidate.source)
    if let noProxy = ["no_proxy", "NO_PROXY"].lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }),
        let entry = noProxyMatch(host: target.host, list: noProxy)
    {
        return direct("NO_PROXY lists \(entry)")
    }
    return ConnectionRoute(
        curlProxy: proxy.forCurl, proxyForDisplay: proxy.forDisplay,
        reason: "\(candidate.source); a CONNECT tunnel, the key stays inside TLS", pinnedAddresses: pins)
}

/// Every variable libcurl would read for a proxy on its own.
let proxyVariables = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]

/// Scheme, host and port of a base URL that `validateBaseURL` accepted.
struct BaseURLParts {
    let scheme: String
    /// Lowercased; an IPv6 address keeps its brackets.
    let host: String
    let port: Int

    init(validating url: String) throws(ClientError) {
        let normalized = try validateBaseURL(url)
        let schemeEnd = normalized.range(of: "://")!
        scheme = String(normalized[..<schemeEnd.lowerBound])
        let authority = normalized[schemeEnd.upperBound...].prefix { $0 != "/" }
        let (host, port) = try splitHostAndPort(authority)
        self.host = host
        self.port = port ?? (scheme == "https" ? 443 : 80)
    }

    /// Any http:// or https:// URL, whatever its host (no key travels to it); a user name and
    /// password before the host are skipped.
    init(anyHTTP url: String) throws(ClientError) {
        let schemeEnd = url.range(of: "://")
        let scheme = schemeEnd.map { url[..<$0.lowerBound].lowercased() }
        guard let schemeEnd, let scheme, scheme == "http" || scheme == "https" else {
            throw ClientError("The URL must start with http:// or https://.")
        }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let (host, port) = try splitHostAndPort(authority)
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port ?? (scheme == "https" ? 443 : 80)
    }
}

/// A proxy URL from the environment or `--proxy`: `[scheme://][user:password@]host[:port][/]`.
struct ProxyURL {
    static let schemes: Set<String> = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]
    let forCurl: String
    let forDisplay: String
    let hasCredentials: Bool

    init(_ text: String, source: String) throws(ClientError) {
        let value = text.trimmingCharacters(in: .whitespaces)
        guard !value.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw ClientError("The proxy in \(source) contains spaces or control characters.")
        }
        var scheme = "http"
        var rest = Substring(value)
        if let schemeEnd = value.range(of: "://") {
            scheme = value[..<schemeEnd.lowerBound].lowercased()
            rest = value[schemeEnd.upperBound...]
        }
        guard Self.schemes.contains(scheme) else {
            throw ClientError(
                "The proxy in \(source) has the scheme '\(scheme)'; use http://, https://, socks5h:// (or socks4, socks5)."
            )
        }
        var authority = rest.prefix { $0 != "/" }
        guard rest.dropFirst(authority.count).allSatisfy({ $0 == "/" }) else {
            throw ClientError("The proxy in \(source) must be scheme://host:port, without a path.")
        }
        hasCredentials = authority.contains("@")
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let host: String
        let port: Int?
        do {
            (host, port) = try splitHostAndPort(authority)
        } catch {
            throw ClientError("The proxy in \(source) must be scheme://host:port, with a port from 1 to 65535.")
        }
        let portSuffix = port.map { ":\($0)" } ?? ""
        forDisplay = "\(scheme)://\(host.lowercased())\(portSuffix)"
        forCurl = value.contains("://") ? value : "http://" + value
    }
}

/// The `NO_PROXY` entry that covers `host`, if any: `*`, a domain (with or without a leading dot)
/// that is the host or a parent of it, or an IP address or CIDR block holding an IP literal host.
func noProxyMatch(host: String, list: String) -> String? {
    let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
    let hostAddress = IPAddress(bareHost)
    for rawEntry in list.split(whereSeparator: { $0 == "," || $0 == " " }) {
        var entry = rawEntry.lowercased()
        if entry == "*" { return entry }
        if entry.hasPrefix("[") && entry.hasSuffix("]") { entry = String(entry.dropFirst().dropLast()) }
        if let hostAddress {
            let parts = entry.split(separator: "/", maxSplits: 1)
            guard let network = IPAddress(String(parts[0])) else { continue }
            let bits = parts.count == 2 ? Int(parts[1]) : nil
            if parts.count == 2 && bits == nil { continue }
            if hostAddress.isInside(network, prefixBits: bits) { return String(rawEntry) }
            continue
        }
        if entry.hasPrefix(".") { entry.removeFirst() }
        guard !entry.isEmpty else { continue }
        if bareHost == entry || bareHost.hasSuffix("." + entry) { return String(rawEntry) }
    }
    return nil
}

/// An IPv4 or IPv6 address as bytes, for `NO_PROXY` comparisons.
struct IPAddress {
    let bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// Whether the first `prefixBits` bits (all of them when nil) equal `network`'s.
    func isInside(_ network: IPAddress, prefixBits: Int?) -> Bool {
        guard bytes.count == network.bytes.count else { return false }
        let bits = min(max(prefixBits ?? bytes.count * 8, 0), bytes.count * 8)
        for index in 0..<bytes.count {
            let remaining = bits - index * 8
            if remaining <= 0 { break }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if bytes[index] & mask != network.bytes[index] & mask { return false }
        }
        return true
    }
}
