import BotsiAPI
import BotsiFiles
import BotsiInput
import BotsiJournal
import Foundation

/// Opens what a run needs, in the order a dry run checks them too, turning each failure into
/// its exit status and message: the inputs, the journal (with the run's record), the client.
enum RunSetup {
    /// What a run opened before its client: its inputs and its journal.
    struct Opened {
        let readers: [InputReader]
        let writer: RunJournalWriter
        /// What a killed run had left in flight, put right.
        let recovered: InFlightRecovery
        /// A dry run on a journal that does not exist checks against a throw-away one, here.
        let temporaryDirectory: String?
    }

    /// Everything but the client, in the order a dry run checks it too (it exits as the real run
    /// would). On failure nothing stays open.
    static func open(
        _ options: RunOptions, apiKey: String, toolVersion: String, startedAt: Date
    ) throws(RunSetupError) -> Opened {
        try RunPreflight.checkClient(options, apiKey: apiKey, toolVersion: toolVersion)
        let readers = try openInputs(options)
        do throws(RunSetupError) {
            try RunPreflight.checkJournalForRunWithoutInput(options)
            let (writer, recovered, directory) = try openJournal(
                options, startedAt: startedAt, toolVersion: toolVersion)
            return Opened(readers: readers, writer: writer, recovered: recovered, temporaryDirectory: directory)
        } catch {
            for reader in readers { reader.close() }
            throw error
        }
    }

    private static func openInputs(_ options: RunOptions) throws(RunSetupError) -> [InputReader] {
        let format = options.format.flatMap(InputFormat.init(rawValue:))
        var readers: [InputReader] = []
        for path in options.inputs {
            do {
                readers.append(try InputReader(path: path, format: format, options: options.inputOptions))
            } catch {
                let code: Int32
                switch error.kind {
                case .fileMissing, .unreadable: code = ExitCode.noInput
                case .unknownFormat: code = ExitCode.usage
                case .notTabular, .missingColumns, .damaged: code = ExitCode.dataError
                }
                for reader in readers { reader.close() }
                throw RunSetupError(exitCode: code, message: error.message)
            }
        }
        return readers
    }

    private static func openJournal(
        _ options: RunOptions, startedAt: Date, toolVersion: String
    ) throws(RunSetupError) -> (RunJournalWriter, InFlightRecovery, temporaryDirectory: String?) {
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
            let (writer, recovered) = try RunJournalWriter.startRun(
                on: journal, options: options, startedAt: startedAt, toolVersion: toolVersion)
            return (writer, recovered, temporaryDirectory)
        } catch {
            opened?.close()
            if let temporaryDirectory { Files.removePrivateDirectory(temporaryDirectory) }
            if case .locked = error {
                throw RunSetupError(exitCode: ExitCode.temporaryFailure, message: error.description)
            }
            throw RunSetupError(exitCode: ExitCode.cannotCreate, message: error.description)
        }
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
