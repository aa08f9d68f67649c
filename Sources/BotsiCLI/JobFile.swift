import BotsiRestore

/// `run --job FILE`: the job file's keys become `run` options placed before the command line's,
/// leaving out any option the command line gives itself, so flags on the command line win.
/// Inputs named on the command line replace the job's inputs.
enum JobFile {
    static func expand(_ arguments: [String], spec: CommandSpec) throws(UsageError) -> [String] {
        let commandLine = try ParsedArguments(arguments, spec: spec)
        guard let path = commandLine.value("--job"), !commandLine.has("--help") else { return arguments }
        let job: JobDefinition
        do {
            job = try JobDefinition.load(path: path)
        } catch {
            throw UsageError(message: error.message)
        }
        var prefix: [String] = []
        for (option, value) in job.options where !commandLine.gives(option) {
            guard spec.options.contains(where: { $0.name == option }) else {
                let key = JobDefinition.keys.first { $0.option == option }?.name ?? option
                throw UsageError(
                    message: "job file \(path): key '\(key)' needs the option \(option), which this botsi-restore lacks"
                )
            }
            prefix.append(option)
            if let value { prefix.append(value) }
        }
        var expanded = prefix + arguments
        if commandLine.positionals.isEmpty {
            if !arguments.contains("--") { expanded.append("--") }
            expanded += job.inputs
        }
        return expanded
    }
}

extension ParsedArguments {
    /// Whether the command line set this option or flag itself.
    fileprivate func gives(_ option: String) -> Bool {
        has(option) || value(option) != nil
    }
}
