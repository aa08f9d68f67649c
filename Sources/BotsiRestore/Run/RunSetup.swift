import BotsiAPI
import BotsiBasics
import BotsiFiles
import BotsiInput
import BotsiJournal
import Foundation

/// Opens what a run needs, in the order a dry run checks them too, turning each failure into
/// its exit status and message: the inputs (on the input thread, `InputPump`), the journal (with
/// the run's record), the client.
enum RunSetup {
    /// The journal, opened for the run with its record started.
    struct OpenedJournal {
        let writer: RunJournalWriter
        /// The run's options, with the cutoff of the selection it continues (`continuingFrom`).
        let options: RunOptions
        /// The stopped (or killed) selection run this one continues, with the same selection.
        let continuingFrom: Int64?
        /// What a killed run had left in flight, put right.
        let recovered: InFlightRecovery
        /// A dry run on a journal that does not exist checks against a throw-away one, here.
        let temporaryDirectory: String?
    }

    /// Starts opening the inputs on their own thread; `onOpened` is called there when it ends.
    static func openInputs(_ options: RunOptions, onOpened: @escaping @Sendable () -> Void) -> InputPump {
        InputPump(
            paths: options.inputs, format: options.format.flatMap(InputFormat.init(rawValue:)),
            options: options.inputOptions, onOpened: onOpened)
    }

    /// The journal, locked for the run, with the run's record started. On failure nothing stays open.
    static func openJournal(
        _ options: RunOptions, startedAt: Date, toolVersion: String
    ) throws(RunSetupError) -> OpenedJournal {
        try RunPreflight.checkJournalForRunWithoutInput(options)
        var path = options.journalPath
        var temporaryDirectory: String?
        do {
            if options.dryRun, try !Journal.preflight(path: path) {
                // A dry run must not leave a journal behind: check against an empty throw-away one.
                let directory = try Files.makePrivateDirectory(prefix: "botsi-restore-dry-run")
                temporaryDirectory = directory
                path = directory + "/journal.sqlite"
            }
        } catch {
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: "\(error)")
        }
        var opened: Journal?
        do {
            // The run lock is the journal file's own: taken before SQLite touches the file.
            let journal = try Journal.openForRun(path: path, migrationUncommitted: options.dryRun)
            opened = journal
            var options = options
            let continued = try continuedSelection(options, on: journal)
            if let continued { options.answeredBefore = Timestamp.string(continued.cutoff) }
            if !options.dryRun, let warning = try splitChange(options, on: journal) {
                Notices.post(Notice(.warning, warning))
            }
            let (writer, recovered) = try RunJournalWriter.startRun(
                on: journal, options: options, startedAt: startedAt, toolVersion: toolVersion)
            return OpenedJournal(
                writer: writer, options: options, continuingFrom: continued?.run, recovered: recovered,
                temporaryDirectory: temporaryDirectory)
        } catch {
            opened?.close()
            if let temporaryDirectory { Files.removePrivateDirectory(temporaryDirectory) }
            if case .locked = error {
                throw RunSetupError(exitCode: ExitCode.temporaryFailure, message: error.description)
            }
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: error.description)
        }
    }

    /// A selection run (`--retry-failed`, `--refresh-older-than`) right after a run of the same
    /// selection that stopped owing some of it, or was killed: it goes on where that one stopped,
    /// leaving out the rows answered since that run's start, as the stopped run's advice does with
    /// `--answered-before`. Run again by cron or by hand as it was first typed, a window-bound
    /// refresh of every row started at the first row each time and never got through its list.
    /// An `--answered-before` given chooses for itself.
    static func continuedSelection(
        _ options: RunOptions, on journal: Journal
    ) throws(JournalError) -> (run: Int64, cutoff: Date)? {
        guard options.answeredBefore == nil, options.retryFailed || options.refreshOlderThan != nil,
            let last = try journal.latestRuns(limit: 1).runs.last, let recorded = RunOptions.recorded(last.options),
            recorded.retryFailed == options.retryFailed, recorded.refreshOlderThan == options.refreshOlderThan,
            recorded.shardIndex == options.shardIndex, recorded.shardCount == options.shardCount,
            let started = Timestamp.date(last.startedAt)
        else { return nil }
        // The lock is this run's: a run without an end is one that was killed.
        guard last.endedAt == nil || last.counts.selectionOwed > 0 else { return nil }
        let earlier = recorded.answeredBefore.flatMap(Timestamp.date)
        return (last.id, min(earlier ?? started, started))
    }

    /// The journal's latest run split the job so that this run's shard takes rows of other shards of
    /// that split (4 shards become 2, or a shard's journal is run unsharded): those their own
    /// journals finished are not known here and are sent again. Said before any request (an
    /// operator review: 2,000 of 4,000 pairs restored twice, told only by a later `merge`).
    static func splitChange(_ options: RunOptions, on journal: Journal) throws(JournalError) -> String? {
        guard !options.inputs.isEmpty, let last = try journal.latestRuns(limit: 1).runs.last,
            let recorded = RunOptions.recorded(last.options)
        else { return nil }
        let (index, count) = (recorded.shardIndex, max(1, recorded.shardCount))
        // FNV-1a modulo N: shard i/M takes only rows of shard j/N when N divides M and i mod N = j.
        guard options.shardCount % count != 0 || options.shardIndex % count != index else { return nil }
        let split = { (index: Int, count: Int) in count > 1 ? "--shard \(index)/\(count)" : "without --shard" }
        return "botsi-restore: warning: journal \(RunAdvice.shellQuoted(options.journalPath))'s latest run (run "
            + "\(last.id)) was \(split(index, count)); this run, \(split(options.shardIndex, options.shardCount)), "
            + "takes rows of other shards of that split: those finished in their own journals are not known here "
            + "and are sent again (keep the split to avoid it; merge counts each pair once)"
    }

    /// The client; its results arrive on the curl thread, through `deliver`.
    static func startClient(
        _ options: RunOptions, apiKey: String, toolVersion: String,
        deliver: @escaping @Sendable (RestoreResult) -> Void
    ) throws(RunSetupError) -> RestoreClient {
        let configuration = RunPreflight.clientConfiguration(options, apiKey: apiKey, toolVersion: toolVersion)
        do {
            return try RestoreClient(configuration: configuration, onResult: deliver)
        } catch {
            // Memory, descriptors, a thread, libcurl's set-up: the machine's, not the command line's.
            let code = error.kind == .localResource ? ExitCode.osError : ExitCode.usage
            throw RunSetupError(exitCode: code, message: error.message)
        }
    }
}

/// A run that could not start: bad options, unusable input, or a journal that cannot be used.
public struct RunSetupError: Error, CustomStringConvertible, Sendable {
    public let exitCode: Int32
    public let message: String
    public var description: String { message }
}
