import BotsiBasics

/// A usage error: printed with the command's usage line, exit status 64 unless it says otherwise.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    /// 64, but 66 for a file the command line names that is not there (a job file), as for an input.
    var exitCode: Int32 = ExitCode.usage
    var description: String { message }
}

/// argv after the command name, split against the command's option table into occurrences (in
/// the order typed) and positionals. Nothing is applied yet: a job file's keys go first, so that
/// the command line's own flags win.
struct ParsedCommandLine<Settings> {
    private(set) var occurrences: [(option: Option<Settings>, text: String?)] = []
    private(set) var positionals: [String] = []
    /// `--help` or `-h` anywhere before `--`: help is shown whatever else was typed.
    private(set) var wantsHelp = false

    init(_ arguments: [String], command: String, options: [Option<Settings>], takesPositionals: Bool) throws(UsageError)
    {
        if arguments.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            wantsHelp = true
            return
        }
        var index = 0
        var optionsEnded = false
        func nextValue(for name: String) throws(UsageError) -> String {
            guard index < arguments.count else { throw UsageError(message: "option '\(name)' needs a value") }
            index += 1
            return arguments[index - 1]
        }
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if optionsEnded || !token.hasPrefix("-") || token == "-" {
                guard takesPositionals else {
                    throw UsageError(message: "unexpected argument '\(token)' for '\(command)'")
                }
                positionals.append(token)
            } else if token == "--" {
                optionsEnded = true
            } else if token.hasPrefix("--") {
                let parts = token.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard let option = options.first(where: { $0.spec.long == name }) else {
                    throw UsageError(message: Self.unknownOptionMessage(name, command: command, options: options))
                }
                if !option.spec.takesValue {
                    guard parts.count == 1 else { throw UsageError(message: "option '\(name)' takes no value") }
                    try record(option, nil)
                } else {
                    try record(option, parts.count == 2 ? String(parts[1]) : try nextValue(for: name))
                }
            } else {
                // One dash: `-j 16`, `-j16`, or flags together (`-nq`).
                var letters = Substring(token.dropFirst())
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    guard let option = options.first(where: { $0.spec.short == letter }) else {
                        let name = token.count > 2 && letters.count == token.count - 2 ? token : "-\(letter)"
                        throw UsageError(message: Self.unknownOptionMessage(name, command: command, options: options))
                    }
                    guard option.spec.takesValue else {
                        try record(option, nil)
                        continue
                    }
                    try record(option, letters.isEmpty ? try nextValue(for: "-\(letter)") : String(letters))
                    break
                }
            }
        }
    }

    private mutating func record(_ option: Option<Settings>, _ text: String?) throws(UsageError) {
        if !option.spec.repeatable && occurrences.contains(where: { $0.option.spec.long == option.spec.long }) {
            throw UsageError(message: "option '\(option.spec.long)' was given more than once")
        }
        occurrences.append((option, text))
    }

    /// The last value typed for an option, before any is applied (`--job FILE`).
    func text(of long: String) -> String? {
        occurrences.last { $0.option.spec.long == long }?.text
    }

    /// Applies every option typed, in order, over what `settings` already holds.
    func apply(to settings: inout Settings) throws(UsageError) {
        for (option, text) in occurrences where !option.applyText(&settings, text) {
            throw UsageError(
                message: "option '\(option.spec.long)' needs \(option.expected), not '\(text ?? "")'"
                    + option.nearestChoiceHint(text ?? ""))
        }
    }

    /// Names the option typed, and the one meant when one is close enough to be a slip.
    static func unknownOptionMessage(_ name: String, command: String, options: [Option<Settings>]) -> String {
        let bare = { (name: String) in String(name.drop { $0 == "-" }) }
        let known = options.map { bare($0.spec.long) } + ["help"]
        guard let near = Basics.nearest(to: bare(name), among: known) else {
            return "unknown option '\(name)' for '\(command)'; see 'botsi-restore \(command) --help'"
        }
        return "unknown option '\(name)' for '\(command)'; did you mean '--\(near)'?"
    }
}
