import BotsiAPI
import BotsiBasics
import BotsiJournal
import Foundation

/// The checks a run makes before its first request that do not need the journal open. A dry run
/// makes the same ones and exits with the same code, then stops short of sending.
enum RunPreflight {
    /// The client the run will use, as the run will configure it.
    static func clientConfiguration(_ options: RunOptions, apiKey: String, toolVersion: String) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            baseURL: options.baseURL, apiKey: apiKey, userAgent: "botsi-restore/\(toolVersion)")
        configuration.requestTimeout = options.timeout
        configuration.connectTimeout = options.connectTimeout
        configuration.maxConnections = options.concurrency
        configuration.caCertificatePath = options.caCertificatePath
        configuration.insecureSkipTLSVerify = options.insecureSkipTLSVerify
        configuration.retryAfterCap = options.retryAfterCap
        configuration.proxy = options.noProxy ? .none : options.proxy.map { .url($0) } ?? .environment
        return configuration
    }

    /// Base-URL policy, a well-formed key, a readable CA file: exit 64 otherwise.
    static func checkClient(_ options: RunOptions, apiKey: String, toolVersion: String) throws(RunSetupError) {
        do {
            try checkClientConfiguration(clientConfiguration(options, apiKey: apiKey, toolVersion: toolVersion))
        } catch {
            throw RunSetupError(exitCode: ExitCode.usage, message: error.message)
        }
    }

    /// A run without input files sends what its journal owes, so the journal must exist (66). Asked
    /// of the resolver that opens it; a path it cannot resolve (a missing directory, a link to
    /// nothing) holds no journal either.
    static func checkJournalForRunWithoutInput(_ options: RunOptions) throws(RunSetupError) {
        guard options.inputs.isEmpty, (try? Journal.preflight(path: options.journalPath)) != true else { return }
        throw RunSetupError(
            exitCode: ExitCode.noInput,
            message:
                "journal \(options.journalPath) does not exist and no input file was named, so there is nothing to send; "
                + "name the .csv/.jsonl files to read (or - for stdin), or give --journal the path of an existing journal "
                + "to send the rows it owes")
    }
}
