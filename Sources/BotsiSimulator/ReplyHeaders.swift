import Glibc

/// Which rate-limit header fields the simulator sends with the replies its `limitRate` limiter decided.
/// Raw values are what `--rate-limit-headers` accepts.
public enum RateLimitHeaderStyle: String, Sendable, CaseIterable {
    /// The IETF httpapi draft (draft-ietf-httpapi-ratelimit-headers-09 and later):
    /// `RateLimit-Policy: "default";q=100;w=1` and `RateLimit: "default";r=37;t=1`.
    case ietf
    /// The draft's older fields: `RateLimit-Limit: 100`, `RateLimit-Remaining: 37`, `RateLimit-Reset: 1`
    /// (seconds from now) and `RateLimit-Policy: 100;w=1`.
    case rateLimitLimit = "ratelimit-limit"
    /// The common vendor fields: `X-RateLimit-Limit: 100`, `X-RateLimit-Remaining: 37`,
    /// `X-RateLimit-Reset: 1767225600` (a UNIX time in seconds, as GitHub sends it).
    case xRateLimit = "x-ratelimit"
}

/// How the simulator writes `Retry-After`. Raw values are what `--retry-after-format` accepts.
public enum RetryAfterFormat: String, Sendable, CaseIterable {
    /// Delta-seconds, `Retry-After: 2` (RFC 9110).
    case seconds
    /// A UNIX time in milliseconds, `Retry-After: 1767225602000`, as Apple's App Store Server API sends it.
    case unixMilliseconds = "unix-ms"
    /// A UNIX time in seconds, rounded up.
    case unixSeconds = "unix"
    /// An HTTP date (IMF-fixdate, `Thu, 01 Jan 2026 00:00:02 GMT`), rounded up to the second.
    case httpDate = "http-date"
}

/// Header lines (each ending in CRLF) that depend on the wall clock or the limiter.
enum ReplyHeaders {
    static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// `Retry-After` for a wait of `delaySeconds` from `wallNanoseconds`. The absolute forms are rounded
    /// up, never down, so a client that honours them never comes back early.
    static func retryAfter(
        _ delaySeconds: Int, format: RetryAfterFormat, wallNanoseconds: Int64 = wallClockNanoseconds()
    ) -> [UInt8] {
        // A scenario may ask for any wait; the absolute forms saturate a century out rather than overflow.
        let delay = min(max(Int64(delaySeconds), 0), 100 * 365 * 86_400)
        let target = wallNanoseconds + delay * 1_000_000_000
        var line: [UInt8] = []
        Responses.append("Retry-After: ", to: &line)
        switch format {
        case .seconds: Responses.appendDecimal(delaySeconds, to: &line)
        case .unixMilliseconds: Responses.appendDecimal(Int(ceilingDivide(target, 1_000_000)), to: &line)
        case .unixSeconds: Responses.appendDecimal(Int(ceilingDivide(target, 1_000_000_000)), to: &line)
        case .httpDate: line += httpDate(epochSeconds: ceilingDivide(target, 1_000_000_000))
        }
        Responses.append("\r\n", to: &line)
        return line
    }

    /// The fields of `style` for a limiter of `quota` requests per `windowSeconds`, after `outcome`.
    static func rateLimit(
        _ style: RateLimitHeaderStyle, quota: Int, windowSeconds: Int, outcome: RateLimiter.Outcome,
        wallNanoseconds: Int64 = wallClockNanoseconds()
    ) -> [UInt8] {
        let resetSeconds = Int(ceilingDivide(Int64(outcome.resetNanoseconds), 1_000_000_000))
        var text: String
        switch style {
        case .ietf:
            text = "RateLimit-Policy: \"default\";q=\(quota);w=\(windowSeconds)\r\n"
            text += "RateLimit: \"default\";r=\(outcome.remaining);t=\(resetSeconds)\r\n"
        case .rateLimitLimit:
            text = "RateLimit-Limit: \(quota)\r\nRateLimit-Remaining: \(outcome.remaining)\r\n"
            text += "RateLimit-Reset: \(resetSeconds)\r\nRateLimit-Policy: \(quota);w=\(windowSeconds)\r\n"
        case .xRateLimit:
            let resetAt = ceilingDivide(wallNanoseconds + Int64(outcome.resetNanoseconds), 1_000_000_000)
            text = "X-RateLimit-Limit: \(quota)\r\nX-RateLimit-Remaining: \(outcome.remaining)\r\n"
            text += "X-RateLimit-Reset: \(resetAt)\r\n"
        }
        return Array(text.utf8)
    }

    /// IMF-fixdate (RFC 9110, section 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(epochSeconds: Int64) -> [UInt8] {
        var time = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text =
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return Array(text.utf8)
    }

    private static func ceilingDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? (value + divisor - 1) / divisor : value / divisor
    }
}
