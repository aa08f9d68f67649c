import BotsiBasics

/// Byte-level JSON output for the hot path: replies are assembled from pre-encoded pieces instead of
/// going through `JSONEncoder`, which costs far more than the rest of a request.
struct JSONBytes {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ other: [UInt8]) {
        bytes.append(contentsOf: other)
    }

    /// A JSON string literal, escaped as `JSONString` escapes for every writer.
    mutating func string(_ value: String) {
        JSONString.append(value, to: &bytes)
    }

    mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    mutating func integer(_ value: Int) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Dollars from whole cents, e.g. 4999 -> 49.99, without a floating-point detour.
    mutating func usd(cents: Int) {
        let sign = cents < 0 ? "-" : ""
        let magnitude = abs(cents)
        let fraction = magnitude % 100
        bytes.append(contentsOf: "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)".utf8)
    }

    mutating func optionalDate(_ epochSeconds: Int64?) {
        if let epochSeconds { string(ISODate.format(epochSeconds)) } else { raw("null") }
    }
}

/// ISO-8601 UTC timestamps from epoch seconds, computed by hand (civil-from-days) so rendering needs no
/// `DateFormatter` and its locking.
enum ISODate {
    static func format(_ epochSeconds: Int64) -> String {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let secondOfDay = epochSeconds - days * 86_400
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let hour = secondOfDay / 3600
        let minute = secondOfDay / 60 % 60
        let second = secondOfDay % 60
        return
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).000Z"
    }

    /// Howard Hinnant's days-to-civil algorithm.
    static func civilDate(daysSinceEpoch: Int64) -> (Int64, Int64, Int64) {
        let shifted = daysSinceEpoch + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
