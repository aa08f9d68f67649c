import BotsiRestore
import Foundation

/// How an option's value is read: from command-line text, or from a job file's JSON value. One
/// kind per meaning, so `--timeout 30s` and `"timeout": "30s"` (or `30`) are checked by the same
/// rule and land as the same typed value.
struct ValueKind<Value>: Sendable {
    /// "N", "DUR", "csv|jsonl".
    let placeholder: String
    /// What a valid value is, finishing "needs …" (command line) and "must be …" (job file).
    let expected: String
    /// A valid value, as one would type it: tests apply every option with it.
    let example: String
    let completion: ValueCompletion
    let fromText: @Sendable (String) -> Value?
    let fromJSON: @Sendable (JSONValue) -> Value?

    /// A kind whose job-file form is a JSON string read as the command line reads it.
    init(
        placeholder: String, expected: String, example: String, completion: ValueCompletion = .none,
        fromText: @escaping @Sendable (String) -> Value?, fromJSON: (@Sendable (JSONValue) -> Value?)? = nil
    ) {
        self.placeholder = placeholder
        self.expected = expected
        self.example = example
        self.completion = completion
        self.fromText = fromText
        self.fromJSON = fromJSON ?? { $0.string.flatMap(fromText) }
    }
}

extension ValueKind where Value == String {
    /// Any non-empty text.
    static func text(_ placeholder: String, completion: ValueCompletion = .none) -> Self {
        Self(placeholder: placeholder, expected: "a non-empty string", example: "example", completion: completion) {
            $0.isEmpty ? nil : $0
        }
    }

    /// One of a few fixed words.
    static func names(_ names: [String]) -> Self {
        Self(
            placeholder: names.joined(separator: "|"), expected: oneOf(names), example: names.last ?? "",
            completion: .choices(names),
            fromText: { names.contains($0) ? $0 : nil })
    }

    /// A CSV delimiter: one punctuation character, or `tab`.
    static func delimiter() -> Self {
        Self(
            placeholder: "D", expected: "one punctuation character such as ';' or '|', or 'tab'", example: ";",
            fromText: { RunOptions.delimiterByte($0) == nil ? nil : $0 })
    }

    /// A text encoding, kept under its canonical name.
    static func encoding() -> Self {
        Self(
            placeholder: "E", expected: oneOf(RunOptions.encodingNames), example: "windows-1252",
            completion: .choices(RunOptions.encodingNames), fromText: RunOptions.encodingName)
    }

    /// A column: a header name, or (with --no-header) a 1-based position; a job file may give the
    /// position as a JSON number.
    static func column() -> Self {
        Self(
            placeholder: "NAME", expected: "a column name, or a 1-based position such as 1 with --no-header",
            example: "2", fromText: { $0.isEmpty ? nil : $0 },
            fromJSON: { json in
                if let number = json.number {
                    guard let whole = Int(exactly: number), whole >= 1 else { return nil }
                    return String(whole)
                }
                return json.string.flatMap { $0.isEmpty ? nil : $0 }
            })
    }

    /// A file (or directory) path; shells complete it.
    static func path(_ placeholder: String = "PATH") -> Self { text(placeholder, completion: .file) }
}

extension ValueKind where Value == Int {
    /// A duration in whole seconds within `range`, written as a duration (`1s`, `1m`).
    static func wholeSeconds(_ range: ClosedRange<Int>) -> Self {
        let duration = ValueKind<Double>.duration(minimum: 0)
        return Self(
            placeholder: "DUR", expected: "whole seconds from \(range.lowerBound)s to \(range.upperBound)s",
            example: "\(range.upperBound)s",
            fromText: { text in
                duration.fromText(text).flatMap { seconds in
                    guard seconds == seconds.rounded(), let whole = Int(exactly: seconds), range.contains(whole)
                    else { return nil }
                    return whole
                }
            })
    }

    static func wholeNumber(_ range: ClosedRange<Int>, placeholder: String = "N") -> Self {
        Self(
            placeholder: placeholder, expected: "a whole number from \(range.lowerBound) to \(range.upperBound)",
            example: String(range.upperBound),
            fromText: { Int($0).flatMap { range.contains($0) ? $0 : nil } },
            fromJSON: { json in
                guard let number = json.number, let whole = Int(exactly: number), range.contains(whole) else {
                    return nil
                }
                return whole
            })
    }
}

extension ValueKind where Value == UInt64 {
    /// A random seed: any whole number that fits 64 bits.
    static let seed = Self(
        placeholder: "N", expected: "a whole number from 0 to \(UInt64.max)", example: "42", fromText: { UInt64($0) },
        fromJSON: { $0.number.flatMap { UInt64(exactly: $0) } })
}

extension ValueKind where Value == Double {
    static func number(_ range: ClosedRange<Double>, placeholder: String = "N") -> Self {
        numberKind(
            placeholder, "a number from \(plain(range.lowerBound)) to \(plain(range.upperBound))",
            example: plain(range.upperBound), range.contains)
    }

    /// A number above zero, such as a rate.
    static func positiveNumber(placeholder: String = "N", meaning: String = "a number") -> Self {
        numberKind(placeholder, "\(meaning) above 0", example: "40") { $0 > 0 }
    }

    private static func numberKind(
        _ placeholder: String, _ expected: String, example: String, _ accepts: @escaping @Sendable (Double) -> Bool
    ) -> Self {
        let checked: @Sendable (Double) -> Double? = { $0.isFinite && accepts($0) ? $0 : nil }
        return Self(
            placeholder: placeholder, expected: expected, example: example,
            fromText: { plainNumber($0).flatMap(checked) },
            fromJSON: { $0.number.flatMap(checked) })
    }

    /// Seconds, written "30", "1.5", "500ms", "45s", "10m", "12h" or "7d"; in a job file also a
    /// JSON number of seconds.
    static func duration(minimum: Double = 0) -> Self {
        let atLeast = minimum > 0 ? " of at least \(minimum < 1 ? "\(plain(minimum * 1000))ms" : plain(minimum))," : ""
        let checked: @Sendable (Double) -> Double? = { $0 >= minimum ? $0 : nil }
        return Self(
            placeholder: "DUR",
            expected: "a duration\(atLeast) such as 30s, 500ms, 10m, 12h or 7d (a bare number is seconds)",
            example: "45s",
            fromText: { parseDuration($0).flatMap(checked) },
            fromJSON: { json in
                if let seconds = json.number { return seconds.isFinite ? checked(seconds) : nil }
                return json.string.flatMap(parseDuration).flatMap(checked)
            })
    }

    /// 0 to 100, written 20 or 20%.
    static let percent = Self(
        placeholder: "PCT", expected: "a percentage from 0 to 100, such as 20 or 20%", example: "20%",
        fromText: percentage,
        fromJSON: { json in json.number.flatMap(percentage) ?? json.string.flatMap(percentage) })

    private static func percentage(_ number: Double) -> Double? { (0...100).contains(number) ? number : nil }

    private static func percentage(_ text: String) -> Double? {
        plainNumber(text.hasSuffix("%") ? String(text.dropLast()) : text).flatMap(percentage)
    }
}

extension ValueKind {
    /// One of a fixed set of names, such as a format.
    static func choice(_ cases: [Value], placeholder: String? = nil) -> Self
    where Value: RawRepresentable<String> & Sendable {
        let names = cases.map(\.rawValue)
        return Self(
            placeholder: placeholder ?? names.joined(separator: "|"), expected: oneOf(names),
            example: names.last ?? "", completion: .choices(names),
            fromText: { text in cases.first { $0.rawValue == text } })
    }
}

/// A local time of day, `--stop-at 06:30`.
struct ClockTime: Sendable, Equatable {
    let hour: Int
    let minute: Int

    /// `06:30`: as `--stop-at` takes it back.
    var text: String { (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)" }

    static let kind = ValueKind<ClockTime>(
        placeholder: "HH:MM", expected: "a local time HH:MM such as 06:30", example: "06:30"
    ) {
        text in
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return ClockTime(hour: hour, minute: minute)
    }
}

/// `--shard I/N`, `auto/N` or `auto`. A job file, shared by every process of the job, takes only
/// the `auto` forms: a fixed index there would give all of them the same shard.
enum Shard {
    static let kind = ValueKind<ShardSpec>(
        placeholder: "I/N",
        expected: "I/N with 0 <= I < N (e.g. 0/4, as JOB_COMPLETION_INDEX counts), or auto/N to read I from "
            + "JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX (a job file takes only auto/N or auto)",
        example: "auto/4", fromText: ShardSpec.init,
        fromJSON: { json in
            guard let spec = json.string.flatMap(ShardSpec.init), case .fromEnvironment = spec else { return nil }
            return spec
        })
}

/// "30", "1.5", "500ms", "45s", "10m", "12h", "7d" -> seconds. Digits and one point only: no
/// signs, exponents or hexadecimal, which `Double(_:)` would otherwise take.
func parseDuration(_ text: String) -> Double? {
    let units: [(suffix: String, scale: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
    let unit = units.first { text.hasSuffix($0.suffix) }
    let number = String(text.dropLast(unit?.suffix.count ?? 0))
    return plainNumber(number).map { $0 * (unit?.scale ?? 1) }
}

/// A decimal number written with digits and at most one point ("40", "0.5").
func plainNumber(_ text: String) -> Double? {
    guard text.contains(where: \.isNumber), text.filter({ $0 == "." }).count <= 1,
        text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") })
    else { return nil }
    return Double(text).flatMap { $0.isFinite ? $0 : nil }
}

/// 8 -> "8", 0.5 -> "0.5": how a number reads in a message.
func plain(_ number: Double) -> String {
    number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
}

/// "a or b", "a, b or c", "one of a, b, c, d".
func oneOf(_ names: [String]) -> String {
    guard names.count > 1 else { return names.first ?? "" }
    if names.count > 3 { return "one of " + names.joined(separator: ", ") }
    return names.dropLast().joined(separator: ", ") + " or " + names.last!
}
