internal import CCurl
import Foundation

/// Parses a `Retry-After` value into the seconds to wait from `now` (0 for a moment already past),
/// or nil when it is none of these:
/// - a bare number of at least 10^12: a UNIX time in milliseconds, the form Apple's App Store
///   Server API uses;
/// - a bare number of at least 10^9: a UNIX time in seconds;
/// - a smaller bare number: delta-seconds (RFC 9110);
/// - an HTTP date, read by libcurl's own parser (`curl_getdate`), which takes the three forms
///   RFC 9110 requires and the looser ones servers send.
///
/// Both thresholds are far apart from real delays: 10^9 seconds is 31 years, and 10^9 s and 10^12
/// ms both fall in September 2001, before any server could mean them.
public func parseRetryAfter(_ value: String, now: Date) -> Double? {
    let text = value.trimmingCharacters(in: .whitespaces)
    guard !text.isEmpty else { return nil }
    if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
        guard let number = UInt64(text) else { return nil }
        let value = Double(number)
        if number >= 1_000_000_000_000 { return max(0, value / 1000 - now.timeIntervalSince1970) }
        if number >= 1_000_000_000 { return max(0, value - now.timeIntervalSince1970) }
        return value
    }
    let seconds = curl_getdate(text, nil)
    guard seconds >= 0 else { return nil }
    return max(0, Double(seconds) - now.timeIntervalSince1970)
}
