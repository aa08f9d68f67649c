import Foundation
import Glibc

/// Path of the restore route, appended to the base URL.
public let restoreEndpointPath = "/v2/purchases/apple-store/restore"

/// Everything the client needs to talk to Botsi. The key is held here only to build the
/// `Authorization` header; no description of this type or of any error includes it.
public struct ClientConfiguration: Sendable {
    public var baseURL: String
    public var apiKey: String
    public var userAgent: String
    /// Seconds allowed for a whole request (`CURLOPT_TIMEOUT_MS`), counted from when the
    /// request is handed to libcurl.
    public var requestTimeout: Double = 30
    public var connectTimeout: Double = 10
    /// Connection cap for the multi handle, total and per host, and so the transfers in flight at
    /// once; the runner sets it to its concurrency. Requests submitted beyond it wait in the client,
    /// first in first out, for the next connection a transfer frees.
    public var maxConnections: Int = 8
    /// A PEM bundle for a private CA (`--cacert`).
    public var caCertificatePath: String? = nil
    /// Turns TLS verification off; only ever set from a flag whose name says insecure. The client
    /// says so loudly when it starts.
    public var insecureSkipTLSVerify: Bool = false
    /// Whether an `https://` base URL may be reached through a proxy (a plain `http://` one never is).
    public var proxy: ProxySetting = .environment
    /// `--retry-after-cap`: a `Retry-After` above it is said once per client (the policy caps it).
    public var retryAfterCap: Double? = nil
    /// A reply body larger than this is not read to the end: a 200 that big counts as
    /// `invalid_response` (retryable), an error status as `http_<status>`.
    public var maxResponseBytes: Int = 1 << 20

    public init(baseURL: String, apiKey: String, userAgent: String) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.userAgent = userAgent
    }
}

extension ClientConfiguration: CustomStringConvertible {
    /// A summary for logs: never the key.
    public var description: String {
        "ClientConfiguration(baseURL: \(baseURL), userAgent: \(userAgent), requestTimeout: \(requestTimeout), "
            + "connectTimeout: \(connectTimeout), maxConnections: \(maxConnections), "
            + "caCertificatePath: \(caCertificatePath ?? "none"), insecureSkipTLSVerify: \(insecureSkipTLSVerify), "
            + "proxy: \(proxyDescription))"
    }

    /// Never the proxy URL itself: it may carry a password.
    private var proxyDescription: String {
        switch proxy {
        case .environment: "environment"
        case .none: "none"
        case .url: "given"
        }
    }
}

/// A problem with the client's setup, in one sentence that says what to do.
public struct ClientError: Error, Sendable, CustomStringConvertible {
    /// Whose the failure is: the settings (the user's to fix), or the machine's.
    public enum Kind: Sendable, Equatable {
        /// The configuration cannot work: a base URL, key, timeout, CA file or proxy to fix.
        case configuration
        /// The machine could not give the client what it needs (memory, descriptors, a thread,
        /// libcurl's own set-up); the message names the resource. Nothing the user typed is wrong.
        case localResource
    }

    public let kind: Kind
    public let message: String

    public init(_ message: String, kind: Kind = .configuration) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// Validates the base URL: scheme http or https only; `http://` is refused unless the host is
/// loopback (127.0.0.0/8, ::1, localhost). Returns the URL with a lowercased scheme and host and
/// without trailing slashes.
public func validateBaseURL(_ url: String) throws(ClientError) -> String {
    let text = url.trimmingCharacters(in: .whitespaces)
    guard !text.isEmpty else {
        throw ClientError("The base URL is empty; give one like https://api.botsi.com.")
    }
    guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F })
    else {
        throw ClientError("The base URL contains spaces or control characters; give one like https://api.botsi.com.")
    }
    guard let schemeEnd = text.range(of: "://") else {
        throw ClientError("The base URL has no scheme; give one like https://api.botsi.com.")
    }
    let scheme = text[..<schemeEnd.lowerBound].lowercased()
    guard scheme == "https" || scheme == "http" else {
        throw ClientError(
            "The base URL scheme '\(scheme)' is not supported; use https:// (http:// only for a loopback host).")
    }
    let rest = text[schemeEnd.upperBound...]
    guard !rest.contains("?"), !rest.contains("#") else {
        throw ClientError("The base URL must not have a query or fragment; give only scheme, host, port and path.")
    }
    let authority = rest.prefix { $0 != "/" }
    var path = String(rest[authority.endIndex...])
    while path.hasSuffix("/") { path.removeLast() }
    guard !authority.contains("@") else {
        // Never echo it: user info is where credentials would sit.
        throw ClientError(
            "The base URL must not carry a user name or password; the key comes from the environment variable.")
    }
    // The route is appended to the base URL: one that already holds it (or its version) sent every
    // request to `/v2/v2/…`, which a server answers 404 `not_found`, the answer for a profile it
    // does not know: every row of the input recorded as profile_not_found.
    let lowered = path.lowercased()
    if lowered.hasSuffix("/v2") || lowered.contains("/v2/purchases") {
        throw ClientError(
            "The base URL ends in '\(path)'; give the API's root (like https://api.botsi.com): "
                + "\(restoreEndpointPath) is added to it.")
    }
    let (host, port) = try splitHostAndPort(authority)
    if scheme == "http" && !isLoopbackHost(host) {
        throw ClientError(
            "Refusing plain http:// to \(host): the key would travel unencrypted; use https:// "
                + "(http:// is allowed only for a loopback host such as 127.0.0.1 or localhost).")
    }
    let normalizedHost = host.lowercased()
    let portSuffix = port.map { ":\($0)" } ?? ""
    return "\(scheme)://\(normalizedHost)\(portSuffix)\(path)"
}

func splitHostAndPort(_ authority: Substring) throws(ClientError) -> (host: String, port: Int?) {
    var host: Substring
    var portText: Substring?
    if authority.hasPrefix("[") {
        guard let close = authority.firstIndex(of: "]") else {
            throw ClientError("The base URL has an unclosed IPv6 address bracket.")
        }
        host = authority[...close]
        let after = authority[authority.index(after: close)...]
        if !after.isEmpty {
            guard after.hasPrefix(":") else { throw ClientError("The base URL has text after its IPv6 address.") }
            portText = after.dropFirst()
        }
    } else if let colon = authority.lastIndex(of: ":") {
        host = authority[..<colon]
        portText = authority[authority.index(after: colon)...]
    } else {
        host = authority
    }
    guard !host.isEmpty, host != "[]" else {
        throw ClientError("The base URL has no host; give one like https://api.botsi.com.")
    }
    var port: Int?
    if let portText {
        guard let value = Int(portText), portText.allSatisfy(\.isASCII), (1...65535).contains(value) else {
            throw ClientError("The base URL port must be a number from 1 to 65535.")
        }
        port = value
    }
    return (String(host), port)
}

/// True for 127.0.0.0/8 in dotted-quad form, `[::1]` (also as IPv4-mapped 127.0.0.0/8), and
/// `localhost`, which the client pins to 127.0.0.1 and ::1 (`CURLOPT_RESOLVE`) so that no resolver
/// is asked. `localhost.` and every other name are not loopback: DNS could answer anything.
func isLoopbackHost(_ host: String) -> Bool {
    let lower = host.lowercased()
    if lower == "localhost" { return true }
    if lower.hasPrefix("[") && lower.hasSuffix("]") {
        var address = in6_addr()
        let inner = String(lower.dropFirst().dropLast())
        guard inet_pton(AF_INET6, inner, &address) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        return bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }
    let octets = lower.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4 else { return false }
    for octet in octets {
        guard !octet.isEmpty, octet.count <= 3, octet.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(octet), value <= 255
        else { return false }
    }
    return octets[0] == "127"
}
