import BotsiAPI
import BotsiJournal

/// Where a run is, once setup has made its parts: sending, stopping (nothing more is sent; the
/// requests in flight finish), or finished (recorded; nothing more happens).
enum RunPhase: Equatable {
    case running
    case stopping(RunStop)
    case finished
}

/// A row a dry run would send: a new pair of its input, or one the journal owes (with its status).
public struct WouldSend: Sendable, Equatable {
    public var profileId: String
    public var originalTransactionId: String
    /// `file:line` where it was read (for an owed row, where it was last read).
    public var source: String
    /// The status of a row the journal owes; nil for a new pair.
    public var owed: ItemStatus?
}

/// What setup made, whole: the run holds its parts without optionals.
struct RunParts {
    /// Where requests go: the client, or nowhere in a dry run.
    enum Sender {
        case client(RestoreClient, ResultHandOff)
        case dryRun
    }

    let writer: RunJournalWriter
    let feeder: InputFeeder
    let pump: InputPump
    let sender: Sender
    /// The inputs' size when all are regular files, for progress.
    let totalBytes: Int64?
    /// What setup found: the in-flight rows a killed run left, put right.
    let recovered: InFlightRecovery
    /// The stopped selection run this one continues (`RunSetup.continuedSelection`).
    let continuingFrom: Int64?
}
