import Foundation

/// A job file that could not be used; the message names the file and the key.
public struct JobFileError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// A job file (`run --job jobs/NAME.json`): a JSON object holding what a scheduled run needs.
/// It becomes the `run` options it stands for, so a job file and a command line mean exactly the
/// same thing and the command line's own flags can override any key.
///
/// Relative paths (inputs, journal) are taken from the working directory, as on a command line.
public struct JobDefinition: Sendable, Equatable {
    public enum ValueKind: Sendable {
        case text, wholeNumber, number, duration, clockTime, percent, flag, paths
        /// A column name, or (with `noHeader`) a 1-based position written as a number.
        case column
    }

    public struct Key: Sendable {
        public let name: String
        /// The `run` option it becomes; nil for `description` and `inputs`.
        public let option: String?
        public let kind: ValueKind
    }

    /// Every key a job file may hold, in the order the options are written.
    public static let keys: [Key] = [
        Key(name: "description", option: nil, kind: .text),
        Key(name: "inputs", option: nil, kind: .paths),
        Key(name: "journal", option: "--journal", kind: .text),
        Key(name: "baseURL", option: "--base-url", kind: .text),
        Key(name: "keyEnv", option: "--key-env", kind: .text),
        Key(name: "format", option: "--format", kind: .text),
        Key(name: "profileColumn", option: "--profile-column", kind: .column),
        Key(name: "transactionColumn", option: "--transaction-column", kind: .column),
        Key(name: "delimiter", option: "--delimiter", kind: .text),
        Key(name: "encoding", option: "--encoding", kind: .text),
        Key(name: "noHeader", option: "--no-header", kind: .flag),
        Key(name: "bundleId", option: "--bundle-id", kind: .text),
        Key(name: "environment", option: "--environment", kind: .text),
        Key(name: "concurrency", option: "--concurrency", kind: .wholeNumber),
        Key(name: "rate", option: "--rate", kind: .number),
        Key(name: "adaptive", option: "--no-adaptive", kind: .flag),
        Key(name: "maxAttempts", option: "--max-attempts", kind: .wholeNumber),
        Key(name: "timeout", option: "--timeout", kind: .duration),
        Key(name: "connectTimeout", option: "--connect-timeout", kind: .duration),
        Key(name: "maxDuration", option: "--max-duration", kind: .duration),
        Key(name: "stopAt", option: "--stop-at", kind: .clockTime),
        Key(name: "maxFailureRate", option: "--max-failure-rate", kind: .percent),
        Key(name: "minSample", option: "--min-sample", kind: .wholeNumber),
        Key(name: "retryFailed", option: "--retry-failed", kind: .flag),
        Key(name: "refreshOlderThan", option: "--refresh-older-than", kind: .duration),
        Key(name: "logInterval", option: "--log-interval", kind: .duration),
    ]

    /// Names people try for the key itself: refused with a pointer to `keyEnv`.
    static let secretLookingKeys: Set<String> = [
        "key", "apikey", "secret", "secretkey", "botsisecretkey", "botsi_secret_key", "token", "apitoken",
    ]

    public var description: String?
    public var inputs: [String] = []
    /// `run` options in key order: the option and its value (nil for a flag).
    public var options: [(option: String, value: String?)] = []

    public static func == (lhs: JobDefinition, rhs: JobDefinition) -> Bool {
        lhs.description == rhs.description && lhs.inputs == rhs.inputs
            && lhs.options.map(\.option) == rhs.options.map(\.option)
            && lhs.options.map(\.value) == rhs.options.map(\.value)
    }

    public init() {}

    /// Reads and checks a job file.
    public static func load(path: String) throws(JobFileError) -> JobDefinition {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JobFileError(message: "cannot read job file \(path): check the path and its permissions")
        }
        return try parse(data, path: path)
    }

    public static func parse(_ data: Data, path: String) throws(JobFileError) -> JobDefinition {
        func fail(_ text: String) -> JobFileError { JobFileError(message: "job file \(path): \(text)") }
        guard let parsed = try? JSONSerialization.jsonObject(with: data),
            let object = parsed as? [String: Any]
        else { throw fail("is not a JSON object; see jobs/*.json for examples") }

        let known = Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0) })
        let unknown = object.keys.filter { known[$0] == nil }.sorted()
        if let secret = unknown.first(where: { secretLookingKeys.contains($0.lowercased()) }) {
            throw fail(
                "key '\(secret)': a job file never holds the API key; put the key in an environment variable and name it with \"keyEnv\""
            )
        }
        if !unknown.isEmpty {
            let described = unknown.map { name -> String in
                guard let near = closest(to: name, among: keys.map(\.name)) else { return "'\(name)'" }
                return "'\(name)' (did you mean '\(near)'?)"
            }
            throw fail(
                "unknown key\(unknown.count > 1 ? "s" : "") \(described.joined(separator: ", ")); known keys: "
                    + keys.map(\.name).joined(separator: ", "))
        }

        var job = JobDefinition()
        for key in keys {
            guard let value = object[key.name], !(value is NSNull) else { continue }
            switch key.name {
            case "description":
                guard let text = value as? String else { throw fail("\"description\" must be a string") }
                job.description = text
            case "inputs":
                if let single = value as? String {
                    job.inputs = [single]
                } else if let list = value as? [Any], let paths = list as? [String], !paths.isEmpty {
                    job.inputs = paths
                } else {
                    throw fail("\"inputs\" must be a path or a non-empty list of paths")
                }
            default:
                guard let option = key.option else { continue }
                if let text = try optionValue(key, value, fail: fail) {
                    job.options.append((option, text.isEmpty ? nil : text))
                }
            }
        }
        return job
    }

    /// The option's value as text; "" for a flag that is on, nil for one that is off.
    private static func optionValue(
        _ key: Key, _ value: Any, fail: (String) -> JobFileError
    ) throws(JobFileError) -> String? {
        let name = "\"\(key.name)\""
        switch key.kind {
        case .text:
            guard let text = value as? String, !text.isEmpty else { throw fail("\(name) must be a non-empty string") }
            return text
        case .paths:
            return nil
        case .column:
            if !isBoolean(value), let number = value as? NSNumber, let whole = Int(exactly: number.doubleValue),
                whole >= 1
            {
                return String(whole)
            }
            guard let text = value as? String, !text.isEmpty else {
                throw fail("\(name) must be a column name, or a 1-based position such as 1 with \"noHeader\"")
            }
            return text
        case .flag:
            guard let bool = value as? Bool, isBoolean(value) else { throw fail("\(name) must be true or false") }
            // `adaptive` is on unless turned off; the others are off unless turned on.
            let flagIsOn = key.name == "adaptive" ? !bool : bool
            return flagIsOn ? "" : nil
        case .wholeNumber:
            guard !isBoolean(value), let number = value as? NSNumber, let whole = Int(exactly: number.doubleValue),
                whole >= 0
            else { throw fail("\(name) must be a whole number, such as 8") }
            return String(whole)
        case .number:
            guard !isBoolean(value), let number = value as? NSNumber, number.doubleValue > 0,
                number.doubleValue.isFinite
            else { throw fail("\(name) must be a positive number, such as 40") }
            return format(number.doubleValue)
        case .percent:
            var percent: Double?
            if !isBoolean(value), let number = value as? NSNumber { percent = number.doubleValue }
            if let text = value as? String { percent = Double(text.hasSuffix("%") ? String(text.dropLast()) : text) }
            guard let percent, (0...100).contains(percent) else {
                throw fail("\(name) must be a percentage from 0 to 100, such as 20 or \"20%\"")
            }
            return format(percent)
        case .duration:
            if !isBoolean(value), let number = value as? NSNumber, number.doubleValue >= 0 {
                return format(number.doubleValue)
            }
            guard let text = value as? String, isDuration(text) else {
                throw fail("\(name) must be a duration such as \"30s\", \"500ms\", \"10m\", \"12h\" or \"7d\"")
            }
            return text
        case .clockTime:
            guard let text = value as? String, isClockTime(text) else {
                throw fail("\(name) must be a local time \"HH:MM\", such as \"06:30\"")
            }
            return text
        }
    }

    /// JSONSerialization hands booleans back as NSNumber; serialising again tells them from 0 and 1.
    private static func isBoolean(_ value: Any) -> Bool {
        guard value is NSNumber,
            let data = try? JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed)
        else { return false }
        let text = String(decoding: data, as: UTF8.self)
        return text == "true" || text == "false"
    }

    private static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    static func isDuration(_ text: String) -> Bool {
        var digits = Substring(text)
        for unit in ["ms", "s", "m", "h", "d"] where digits.hasSuffix(unit) {
            digits = digits.dropLast(unit.count)
            break
        }
        guard let number = Double(digits), number.isFinite, number >= 0 else { return false }
        return digits.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
    }

    static func isClockTime(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
            let hour = Int(parts[0]), let minute = Int(parts[1])
        else { return false }
        return (0..<24).contains(hour) && (0..<60).contains(minute)
    }

    /// The nearest name by edit distance, when near enough to be a typo.
    static func closest(to name: String, among names: [String]) -> String? {
        let lowered = name.lowercased()
        let scored = names.map { ($0, distance(Array($0.lowercased()), Array(lowered))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, name.count / 3) else { return nil }
        return best.0
    }

    private static func distance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
