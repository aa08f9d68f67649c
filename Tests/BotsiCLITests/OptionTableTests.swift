import Foundation
import Testing

@testable import BotsiCLI

/// The option table's promises, checked for every option of every command: it parses by each of
/// its names, it does something, help lists it, its default is the real default, and for a
/// command that takes job files, its key means what the flag means (or it says why it has none).
@Suite struct OptionTableTests {
    static let commands = CLI.commands.map { $0.name }

    static func command(_ name: String) -> any Command.Type { CLI.command(named: name)! }

    @Test(arguments: commands)
    func everyOptionParsesByEachOfItsNamesAndChangesTheSettings(_ name: String) throws {
        try everyOptionParses(Self.command(name))
    }

    @Test(arguments: commands)
    func everyJobKeyMeansWhatItsOptionMeans(_ name: String) throws {
        try everyJobKeyMatchesItsOption(Self.command(name))
    }

    @Test(arguments: commands)
    func everyDefaultShownIsTheDefaultInForce(_ name: String) throws {
        try defaultsAreInForce(Self.command(name))
    }

    @Test(arguments: commands)
    func everyValueOptionRefusesAnEmptyValueByName(_ name: String) {
        emptyValuesAreRefused(Self.command(name))
    }

    @Test(arguments: commands)
    func helpListsEveryOptionWithItsHelp(_ name: String) {
        let command = Self.command(name)
        let help = HelpText.command(command)
        for spec in command.optionSpecs {
            #expect(help.contains(spec.signature), "\(name) --help lacks \(spec.signature)")
            let words = spec.help.split(separator: " ").prefix(4).joined(separator: " ")
            #expect(help.contains(words), "\(name) --help lacks the help of \(spec.long)")
        }
        if let positionals = command.positionalsSpec { #expect(help.contains(positionals.usage)) }
    }

    @Test(arguments: commands)
    func namesAndKeysAreUnique(_ name: String) {
        let specs = Self.command(name).optionSpecs
        let longs = specs.map(\.long)
        let shorts = specs.compactMap(\.short)
        let keys =
            specs.compactMap(\.jobKey.name) + ["description"]
            + [Self.command(name).positionalsSpec?.jobKey.name]
            .compactMap { $0 }
        #expect(Set(longs).count == longs.count, "\(longs)")
        #expect(Set(shorts).count == shorts.count, "\(shorts)")
        #expect(Set(keys).count == keys.count, "\(keys)")
        #expect(longs.allSatisfy { $0.hasPrefix("--") && $0.count > 3 })
    }

    @Test(arguments: commands)
    func everyOptionHasAJobKeyOrSaysWhyNot(_ name: String) {
        let command = Self.command(name)
        for spec in command.optionSpecs {
            switch spec.jobKey {
            case .key(let key), .negatedKey(let key):
                #expect(command.jobFileOption != nil, "\(spec.long) has key \(key) but \(name) takes no job file")
                #expect(key.first?.isLowercase == true && !key.contains("-"), "key \(key) is not camelCase")
            case .notInJobFiles(let reason):
                #expect(command.jobFileOption != nil, "\(spec.long): \(name) takes no job file")
                #expect(reason.count > 10, "\(spec.long) gives no reason for having no job key")
            case .commandTakesNoJobFiles:
                #expect(command.jobFileOption == nil, "\(spec.long) of \(name) needs a job key or a reason")
            }
        }
    }

    @Test func theShortNamesPeopleTypeByReflex() {
        let expected: [(String, Character, String)] = [
            ("run", "j", "--concurrency"), ("run", "n", "--dry-run"), ("run", "q", "--quiet"),
            ("report", "o", "--output"),
        ]
        for (command, short, long) in expected {
            #expect(Self.command(command).optionSpecs.first { $0.short == short }?.long == long)
        }
        for command in CLI.commands {
            #expect(command.optionSpecs.contains { $0.short == "h" && $0.long == "--help" })
        }
    }

    @Test func simulateStallIsInItsHelp() {
        #expect(HelpText.command(SimulateCommand.self).contains("--stall DUR"))
    }

    /// Each option's help is wrapped under its column: no line past the width, every line as full
    /// as the next word allows, every word kept in order.
    @Test(arguments: commands)
    func helpIsWrappedUnderItsColumn(_ name: String) {
        for spec in Self.command(name).optionSpecs {
            let help = HelpText.helpLine(spec)
            var lines = HelpText.entry(spec.signature, help).split(separator: "\n").map(String.init)
            // A signature too long for the column has its own line.
            if lines[0].trimmingCharacters(in: .whitespaces) == spec.signature { lines.removeFirst() }
            let words = lines.flatMap { $0.dropFirst(HelpText.column).split(separator: " ") }
            #expect(words.map(String.init) == help.split(separator: " ").map(String.init), "\(spec.long)")
            for (line, next) in zip(lines, lines.dropFirst()) where line.count > HelpText.column {
                #expect(line.count <= HelpText.width, "\(spec.long): \(line)")
                let word = next.dropFirst(HelpText.column).prefix { $0 != " " }
                #expect(line.count + 1 + word.count > HelpText.width, "\(spec.long) could take '\(word)': \(line)")
            }
        }
        // A word longer than the room stays on its option's line rather than leaving it empty.
        let url = "https://" + String(repeating: "w", count: 90)
        #expect(HelpText.entry("--link URL", url + " more").split(separator: "\n").first?.hasSuffix(url) == true)
    }

    @Test func theOverviewListsEveryCommand() {
        for command in CLI.commands {
            #expect(HelpText.overview.contains("botsi-restore \(command.name) \(command.synopsis)"))
        }
        #expect(HelpText.overview.contains("-V | --version"))
    }
}

/// The settings as text, to compare settings types that are not Equatable.
func dumped<T>(_ value: T) -> String {
    var text = ""
    dump(value, to: &text)
    return text
}

func everyOptionParses<C: Command>(_ command: C.Type) throws {
    let initial = dumped(C.initialSettings())
    // `--job FILE` reads the file: the job-file tests and the end-to-end tests cover it.
    for spec in C.optionSpecs where spec.long != "--help" && spec.long != C.jobFileOption {
        guard let example = spec.example else {
            let set = dumped(try C.settings(from: [spec.long]).settings)
            #expect(set != initial, "\(C.name) \(spec.long) changes nothing")
            if let short = spec.short { #expect(dumped(try C.settings(from: ["-\(short)"]).settings) == set) }
            continue
        }
        let set = dumped(try C.settings(from: [spec.long, example]).settings)
        #expect(set != initial, "\(C.name) \(spec.long) \(example) changes nothing")
        #expect(dumped(try C.settings(from: ["\(spec.long)=\(example)"]).settings) == set)
        if let short = spec.short {
            #expect(dumped(try C.settings(from: ["-\(short)", example]).settings) == set)
            #expect(dumped(try C.settings(from: ["-\(short)\(example)"]).settings) == set)
        }
        if !spec.repeatable {
            #expect(throws: UsageError.self) { try C.settings(from: [spec.long, example, spec.long, example]) }
        }
    }
}

func everyJobKeyMatchesItsOption<C: Command>(_ command: C.Type) throws {
    guard C.jobFileOption != nil else { return }
    for option in C.options {
        let spec = option.spec
        guard let key = spec.jobKey.name else { continue }
        let commandLine = dumped(try C.settings(from: [spec.long] + [spec.example].compactMap { $0 }).settings)
        var candidates: [JSONValue] = []
        if let example = spec.example {
            candidates = [.string(example)]
            if let number = Double(example.replacingOccurrences(of: "%", with: "")) {
                candidates.append(.number(number))
            }
        } else {
            candidates = [.bool(spec.jobKey == .key(key))]
        }
        let fromJob = candidates.compactMap { value -> String? in
            var settings = C.initialSettings()
            guard
                (try? JobFile(path: "t.json", values: [key: value]).apply(
                    to: &settings, options: C.options, positionals: C.positionals)) != nil
            else { return nil }
            return dumped(settings)
        }
        #expect(fromJob.first == commandLine, "\"\(key)\" does not mean \(spec.long) \(spec.example ?? "")")
    }
}

func defaultsAreInForce<C: Command>(_ command: C.Type) throws {
    let initial = dumped(C.initialSettings())
    for spec in C.optionSpecs {
        guard let value = spec.defaultValue else { continue }
        #expect(
            dumped(try C.settings(from: [spec.long, value]).settings) == initial,
            "\(C.name) --help says \(spec.long) defaults to \(value), which is not the default in force")
    }
}

func emptyValuesAreRefused<C: Command>(_ command: C.Type) {
    for spec in C.optionSpecs where spec.takesValue {
        #expect {
            try C.settings(from: [spec.long, ""])
        } throws: { error in
            (error as? UsageError)?.message.hasPrefix("option '\(spec.long)' needs ") == true
        }
    }
}
