import Foundation

/// UTC timestamps as ISO-8601 text with milliseconds ("2026-11-29T16:40:00.123Z"): sortable as
/// text, readable in `sqlite3`, and cheap to make (no DateFormatter on the hot path).
public enum Timestamp {
    public static func string(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let milliseconds = min(Int((interval - Double(seconds)) * 1000), 999)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Written by hand: String(format:) showed up in profiles of the send path.
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var remaining = value
            while divisor > 0 {
                bytes.append(UInt8(48 + remaining / divisor % 10))
                remaining %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(milliseconds, 3)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
