import BotsiBasics
import Foundation

/// One restore to send. `tag` is the caller's handle for matching the result to its row.
public struct RestoreRequest: Sendable {
    public let tag: Int64
    public let profileId: String
    public let originalTransactionId: String
    /// When the caller handed it to the client (`submit`): the attempt's start on record, so that
    /// the caller's own clock orders it against what it decided (a stop, say).
    public let submittedAt: Date

    public init(tag: Int64, profileId: String, originalTransactionId: String, submittedAt: Date = Date()) {
        self.tag = tag
        self.profileId = profileId
        self.originalTransactionId = originalTransactionId
        self.submittedAt = submittedAt
    }
}

/// The outcome of one request, delivered on the client's driver thread.
public struct RestoreResult: Sendable {
    public let tag: Int64
    public let reply: RestoreReply
    /// The HTTP status, when a status line arrived.
    public let httpStatus: Int?
    /// When the request was submitted to the client (`RestoreRequest.submittedAt`).
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
    JSONString.append(profileId, to: &body)
    body.append(contentsOf: #","originalTransactionId":"#.utf8)
    JSONString.append(originalTransactionId, to: &body)
    body.append(UInt8(ascii: "}"))
    return body
}
