import BotsiBasics
import Foundation

/// A job file (`run --job jobs/NAME.json`): a JSON object holding what a scheduled run needs. Its
/// keys are the option table's job keys; each value goes through its option's own kind and
/// applier, before the command line's options, so the command line's flags win and a job file
/// and a command line mean exactly the same thing. Inputs named on the command line replace the
/// job's. Relative paths are taken from the working directory, as on a command line.
struct JobFile {
    let path: String
    let values: [String: JSONValue]

    /// A job's own note for the people who read it; the run ignores it.
    static let descriptionKey = "description"

    /// Names people try for the key itself: refused with a pointer to `keyEnv`.
    static let secretLookingKeys: Set<String> = [
        "key", "apikey", "secret", "secretkey", "botsisecretkey", "botsi_secret_key", "token", "apitoken",
    ]

    init(path: String, values: [String: JSONValue]) {
        self.path = path
        self.values = values
    }

    /// Reads a job file: a JSON object, or a usage error that names the file.
    static func load(path: String) throws(UsageError) -> JobFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError(
                message: "cannot read job file \(path): check the path and its permissions",
                exitCode: ExitCode.noInput)
        }
        return try parse(data, path: path)
    }

    static func parse(_ data: Data, path: String) throws(UsageError) -> JobFile {
        // UTF-8 only (a byte-order mark allowed): JSONDecoder also reads UTF-16, whose keys the
        // repeated-key check below would not see.
        guard String(data: data, encoding: .utf8) != nil, !data.contains(0) else {
            throw UsageError(message: "job file \(path): is not UTF-8 text; save it as UTF-8")
        }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: data) else {
            let isJSON = (try? JSONDecoder().decode(JSONValue.self, from: data)) != nil
            throw UsageError(
                message: "job file \(path): "
                    + (isJSON ? "is not a JSON object" : "is not valid JSON") + "; see jobs/*.json for examples")
        }
        if let repeated = repeatedTopLevelKey(data) {
            // JSONDecoder keeps one of the two silently; a reviewer reads the file's last.
            throw UsageError(message: "job file \(path): key \"\(repeated)\" is given twice; keep one")
        }
        return JobFile(path: path, values: object)
    }

    /// The first key the top-level object holds twice (escapes decoded), in JSON already known
    /// to be valid; nil when each is there once.
    static func repeatedTopLevelKey(_ data: Data) -> String? {
        let bytes = [UInt8](data)
        var seen = Set<String>()
        var depth = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let start = index
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                var next = index + 1
                while next < bytes.count && [0x20, 0x09, 0x0A, 0x0D].contains(bytes[next]) { next += 1 }
                if depth == 1 && next < bytes.count && bytes[next] == UInt8(ascii: ":"),
                    let key = try? JSONDecoder().decode(
                        String.self, from: Data(bytes[start...min(index, bytes.count - 1)])),
                    !seen.insert(key).inserted
                {
                    return key
                }
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                depth -= 1
            }
            index += 1
        }
        return nil
    }

    /// The keys a command's job files may hold, in table order.
    static func keys<Settings>(options: [Option<Settings>], positionals: Positionals<Settings>?) -> [String] {
        [descriptionKey] + [positionals?.spec.jobKey.name].compactMap { $0 } + options.compactMap(\.spec.jobKey.name)
    }

    /// Applies every key over `settings`, the inputs too: inputs the command line names replace
    /// them afterwards, as its options replace the other keys.
    func apply<Settings>(
        to settings: inout Settings, options: [Option<Settings>], positionals: Positionals<Settings>?
    ) throws(UsageError) {
        let known = Self.keys(options: options, positionals: positionals)
        try checkKeys(known: known)
        if let description = values[Self.descriptionKey], description != .null, description.string == nil {
            throw failure("\"\(Self.descriptionKey)\" must be a string")
        }
        if let positionals, let key = positionals.spec.jobKey.name, let value = values[key], value != .null {
            var paths: [String]?
            if let single = value.string, !single.isEmpty { paths = [single] }
            if case .array(let list) = value, !list.isEmpty {
                let strings = list.compactMap(\.string)
                paths = strings.count == list.count && !strings.contains("") ? strings : nil
            }
            guard let paths else { throw failure("\"\(key)\" must be a path or a non-empty list of paths") }
            positionals.apply(&settings, paths)
        }
        for option in options {
            guard let key = option.spec.jobKey.name, let value = values[key], value != .null else { continue }
            guard option.applyJSON(&settings, value) else {
                throw failure("\"\(key)\" must be \(option.expected)" + option.nearestChoiceHint(value.string ?? ""))
            }
        }
    }

    private func checkKeys(known: [String]) throws(UsageError) {
        let unknown = values.keys.filter { !known.contains($0) }.sorted()
        if let secret = unknown.first(where: { Self.secretLookingKeys.contains($0.lowercased()) }) {
            throw failure(
                "key '\(secret)': a job file never holds the API key; put the key in an environment variable and name it with \"keyEnv\""
            )
        }
        guard !unknown.isEmpty else { return }
        let described = unknown.map { name -> String in
            guard let near = Basics.nearest(to: name, among: known) else { return "'\(name)'" }
            return "'\(name)' (did you mean '\(near)'?)"
        }
        throw failure(
            "unknown key\(unknown.count > 1 ? "s" : "") \(described.joined(separator: ", ")); known keys: "
                + known.joined(separator: ", "))
    }

    private func failure(_ text: String) -> UsageError { UsageError(message: "job file \(path): \(text)") }
}
