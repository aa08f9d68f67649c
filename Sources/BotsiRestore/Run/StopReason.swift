import BotsiAPI
import BotsiJournal
import Foundation

/// Why a run stopped dispatching before its input was done. Each reason knows the exit status
/// it ends the run with and the sentence the summary prints for it.
public enum StopReason: Sendable, Equatable {
    case unauthorized(message: String)
    case forbidden(message: String)
    case iosSettingsMissing(message: String)
    case tlsFailure(message: String)
    case signal(Int32)
    case journalFailure(message: String)
    case inputFailure(message: String)
    case deadline(message: String)
    case failureThreshold(message: String)

    /// The stop a fatal reply (401, 403, no iOS settings, TLS) causes.
    init(fatal reason: FatalReason, message: String) {
        switch reason {
        case .unauthorized: self = .unauthorized(message: message)
        case .forbidden: self = .forbidden(message: message)
        case .iosSettingsMissing: self = .iosSettingsMissing(message: message)
        case .tlsFailure: self = .tlsFailure(message: message)
        }
    }

    /// The end of `--max-duration` / `--stop-at`.
    static func windowEnded(at deadline: Date) -> StopReason {
        .deadline(
            message: "the time window ended (\(Timestamp.string(deadline))); in-flight requests were allowed to finish")
    }

    /// The exit status (docs/exit-codes.md); the lifecycle table's `StopCause.exitCodes` agree.
    public var exitCode: Int32 {
        switch self {
        case .unauthorized, .forbidden: ExitCode.permission
        case .iosSettingsMissing: ExitCode.configuration
        case .tlsFailure: ExitCode.unavailable
        case .signal(let number): number == SIGINT ? ExitCode.interrupted : ExitCode.terminated
        case .journalFailure: ExitCode.cannotCreate
        case .inputFailure: ExitCode.dataError
        case .deadline: ExitCode.temporaryFailure
        case .failureThreshold: ExitCode.unavailable
        }
    }

    /// What the summary says stopped the run.
    public var message: String {
        switch self {
        case .unauthorized(let message), .forbidden(let message), .iosSettingsMissing(let message),
            .tlsFailure(let message), .journalFailure(let message), .inputFailure(let message),
            .deadline(let message), .failureThreshold(let message):
            message
        case .signal(let number):
            "\(number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)"); in-flight requests were allowed to finish"
        }
    }

    /// The lifecycle table's name for this stop; nil for a journal failure, after which nothing
    /// can be written.
    var cause: OutcomePolicy.StopCause? {
        switch self {
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .iosSettingsMissing: .iosSettingsMissing
        case .tlsFailure: .tlsFailure
        case .signal: .signal
        case .journalFailure: nil
        case .inputFailure: .inputDamaged
        case .deadline: .windowEnd
        case .failureThreshold: .failureThreshold
        }
    }
}

extension ExitCode {
    /// How a run that got as far as sending ends: its stop's status, or, when nothing stopped it,
    /// 75 while the journal still owes rows it worked on and 0 when all of them are final.
    static func forRun(stoppedBy reason: StopReason?, pendingRows: Int) -> Int32 {
        if let reason { return reason.exitCode }
        return pendingRows > 0 ? temporaryFailure : success
    }
}
