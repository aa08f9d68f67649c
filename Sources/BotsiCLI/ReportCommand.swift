import BotsiBasics
import BotsiFiles
import BotsiJournal
import BotsiRestore
import Foundation

/// What `report`'s options fill in.
struct ReportSettings: JournalsReading {
    var journal = "botsi-restore.sqlite"
    var journals: [String] = []
    var run: String?
    var statuses: [String] = []
    var codes: [String] = []
    var since: Date?
    var format = ReportFormat.jsonl
    /// `--format html`: one page for people instead of one record per row.
    var html = false
    var output: String?
    var changes = false
    var sinceRun: String?
    var conflicts = false
    /// `--columns`: the columns to write, in this order; nil for every one.
    var columns: [String]?
}

enum ReportCommand: Command {
    static let name = "report"
    static let summary = "print the journal, one record per row"
    static let synopsis = "[options]"
    static let discussion = """
        Prints the journal, one record per row: profileId, originalTransactionId, status, code,
        httpStatus, attempts, source (file:line), updatedAt, and the profile snapshot (profileState,
        activeAccessLevels, expiresAt, willRenew, accessLevels). Safe while a run writes the journal.
        """
    static let epilogue = "See docs/reports.md for every column."

    static func initialSettings() -> ReportSettings { ReportSettings() }

    static func run(_ settings: ReportSettings) throws -> Int32 {
        // A stop while --output is written leaves no half-written file behind.
        TemporaryFiles.removeOnStop()
        if settings.html { return try html(settings) }
        if settings.allJournals.count > 1 {
            throw UsageError(
                message: "several --journal are read together only by --format html; for rows, merge the shards "
                    + "first (botsi-restore merge) or report each journal")
        }
        try checkColumns(settings)
        if settings.conflicts { return try conflicts(settings) }
        if settings.changes { return try changes(settings) }
        if settings.sinceRun != nil {
            throw UsageError(message: "option '--since-run' goes with --changes")
        }
        var filter = ReportFilter(statuses: settings.statuses, codes: settings.codes)
        filter.since = settings.since
        return try withReportOutput(settings) { journal, sink in
            if let run = settings.run {
                filter.runID = try resolveRun(run, journal: journal)
            }
            let writer = try ReportWriter(
                format: settings.format, sink: .chunks { sink.write(bytes: $0) }, columns: settings.columns)
            writer.header()
            try journal.forEachReportRow(filter) { writer.write($0) }
            writer.finish()
        }
    }

    /// `--columns` names only columns the chosen report has: refused before any output is opened.
    private static func checkColumns(_ settings: ReportSettings) throws(UsageError) {
        guard let chosen = settings.columns else { return }
        let known =
            settings.conflicts ? ConflictWriter.columns : settings.changes ? ChangeWriter.columns : ReportWriter.columns
        for name in chosen where !known.contains(name) {
            let hint = Basics.nearest(to: name, among: known).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError(
                message: "--columns: the report has no column '\(name)'\(hint); its columns are "
                    + known.joined(separator: ", "))
        }
    }

    /// `--changes --run B --since-run A`: rows whose status or profile snapshot differs between
    /// the two runs. B defaults to the latest run, A to the run before B (none before the first;
    /// in a merged journal, before each shard's latest run: `ChangeRange`).
    static func changes(_ settings: ReportSettings) throws -> Int32 {
        try refuse(
            [
                ("--status", !settings.statuses.isEmpty), ("--code", !settings.codes.isEmpty),
                ("--since", settings.since != nil),
            ],
            with: "--changes")
        return try withReportOutput(settings) { journal, sink in
            let later = try resolveRun(settings.run ?? "latest", journal: journal)
            // The first run, with no --since-run, is compared with the empty journal before it (run
            // 0): a morning audit's first morning lists what the first night did, not exit 64.
            let earlier =
                try settings.sinceRun.map { try resolveRun($0, journal: journal) }
                ?? ([nil, "latest"].contains(settings.run)
                    ? ChangeRange.defaultEarlier(runs: try journal.runs(), later: later) : max(later - 1, 0))
            guard earlier >= (settings.sinceRun == nil ? 0 : 1), earlier < later else {
                throw UsageError(
                    message: "--changes compares an earlier run (--since-run) with a later one (--run); "
                        + "run \(later) has no earlier run \(earlier)")
            }
            let writer = try ChangeWriter(
                format: settings.format, sink: .chunks { sink.write(bytes: $0) }, columns: settings.columns)
            writer.header()
            try journal.forEachChange(since: earlier, until: later) { writer.write($0) }
            writer.finish()
        }
    }

    /// `--conflicts`: every transaction two or more profiles claim, with each claim's outcome.
    static func conflicts(_ settings: ReportSettings) throws -> Int32 {
        try refuse(
            [
                ("--changes", settings.changes), ("--since-run", settings.sinceRun != nil),
                ("--run", settings.run != nil),
                ("--status", !settings.statuses.isEmpty), ("--code", !settings.codes.isEmpty),
                ("--since", settings.since != nil),
            ], with: "--conflicts")
        return try withReportOutput(settings) { journal, sink in
            let writer = try ConflictWriter(
                format: settings.format, sink: .chunks { sink.write(bytes: $0) }, columns: settings.columns)
            writer.header()
            try journal.forEachConflict { writer.write($0) }
            writer.finish()
        }
    }

    /// Refuses the first of `options` that was given: it does not apply to `mode`.
    static func refuse(_ options: [(name: String, given: Bool)], with mode: String) throws(UsageError) {
        if let option = options.first(where: { $0.given }) {
            throw UsageError(message: "option '\(option.name)' does not apply to \(mode); filter the output instead")
        }
    }

    /// What every report shares: the output is checked first against the journal (one onto it
    /// leaves even the journal unread), then the journal is opened read-only and the output opened
    /// where it replaces neither the journal nor an input any of its runs read; `body` writes; the
    /// output is put in place only when whole. A journal or file failure is exit 73 with its
    /// message; a usage error goes up.
    private static func withReportOutput(
        _ settings: ReportSettings, _ body: (Journal, ReportSink) throws -> Void
    ) throws -> Int32 {
        try withReportOutput(settings, journals: [settings.journal]) { journals, sink in try body(journals[0], sink) }
    }

    /// The same for several journals (the shards of one job): none of them, nor any input of
    /// theirs, can be the output.
    static func withReportOutput(
        _ settings: ReportSettings, journals paths: [String], _ body: ([Journal], ReportSink) throws -> Void
    ) throws -> Int32 {
        do {
            var protected = ProtectedFiles()
            for path in paths { protected.add(journalAt: path) }
            let file = ReportSink.file(settings.output)
            if let file { _ = try OutputFile.checkTarget(file, role: "report", protecting: protected) }
            var journals: [Journal] = []
            defer { for journal in journals { journal.close() } }
            for path in paths { journals.append(try Journal(path: path, create: false, readOnly: true)) }
            if file != nil {
                for journal in journals { try protectInputs(of: journal, in: &protected) }
            }
            let sink = try ReportSink(path: file, protecting: protected)
            try body(journals, sink)
            try sink.commit()
            return ExitCode.success
        } catch let error as JournalError {
            Output.errorLine("botsi-restore report: \(error.description)")
            return error.exitCode
        } catch let error as FileError {
            Output.errorLine("botsi-restore report: \(error.description)")
            return ExitCode.cannotCreate
        }
    }

    /// The inputs the journal's runs were given. A relative one is taken both from here and from
    /// the journal's directory: which directory the run had is not recorded.
    private static func protectInputs(of journal: Journal, in protected: inout ProtectedFiles) throws(JournalError) {
        let journalDirectory = journal.file.resolved.directory
        for input in try journal.recordedInputs() where input.path != "-" {
            let description = "the input \(input.path) of run \(input.runID) of this journal"
            protected.add(inputAt: input.path, as: description)
            protected.add(inputAt: input.path, as: description, relativeTo: journalDirectory)
            // Where the run found it: a report run from another directory (cron's layout) met
            // neither guess above and replaced an export the journal still owed.
            if let absolute = input.absolutePath { protected.add(inputAt: absolute, as: description) }
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

/// stdout (no `--output`, or `--output -`), or a file with mode 0600 (reports hold customer ids), written beside its target and
/// renamed over it only when whole: never through a link, into a device, or over the journal.
final class ReportSink {
    private let file: OutputFile?
    private var buffer: [UInt8] = []

    /// The file `--output` names; nil for standard output (no `--output`, or `--output -`, as for
    /// every tool that takes an output file).
    static func file(_ output: String?) -> String? {
        output == "-" ? nil : output
    }

    /// `path` nil is standard output. `protected`: what the file must never replace (the journal
    /// under any of its names, its runs' inputs).
    init(path: String?, protecting protected: ProtectedFiles = ProtectedFiles()) throws(FileError) {
        guard let path else {
            file = nil
            return
        }
        file = try OutputFile(path: path, role: "report", mode: 0o600, protecting: protected)
    }

    func write(_ text: String) {
        if let file { return file.write(text) }
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { drain() }
    }

    func write(bytes: [UInt8]) {
        if let file { return file.write(bytes) }
        buffer.append(contentsOf: bytes)
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
