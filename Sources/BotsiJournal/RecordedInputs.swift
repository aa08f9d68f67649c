import Foundation

/// An input a run of the journal was given, as it was typed (`-` for stdin).
public struct RecordedInput: Sendable, Equatable {
    public var runID: Int64
    public var path: String
    /// Its absolute path, where the run recorded one (`runs.options.inputPaths`): a relative path
    /// names a file only from the run's own working directory.
    public var absolutePath: String?

    public init(runID: Int64, path: String, absolutePath: String? = nil) {
        self.runID = runID
        self.path = path
        self.absolutePath = absolutePath
    }
}

extension Journal {
    /// Every input every run was given, from `runs.options` (written when the run starts, so a run
    /// still going is included), in run order: what a report's output must never replace.
    public func recordedInputs() throws(JournalError) -> [RecordedInput] {
        struct Options: Decodable {
            var inputs: [String]?
            var inputPaths: [String]?
        }
        let rows = try wrap { () throws(SQLiteError) -> [(Int64, String)] in
            let statement = try connection.prepare("SELECT id, options FROM runs ORDER BY id")
            var rows: [(Int64, String)] = []
            while try statement.step() { rows.append((statement.int(0), statement.text(1) ?? "{}")) }
            return rows
        }
        var inputs: [RecordedInput] = []
        for (runID, text) in rows {
            let options = try ColumnJSON.decode(Options.self, text, path: path, column: "options", row: runID)
            let typed = options.inputs ?? []
            let absolute = options.inputPaths.flatMap { $0.count == typed.count ? $0 : nil }
            for (index, input) in typed.enumerated() {
                inputs.append(RecordedInput(runID: runID, path: input, absolutePath: absolute?[index]))
            }
        }
        return inputs
    }
}
