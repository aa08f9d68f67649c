import Foundation

/// Parses a `Retry-After` value: delta-seconds, or an HTTP date in IMF-fixdate, RFC 850 or asctime form.
/// Returns the seconds to wait from `now` (0 for a date in the past), nil when the value is neither.
public func parseRetryAfter(_ value: String, now: Date) -> Double? {
    let text = value.trimmingCharacters(in: .whitespaces)
    guard !text.isEmpty else { return nil }
    if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
        guard let seconds = Double(text), seconds.isFinite else { return nil }
        return seconds
    }
    guard let date = parseHTTPDate(text, now: now) else { return nil }
    return max(0, date.timeIntervalSince(now))
}

private let monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
private let shortDayNames: Set<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
private let longDayNames: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

/// The three date forms RFC 9110 §5.6.7 requires recipients to accept.
func parseHTTPDate(_ text: String, now: Date) -> Date? {
    let tokens = text.split(separator: " ", omittingEmptySubsequences: true).map { $0.lowercased() }
    guard let first = tokens.first else { return nil }
    if first.hasSuffix(",") {
        let dayName = String(first.dropLast())
        if tokens.count == 6, shortDayNames.contains(dayName), tokens[5] == "gmt" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard tokens[3].count == 4, let year = Int(tokens[3]) else { return nil }
            return makeDate(day: tokens[1], month: tokens[2], year: year, time: tokens[4])
        }
        if tokens.count == 4, longDayNames.contains(dayName), tokens[3] == "gmt" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].count == 2, let shortYear = Int(parts[2]) else { return nil }
            return makeDate(
                day: String(parts[0]), month: String(parts[1]), year: fullYear(shortYear, now: now), time: tokens[2])
        }
        return nil
    }
    if tokens.count == 5, shortDayNames.contains(first) {
        // asctime: Sun Nov  6 08:49:37 1994
        guard tokens[4].count == 4, let year = Int(tokens[4]) else { return nil }
        return makeDate(day: tokens[2], month: tokens[1], year: year, time: tokens[3])
    }
    return nil
}

/// RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those digits.
private func fullYear(_ shortYear: Int, now: Date) -> Int {
    let currentYear = civilDate(fromDays: Int((now.timeIntervalSince1970 / 86_400).rounded(.down))).year
    var year = currentYear - currentYear % 100 + shortYear
    if year > currentYear + 50 { year -= 100 }
    return year
}

private func makeDate(day dayText: String, month monthText: String, year: Int, time: String) -> Date? {
    guard dayText.count <= 2, dayText.allSatisfy(\.isASCII), let day = Int(dayText),
        let monthIndex = monthNames.firstIndex(of: monthText)
    else { return nil }
    let clock = time.split(separator: ":", omittingEmptySubsequences: false)
    guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
        let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
        (0..<24).contains(hour), (0..<60).contains(minute), (0...60).contains(second)
    else { return nil }
    let month = monthIndex + 1
    guard year >= 1900, year <= 9999, day >= 1, day <= daysInMonth(month, year: year) else { return nil }
    let days = daysSinceEpoch(year: year, month: month, day: day)
    return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
}

private func daysInMonth(_ month: Int, year: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
}

/// Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
private func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}

/// The inverse of `daysSinceEpoch` (Hinnant's civil_from_days); only the year is needed here.
private func civilDate(fromDays days: Int) -> (year: Int, month: Int) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month)
}
