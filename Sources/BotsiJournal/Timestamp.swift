import Foundation

/// UTC timestamps as ISO-8601 text with milliseconds ("2026-11-29T16:40:00.123Z"): sortable as
/// text, readable in `sqlite3`, and cheap to make (no DateFormatter on the hot path).
public enum Timestamp {
    /// Milliseconds since 1970 (UTC), as schema 5 stores times: the same instant `string` writes.
    public static func milliseconds(_ date: Date) -> Int64 {
        // A microsecond over: a time read back from its text (…19.659Z) is a hair under its
        // millisecond in binary, and truncating made it …19.658Z, a millisecond earlier each round.
        let interval = date.timeIntervalSince1970 + 0.000_001
        let seconds = interval.rounded(.down)
        return Int64(seconds) * 1000 + Int64(min(Int((interval - seconds) * 1000), 999))
    }

    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    public static func string(_ date: Date) -> String { string(milliseconds: milliseconds(date)) }

    /// "2026-11-29T16:40:00.123Z" for a time in milliseconds since 1970.
    public static func string(milliseconds value: Int64) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        append(milliseconds: value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The same text appended as bytes, with no String: what a report writes per cell.
    public static func append(milliseconds value: Int64, to bytes: inout [UInt8]) {
        var seconds = time_t(value >= 0 ? value / 1000 : (value - 999) / 1000)
        let milliseconds = Int(value - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Written by hand: String(format:) showed up in profiles of the send path.
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
    }

    /// Milliseconds since 1970 from text `string` wrote (schema 4 and before kept times so); nil
    /// for any other text. Exact, with no floating point: the upgrade keeps every instant.
    public static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 else { return nil }
                value = value * 10 + Int(bytes[index] - 48)
            }
            return value
        }
        guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let milliseconds = number(20..<23), (1...12).contains(month), (1...31).contains(day)
        else {
            guard let date = date(text) else { return nil }
            return Self.milliseconds(date)
        }
        // Days since 1970 from the civil date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146097 + dayOfEra - 719468
        return Int64(((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + Int64(milliseconds)
    }

    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
