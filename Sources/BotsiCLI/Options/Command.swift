import BotsiBasics
import BotsiRestore

/// One subcommand: its name, its help, its option table (`OptionTable.swift`, `RunOptionTable.swift`)
/// and what it does with the settings the table fills in. `CLI.commands` lists them, as
/// swift-argument-parser's `CommandConfiguration(subcommands:)` does; dispatch, help, the man page
/// and the completion scripts all walk that list.
protocol Command: Sendable {
    /// What the options apply to, starting from `initialSettings()`.
    associatedtype Settings

    static var name: String { get }
    /// One line for the overview.
    static var summary: String { get }
    /// After the command's name in usage lines: "[INPUT ...] [options]".
    static var synopsis: String { get }
    /// Paragraphs between the usage line and the options.
    static var discussion: String { get }
    /// Paragraphs after the options: exit statuses, pointers to the docs.
    static var epilogue: String { get }
    static var options: [Option<Settings>] { get }
    static var positionals: Positionals<Settings>? { get }
    /// The option naming a job file whose keys apply before the command line's own; nil when the
    /// command takes no job files.
    static var jobFileOption: String? { get }

    static func initialSettings() -> Settings
    /// Does the command's work; returns the exit status. Throws `UsageError` for bad input.
    static func run(_ settings: Settings) throws -> Int32
}

extension Command {
    static var epilogue: String { "" }
    static var positionals: Positionals<Settings>? { nil }
    static var jobFileOption: String? { nil }

    /// `-h, --help`, which every command takes and no table repeats.
    static var helpSpec: OptionSpec {
        OptionSpec(
            long: "--help", short: "h", placeholder: nil, help: "show this help and exit", defaultValue: nil,
            example: nil, section: nil,
            jobKey: jobFileOption == nil
                ? .commandTakesNoJobFiles : .notInJobFiles(because: "it asks for this text instead of a run"),
            completion: .none, repeatable: true)
    }

    /// Every option the command takes, `--help` last: what help, man page and completions list.
    static var optionSpecs: [OptionSpec] { options.map(\.spec) + [helpSpec] }
    static var positionalsSpec: PositionalsSpec? { positionals?.spec }

    /// Parses `arguments` (after the command's name) into settings: the job file's keys first,
    /// then the command line's options, then its positionals.
    static func settings(from arguments: [String]) throws(UsageError) -> (settings: Settings, wantsHelp: Bool) {
        let line = try ParsedCommandLine(
            arguments, command: name, options: options, takesPositionals: positionals != nil)
        var settings = initialSettings()
        if line.wantsHelp { return (settings, true) }
        if let jobFileOption, let path = line.text(of: jobFileOption) {
            // A bad value typed here is named before the job file is read.
            var checked = settings
            try line.apply(to: &checked)
            try JobFile.load(path: path).apply(to: &settings, options: options, positionals: positionals)
        }
        try line.apply(to: &settings)
        if let positionals, !line.positionals.isEmpty { positionals.apply(&settings, line.positionals) }
        return (settings, false)
    }

    static func invoke(_ arguments: [String]) throws -> Int32 {
        let (settings, wantsHelp) = try settings(from: arguments)
        if wantsHelp {
            Output.out(HelpText.command(self))
            return ExitCode.success
        }
        return try run(settings)
    }
}
