/// `--help` texts, written from `CLI.commands` and their option tables, so an option that
/// parses is an option that help lists.
enum HelpText {
    /// Where the help column starts, and how wide lines may grow.
    static let column = 32
    static let width = 110

    static var usageLines: String {
        let width = CLI.commands.map { $0.name.count + $0.synopsis.count }.max() ?? 0
        var lines = CLI.commands.map { command in
            let left = "botsi-restore \(command.name) \(command.synopsis)"
            return left.padding(to: width + 20) + command.summary
        }
        lines.append("botsi-restore -h | --help | -V | --version | help <command> | <command> --help")
        return "usage: " + lines.joined(separator: "\n       ")
    }

    static var overview: String {
        """
        botsi-restore \(CLI.version) — restore App Store purchases in bulk through Botsi's restore endpoint.

        \(usageLines)

        The API key is read from the environment (BOTSI_SECRET_KEY, or the variable --key-env names)
        or from a private file (--key-file), never from the command line. Every outcome is journaled
        in SQLite: every run first sends the rows earlier runs left pending, and never resends
        finished rows unless asked to.
        """
    }

    /// The line shown under a usage error.
    static func usage(for name: String) -> String {
        guard let command = CLI.command(named: name) else { return usageLines }
        return "usage: botsi-restore \(command.name) \(command.synopsis); see 'botsi-restore \(command.name) --help'"
    }

    static func command(_ command: any Command.Type) -> String {
        var text = "usage: botsi-restore \(command.name) \(command.synopsis)\n"
        if !command.discussion.isEmpty { text += "\n\(command.discussion)\n" }
        if let positionals = command.positionalsSpec {
            text += "\nArguments:\n" + entry(positionals.usage, positionals.help)
        }
        var heading: String?
        for spec in command.optionSpecs {
            let section = spec.section ?? "Options"
            if section != heading {
                text += "\n\(section):\n"
                heading = section
            }
            text += entry(spec.signature, helpLine(spec))
        }
        if !command.epilogue.isEmpty { text += "\n\(command.epilogue)\n" }
        return String(text.dropLast())
    }

    /// The option's help with its default, as help and the man page show it.
    static func helpLine(_ spec: OptionSpec) -> String {
        var help = spec.help
        if let value = spec.defaultValue { help += " (default \(value))" }
        if spec.repeatable && spec.takesValue { help += "; repeatable" }
        return help
    }

    /// "  --journal PATH   help…", the help wrapped under its column.
    static func entry(_ signature: String, _ help: String) -> String {
        let left = "  " + (signature.hasPrefix("--") ? "    " + signature : signature)
        var lines: [String] = []
        var line = left.count + 1 < column ? left.padding(to: column) : ""
        if line.isEmpty { lines.append(left) }
        for word in help.split(separator: " ") {
            if line.count > column, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            if line.isEmpty { line = "".padding(to: column) }
            line += (line.count > column ? " " : "") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    /// Spaces on the right up to `width`.
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
