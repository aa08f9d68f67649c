import BotsiFiles
import BotsiJournal
import BotsiRestore
import Foundation

enum ReportCommand {
    static let spec = CommandSpec(
        name: "report",
        options: [
            .flag("--help"), .value("--journal"), .value("--run"), .value("--status", repeatable: true),
            .value("--code", repeatable: true), .value("--since"), .value("--format"), .value("--output"),
            .flag("--changes"), .value("--since-run"),
        ],
        takesPositionals: false)

    static func main(_ arguments: [String]) throws -> Int32 {
        let parsed = try ParsedArguments(arguments, spec: spec)
        if parsed.has("--help") {
            Output.out(Help.report)
            return ExitCode.success
        }
        let formatName = parsed.value("--format") ?? "jsonl"
        guard let format = ReportFormat(rawValue: formatName) else {
            throw UsageError(message: "option '--format' must be jsonl, csv or table, not '\(formatName)'")
        }
        if parsed.has("--changes") { return try changes(parsed, format: format) }
        if parsed.value("--since-run") != nil {
            throw UsageError(message: "option '--since-run' goes with --changes")
        }
        let statuses = parsed.all("--status")
        let known = ItemStatus.allCases.map(\.rawValue)
        for status in statuses where !known.contains(status) {
            throw UsageError(message: "unknown status '\(status)'; use one of \(known.joined(separator: ", "))")
        }
        var filter = ReportFilter(statuses: statuses, codes: parsed.all("--code"))
        if let since = parsed.value("--since") {
            if let seconds = parseDuration(since) {
                filter.since = Date().addingTimeInterval(-seconds)
            } else if let date = Timestamp.date(since) {
                filter.since = date
            } else {
                throw UsageError(message: "option '--since' needs an ISO-8601 time or a duration such as 24h")
            }
        }
        let path = parsed.value("--journal") ?? "botsi-restore.sqlite"
        do {
            // The output is checked first: one that is refused leaves even the journal unread.
            let sink = try ReportSink(path: parsed.value("--output"), journal: path)
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            if let run = parsed.value("--run") {
                filter.runID = try resolveRun(run, journal: journal)
            }
            let writer = ReportWriter(format: format) { sink.write($0) }
            writer.header()
            try journal.forEachReportRecord(filter) { writer.write($0) }
            writer.finish()
            try sink.commit()
            return ExitCode.success
        } catch let error as JournalError {
            Output.error("botsi-restore report: \(error.description)")
            return ExitCode.cannotCreate
        } catch let error as UsageError {
            throw error
        } catch let error as FileError {
            Output.error("botsi-restore report: \(error.description)")
            return ExitCode.cannotCreate
        }
    }

    /// `--changes --run B --since-run A`: rows whose status or profile snapshot differs between
    /// the two runs. B defaults to the latest run, A to the run before B.
    static func changes(_ parsed: ParsedArguments, format: ReportFormat) throws -> Int32 {
        for option in ["--status", "--code", "--since"] where parsed.value(option) != nil {
            throw UsageError(message: "option '\(option)' does not apply to --changes; filter the output instead")
        }
        let path = parsed.value("--journal") ?? "botsi-restore.sqlite"
        do {
            let sink = try ReportSink(path: parsed.value("--output"), journal: path)
            let journal = try Journal(path: path, create: false, readOnly: true)
            defer { journal.close() }
            let later = try resolveRun(parsed.value("--run") ?? "latest", journal: journal)
            let earlier = try parsed.value("--since-run").map { try resolveRun($0, journal: journal) } ?? later - 1
            guard earlier >= 1, earlier < later else {
                throw UsageError(
                    message: "--changes compares an earlier run (--since-run) with a later one (--run); "
                        + "run \(later) has no earlier run \(earlier)")
            }
            let writer = ChangeWriter(format: format) { sink.write($0) }
            writer.header()
            try journal.forEachChange(since: earlier, until: later) { writer.write($0) }
            writer.finish()
            try sink.commit()
            return ExitCode.success
        } catch let error as JournalError {
            Output.error("botsi-restore report: \(error.description)")
            return ExitCode.cannotCreate
        } catch let error as FileError {
            Output.error("botsi-restore report: \(error.description)")
            return ExitCode.cannotCreate
        }
    }

    static func resolveRun(_ text: String, journal: Journal) throws -> Int64 {
        let runs = try journal.runs()
        if text == "latest" {
            guard let last = runs.last else { throw UsageError(message: "the journal has no runs yet") }
            return last.id
        }
        guard let id = Int64(text), runs.contains(where: { $0.id == id }) else {
            throw UsageError(message: "no run '\(text)' in the journal; runs are numbered 1 to \(runs.count)")
        }
        return id
    }
}

/// stdout, or a file with mode 0600 (reports hold customer ids), written beside its target and
/// renamed over it only when whole: never through a link, into a device, or over the journal.
final class ReportSink {
    private let file: OutputFile?
    private var buffer: [UInt8] = []

    /// `journal` is the path of the journal the output must never replace, under any of its names.
    init(path: String?, journal: String? = nil) throws(FileError) {
        guard let path else {
            file = nil
            return
        }
        var protected = ProtectedFiles()
        if let journal { protected.add(journalAt: journal) }
        file = try OutputFile(path: path, role: "report", mode: 0o600, protecting: protected)
    }

    func write(_ text: String) {
        if let file { return file.write(text) }
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { drain() }
    }

    private func drain() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    /// The whole report is out: flushes stdout, or puts the file in place.
    func commit() throws(FileError) {
        drain()
        try file?.commit()
    }
}
