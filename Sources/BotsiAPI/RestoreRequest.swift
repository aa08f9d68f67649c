import Foundation

/// One restore to send. `tag` is the caller's handle for matching the result to its row.
public struct RestoreRequest: Sendable {
    public let tag: Int64
    public let profileId: String
    public let originalTransactionId: String

    public init(tag: Int64, profileId: String, originalTransactionId: String) {
        self.tag = tag
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
    }
}

/// The outcome of one request, delivered on the client's driver thread.
public struct RestoreResult: Sendable {
    public let tag: Int64
    public let reply: RestoreReply
    /// The HTTP status, when a status line arrived.
    public let httpStatus: Int?
    /// When the request was handed to libcurl.
    public let startedAt: Date
    /// Seconds from hand-over to completion (monotonic clock).
    public let duration: Double
    /// The reply's rate-limit header fields, parsed, when it had any.
    public let rateLimit: RateLimitInfo?

    public init(
        tag: Int64, reply: RestoreReply, httpStatus: Int?, startedAt: Date, duration: Double,
        rateLimit: RateLimitInfo? = nil
    ) {
        self.tag = tag
        self.rateLimit = rateLimit
        self.reply = reply
        self.httpStatus = httpStatus
        self.startedAt = startedAt
        self.duration = duration
    }
}

/// The request body `{"profileId":"…","originalTransactionId":"…"}` as UTF-8 JSON.
public func restoreRequestBody(profileId: String, originalTransactionId: String) -> [UInt8] {
    var body: [UInt8] = []
    body.reserveCapacity(48 + profileId.utf8.count + originalTransactionId.utf8.count)
    body.append(contentsOf: #"{"profileId":"#.utf8)
    appendJSONString(profileId, to: &body)
    body.append(contentsOf: #","originalTransactionId":"#.utf8)
    appendJSONString(originalTransactionId, to: &body)
    body.append(UInt8(ascii: "}"))
    return body
}

private let hexDigits = Array("0123456789abcdef".utf8)

/// Escapes per RFC 8259: quote, backslash and control characters; everything else stays UTF-8.
/// U+2028 and U+2029 are escaped too, so the body is also safe to embed in JavaScript.
func appendJSONString(_ text: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x22: out.append(contentsOf: #"\""#.utf8)
        case 0x5C: out.append(contentsOf: #"\\"#.utf8)
        case 0x0A: out.append(contentsOf: #"\n"#.utf8)
        case 0x0D: out.append(contentsOf: #"\r"#.utf8)
        case 0x09: out.append(contentsOf: #"\t"#.utf8)
        case 0x08: out.append(contentsOf: #"\b"#.utf8)
        case 0x0C: out.append(contentsOf: #"\f"#.utf8)
        case 0x00..<0x20, 0x7F, 0x2028, 0x2029:
            let value = Int(scalar.value)
            out.append(contentsOf: #"\u"#.utf8)
            for shift in [12, 8, 4, 0] { out.append(hexDigits[(value >> shift) & 0xF]) }
        default:
            UTF8.encode(scalar) { out.append($0) }
        }
    }
    out.append(UInt8(ascii: "\""))
}
