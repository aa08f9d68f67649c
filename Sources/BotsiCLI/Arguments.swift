import Foundation

/// A usage error: printed with the command's usage line, exit status 64.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// What one command accepts.
struct CommandSpec {
    struct Option {
        let name: String
        let takesValue: Bool
        let repeatable: Bool
    }

    let name: String
    let options: [Option]
    let takesPositionals: Bool
}

extension CommandSpec.Option {
    static func flag(_ name: String) -> Self { Self(name: name, takesValue: false, repeatable: false) }
    static func value(_ name: String, repeatable: Bool = false) -> Self {
        Self(name: name, takesValue: true, repeatable: repeatable)
    }
}

/// argv after the command name, split into options and positionals. Tokens keep their text so
/// an error can name the exact one (`unknown option '--concurency'; did you mean '--concurrency'?`).
struct ParsedArguments {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    init(_ arguments: [String], spec: CommandSpec) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if optionsEnded || !token.hasPrefix("-") || token == "-" {
                guard spec.takesPositionals else {
                    throw UsageError(message: "unexpected argument '\(token)' for '\(spec.name)'")
                }
                positionals.append(token)
                continue
            }
            if token == "--" {
                optionsEnded = true
                continue
            }
            var name = token
            var inlineValue: String?
            if let equals = token.firstIndex(of: "=") {
                name = String(token[..<equals])
                inlineValue = String(token[token.index(after: equals)...])
            }
            if name == "-h" { name = "--help" }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                throw UsageError(message: Self.unknownOptionMessage(name, spec: spec))
            }
            if option.takesValue {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw UsageError(message: "option '\(name)' needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                if !option.repeatable && values[name] != nil {
                    throw UsageError(message: "option '\(name)' was given more than once")
                }
                values[name, default: []].append(value)
            } else {
                guard inlineValue == nil else { throw UsageError(message: "option '\(name)' takes no value") }
                flags.insert(name)
            }
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }

    func int(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                message:
                    "option '\(name)' needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            )
        }
        return number
    }

    func seconds(_ name: String, minimum: Double = 0) throws(UsageError) -> Double? {
        guard let text = value(name) else { return nil }
        guard let seconds = parseDuration(text), seconds >= minimum else {
            throw UsageError(
                message: "option '\(name)' needs a duration such as 30, 1.5, 500ms, 45s, 10m, 12h or 7d, not '\(text)'")
        }
        return seconds
    }

    static func unknownOptionMessage(_ name: String, spec: CommandSpec) -> String {
        let best = spec.options.map { ($0.name, editDistance($0.name, name)) }.min { $0.1 < $1.1 }
        if let best, best.1 <= max(2, name.count / 4) {
            return "unknown option '\(name)' for '\(spec.name)'; did you mean '\(best.0)'?"
        }
        return "unknown option '\(name)' for '\(spec.name)'; see 'botsi-restore \(spec.name) --help'"
    }
}

/// "30", "1.5", "500ms", "45s", "10m", "12h", "7d" -> seconds.
func parseDuration(_ text: String) -> Double? {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
        let number = text.dropLast(suffix.count)
        if suffix == "s" && number.hasSuffix("m") { continue }
        guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return value * scale
    }
    guard let value = Double(text), value.isFinite, value >= 0 else { return nil }
    return value
}

/// Levenshtein distance, for "did you mean".
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
