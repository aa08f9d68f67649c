import BotsiBasics
import Foundation

/// What the journal keeps of one access level, for audits.
public struct AccessLevelSnapshot: Sendable, Codable, Equatable {
    public var isActive: Bool?
    public var expiresAt: String?
    public var willRenew: Bool?
    public var sourceProductId: String?

    public init(isActive: Bool? = nil, expiresAt: String? = nil, willRenew: Bool? = nil, sourceProductId: String? = nil)
    {
        self.isActive = isActive
        self.expiresAt = expiresAt
        self.willRenew = willRenew
        self.sourceProductId = sourceProductId
    }
}

/// What the journal keeps of the Profile a restore returned.
public struct ProfileSnapshot: Sendable, Codable, Equatable {
    public var profileId: String?
    public var state: String?
    public var accessLevels: [String: AccessLevelSnapshot]

    public init(profileId: String? = nil, state: String? = nil, accessLevels: [String: AccessLevelSnapshot] = [:]) {
        self.profileId = profileId
        self.state = state
        self.accessLevels = accessLevels
    }
}

/// Why a reply stops the whole run: nothing a retry of this row could fix.
public enum FatalReason: String, Sendable {
    case unauthorized
    case forbidden
    case iosSettingsMissing = "ios_settings_missing"
    case tlsFailure = "tls_error"
}

/// The outcome of one restore attempt, already mapped onto the statuses of the outcome table.
public enum RestoreReply: Sendable, Equatable {
    /// 200: the Profile after the restore.
    case restored(ProfileSnapshot)
    /// 404 `nothing_to_restore`: Apple has no subscription for the transaction.
    case nothingToRestore(message: String?)
    /// 404 `not_found`: no such Profile in this app.
    case profileNotFound(message: String?)
    /// 400 `bad_request` about this row.
    case rejected(code: String, message: String?)
    /// Any other 3xx/4xx except 401, 403, 408 and 429: the reply's code or `http_<status>`.
    case failed(code: String, httpStatus: Int, message: String?)
    /// 408, 429, 5xx, timeouts, lost connections, DNS failures and unreadable 200 bodies.
    case retryable(code: String, httpStatus: Int?, retryAfter: Double?, message: String?)
    /// 401, 403, `No ios settings found` and TLS failures: the run must stop.
    case fatal(FatalReason, httpStatus: Int?, message: String)

    /// The code a data team filters on (`nil` for a restore).
    public var code: String? {
        switch self {
        case .restored: nil
        case .nothingToRestore: "nothing_to_restore"
        case .profileNotFound: "not_found"
        case .rejected(let code, _): code
        case .failed(let code, _, _): code
        case .retryable(let code, _, _, _): code
        case .fatal(let reason, _, _): reason.rawValue
        }
    }

    /// The human-readable message, if any.
    public var message: String? {
        switch self {
        case .restored: nil
        case .nothingToRestore(let message), .profileNotFound(let message): message
        case .rejected(_, let message), .failed(_, _, let message), .retryable(_, _, _, let message): message
        case .fatal(_, _, let message): message
        }
    }
}

/// The message Botsi sends with a 400 when the app's App Store connection is not set up.
let iosSettingsMissingMessage = "No ios settings found"

/// Pure classification of a complete HTTP reply: status, body bytes and the `Retry-After` delay in
/// seconds, already parsed (`parseRetryAfter`).
public func classifyReply(httpStatus: Int, body: [UInt8], retryAfter: Double?) -> RestoreReply {
    switch httpStatus {
    case 200..<300:
        if let profile = decodeRestoredProfile(body) { return .restored(profile) }
        return .retryable(
            code: "invalid_response", httpStatus: httpStatus, retryAfter: nil,
            message: "The server answered \(httpStatus) with a body that is not {\"ok\": true, \"data\": {...}}.")
    case 300..<400:
        // Redirects are never followed: the key must not travel to wherever they point.
        return .failed(
            code: "http_\(httpStatus)", httpStatus: httpStatus,
            message: "The server answered with a redirect (\(httpStatus)), which is not followed; check --base-url.")
    case 401:
        let server = decodeErrorReply(body)?.message
        return .fatal(
            .unauthorized, httpStatus: 401,
            message: "The server refused the API key (401"
                + (server.map { ": \(VisibleText.oneLine($0))" } ?? "")
                + "). Check the key in the environment variable (BOTSI_SECRET_KEY or the one --key-env names) "
                + "and that it holds the raw key, without a \"Bearer \" prefix.")
    case 403:
        let server = decodeErrorReply(body)?.message
        return .fatal(
            .forbidden, httpStatus: 403,
            message: "The server refused this request for the API key (403"
                + (server.map { ": \(VisibleText.oneLine($0))" } ?? "")
                + "). Check that the key in the environment variable belongs to this app and may restore purchases.")
    case 400..<500:
        return classifyClientError(httpStatus: httpStatus, body: body, retryAfter: retryAfter)
    case 500..<600:
        let reply = decodeErrorReply(body)
        return .retryable(
            code: reply?.code ?? "http_\(httpStatus)", httpStatus: httpStatus,
            retryAfter: retryAfter,
            message: reply?.message.map { VisibleText.oneLine($0) } ?? "The server answered \(httpStatus).")
    default:
        return .retryable(
            code: "invalid_response", httpStatus: httpStatus, retryAfter: nil,
            message: "The server answered with the unexpected HTTP status \(httpStatus).")
    }
}

private func classifyClientError(httpStatus: Int, body: [UInt8], retryAfter: Double?) -> RestoreReply {
    let reply = decodeErrorReply(body)
    let message = reply?.message.map { VisibleText.oneLine($0) }
    switch httpStatus {
    case 408, 429:
        return .retryable(
            code: reply?.code ?? "http_\(httpStatus)", httpStatus: httpStatus,
            retryAfter: retryAfter, message: message ?? "The server answered \(httpStatus).")
    case 400:
        if let message, isIOSSettingsMissing(message) {
            return .fatal(
                .iosSettingsMissing, httpStatus: 400,
                message: "Botsi answered \"\(iosSettingsMissingMessage)\": the app's App Store connection is not "
                    + "set up. Add the App Store Connect settings for this app in the Botsi dashboard, then rerun.")
        }
        if reply?.code == "bad_request" { return .rejected(code: "bad_request", message: message) }
        return .failed(code: reply?.code ?? "http_400", httpStatus: 400, message: message)
    case 404:
        switch reply?.code {
        case "nothing_to_restore": return .nothingToRestore(message: message)
        case "not_found": return .profileNotFound(message: message)
        default:
            // A 404 without Botsi's code is most likely a wrong --base-url, not a missing Profile.
            return .failed(
                code: reply?.code ?? "http_404", httpStatus: 404,
                message: message ?? "The server answered 404 without a Botsi error code; check --base-url.")
        }
    default:
        return .failed(code: reply?.code ?? "http_\(httpStatus)", httpStatus: httpStatus, message: message)
    }
}

/// The documented special case is matched leniently on case, surrounding space and a final period.
private func isIOSSettingsMissing(_ message: String) -> Bool {
    var text = message.trimmingCharacters(in: .whitespacesAndNewlines)
    if text.hasSuffix(".") { text.removeLast() }
    return text.lowercased() == iosSettingsMissingMessage.lowercased()
}

struct ErrorReply {
    var message: String?
    var code: String?
}

/// `{"error": "...", "code": "..."}`; nil when the body is not a JSON object (proxy HTML, empty).
/// A code that is empty or not a plain token counts as absent, so the caller falls back to `http_<status>`.
func decodeErrorReply(_ body: [UInt8]) -> ErrorReply? {
    guard let object = jsonObject(body) else { return nil }
    let message = object["error"] as? String ?? object["message"] as? String
    var code = object["code"] as? String
    if let value = code, !isPlainCode(value) { code = nil }
    if message == nil && code == nil { return nil }
    return ErrorReply(message: message, code: code)
}

private func isPlainCode(_ code: String) -> Bool {
    !code.isEmpty && code.utf8.count <= 64
        && code.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x2D || byte == 0x2E
        }
}

/// Decodes `{"ok": true, "data": {...}}` leniently: unknown fields, nulls and missing optional fields
/// are fine; `ok: false`, a missing or non-object `data`, or a body that is not JSON give nil.
func decodeRestoredProfile(_ body: [UInt8]) -> ProfileSnapshot? {
    ProfileReplyDecoder.decode(body)
}

private func jsonObject(_ body: [UInt8]) -> [String: Any]? {
    guard !body.isEmpty, body.count <= 16 << 20 else { return nil }
    return (try? JSONSerialization.jsonObject(with: Data(body), options: [])) as? [String: Any]
}
