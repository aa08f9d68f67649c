import BotsiBasics

/// What help, the man page and the completion scripts know of an option: everything but how it
/// applies. Declared once, in `OptionTable.swift` (`run`'s in `RunOptionTable.swift`).
struct OptionSpec: Sendable {
    /// "--concurrency".
    let long: String
    /// "j" for `-j`.
    let short: Character?
    /// "N", "DUR", "PATH"; nil for a flag, which takes no value.
    let placeholder: String?
    let help: String
    /// The value in force when the option is not given, as one would type it ("8", "30s");
    /// help shows it, and a test checks that typing it changes nothing.
    let defaultValue: String?
    /// A valid value (nil for a flag).
    let example: String?
    /// The heading it is listed under in `--help` ("Input", "Journal"); nil for none.
    let section: String?
    let jobKey: JobKey
    let completion: ValueCompletion
    let repeatable: Bool

    var takesValue: Bool { placeholder != nil }

    /// "-j, --concurrency N", as help and usage lines write it.
    var signature: String {
        let names = short.map { "-\($0), \(long)" } ?? long
        return placeholder.map { "\(names) \($0)" } ?? names
    }
}

/// How an option appears in a job file.
enum JobKey: Sendable, Equatable, ExpressibleByStringLiteral {
    /// The key of the same meaning ("concurrency" for `--concurrency`).
    case key(String)
    /// A key that means the opposite of a flag: `"adaptive": false` is `--no-adaptive`.
    case negatedKey(String)
    /// Deliberately not a job-file key, and why (help of a command that takes job files).
    case notInJobFiles(because: String)
    /// The command takes no job files at all.
    case commandTakesNoJobFiles

    init(stringLiteral name: String) { self = .key(name) }

    var name: String? {
        switch self {
        case .key(let name), .negatedKey(let name): return name
        case .notInJobFiles, .commandTakesNoJobFiles: return nil
        }
    }
}

/// What a shell may offer for an option's value.
enum ValueCompletion: Sendable, Equatable {
    case none
    case file
    case directory
    case choices([String])
}

/// One option of one command: its spec and how a value given on the command line (text) or in
/// a job file (JSON) applies to the command's settings. Both go through the option's one value
/// kind to one applier, so a job-file key and its flag cannot mean different things.
struct Option<Settings>: Sendable {
    let spec: OptionSpec
    /// What a valid value is, finishing "needs …" and "must be …".
    let expected: String
    /// For an option of a few fixed words, the one meant when `typed` is a slip of it ("json" for
    /// `jsonl`): " (did you mean 'jsonl'?)", or nothing.
    func nearestChoiceHint(_ typed: String) -> String {
        guard case .choices(let words) = spec.completion, let near = Basics.nearest(to: typed, among: words) else {
            return ""
        }
        return " (did you mean '\(near)'?)"
    }

    /// Applies one occurrence from the command line (nil text for a flag); false when the text is
    /// not a valid value.
    let applyText: @Sendable (inout Settings, String?) -> Bool
    /// Applies a job file's value; false when it is not a valid value.
    let applyJSON: @Sendable (inout Settings, JSONValue) -> Bool

    /// An option that takes a value of `kind`.
    static func value<Value>(
        _ long: String, short: Character? = nil, _ kind: ValueKind<Value>, job: JobKey = .commandTakesNoJobFiles,
        default defaultValue: String? = nil, repeatable: Bool = false, help: String,
        apply: @escaping @Sendable (inout Settings, Value) -> Void
    ) -> Self {
        let spec = OptionSpec(
            long: long, short: short, placeholder: kind.placeholder, help: help, defaultValue: defaultValue,
            example: kind.example, section: nil, jobKey: job, completion: kind.completion, repeatable: repeatable)
        return Self(
            spec: spec, expected: kind.expected,
            applyText: { settings, text in
                guard let text, let value = kind.fromText(text) else { return false }
                apply(&settings, value)
                return true
            },
            applyJSON: { settings, json in
                guard let value = kind.fromJSON(json) else { return false }
                apply(&settings, value)
                return true
            })
    }

    /// An option that takes no value. In a job file it is `true` or `false`: `false` (or, for a
    /// negated key, `true`) leaves the default alone.
    static func flag(
        _ long: String, short: Character? = nil, job: JobKey = .commandTakesNoJobFiles, help: String,
        apply: @escaping @Sendable (inout Settings) -> Void
    ) -> Self {
        let spec = OptionSpec(
            long: long, short: short, placeholder: nil, help: help, defaultValue: nil, example: nil, section: nil,
            jobKey: job,
            completion: .none, repeatable: true)
        let negated: Bool
        if case .negatedKey = job { negated = true } else { negated = false }
        return Self(
            spec: spec, expected: "true or false",
            applyText: { settings, _ in
                apply(&settings)
                return true
            },
            applyJSON: { settings, json in
                guard case .bool(let bool) = json else { return false }
                if bool != negated { apply(&settings) }
                return true
            })
    }

    /// The same option listed under a help heading.
    func inSection(_ title: String) -> Self {
        let old = spec
        let spec = OptionSpec(
            long: old.long, short: old.short, placeholder: old.placeholder, help: old.help,
            defaultValue: old.defaultValue, example: old.example, section: title, jobKey: old.jobKey,
            completion: old.completion,
            repeatable: old.repeatable)
        return Self(spec: spec, expected: expected, applyText: applyText, applyJSON: applyJSON)
    }
}

/// Options listed under one help heading, in the order given.
func section<Settings>(_ title: String, _ options: [Option<Settings>]) -> [Option<Settings>] {
    options.map { $0.inSection(title) }
}

/// What help, the man page and the completion scripts know of a command's positional arguments.
struct PositionalsSpec: Sendable {
    /// As usage lines write it: "INPUT ...", "OUT SHARD ...".
    let usage: String
    let help: String
    let jobKey: JobKey
    let completion: ValueCompletion
}

/// A command's positional arguments: their spec and where they go.
struct Positionals<Settings>: Sendable {
    let spec: PositionalsSpec
    let apply: @Sendable (inout Settings, [String]) -> Void

    init(
        _ usage: String, help: String, job: JobKey = .commandTakesNoJobFiles, completion: ValueCompletion = .file,
        apply: @escaping @Sendable (inout Settings, [String]) -> Void
    ) {
        spec = PositionalsSpec(usage: usage, help: help, jobKey: job, completion: completion)
        self.apply = apply
    }
}
