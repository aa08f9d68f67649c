import BotsiAPI
import BotsiBasics
import BotsiJournal
import Foundation

/// A stop as it happened: its cause (`StopCause`, the one vocabulary), the sentence the summary
/// prints for it and the exit status the run ends with.
public struct RunStop: Sendable, Equatable {
    public let cause: StopCause
    public let message: String
    public let exitCode: Int32

    private init(_ cause: StopCause, message: String, exitCode: Int32? = nil) {
        self.cause = cause
        self.message = message
        // Every cause but a signal has one exit status; a signal's says which it was.
        self.exitCode = exitCode ?? cause.exitCodes[0]
    }

    /// The stop a fatal reply (401, 403, no iOS settings, TLS) causes.
    static func fatal(_ reason: FatalReason, message: String) -> RunStop {
        RunStop(StopCause(reason), message: message)
    }

    /// SIGHUP, SIGINT or SIGTERM.
    static func signal(_ number: Int32) -> RunStop {
        RunStop(
            .signal, message: "\(stoppedBy(number)); in-flight requests were allowed to finish",
            exitCode: ExitCode.stopped(by: number))
    }

    /// A signal while the inputs were still opening: nothing was read, recorded or sent.
    static func signalBeforeStart(_ number: Int32) -> RunStop {
        RunStop(
            .signal,
            message: "\(stoppedBy(number)) while the input was opening, before the run began: nothing was read, "
                + "recorded or sent",
            exitCode: ExitCode.stopped(by: number))
    }

    /// "interrupted (SIGINT)": what the signal did, and its name.
    private static func stoppedBy(_ number: Int32) -> String {
        switch number {
        case SIGINT: "interrupted (SIGINT)"
        // The terminal or ssh session that started the run went away.
        case SIGHUP: "hung up (SIGHUP: the terminal or session that started it closed)"
        default: "terminated (SIGTERM)"
        }
    }

    /// The end of `--max-duration` / `--stop-at`.
    static func windowEnded(at deadline: Date) -> RunStop {
        RunStop(
            .windowEnd,
            message: "the time window ended (\(Timestamp.string(deadline))); in-flight requests were allowed to finish")
    }

    static func inputDamaged(message: String) -> RunStop { RunStop(.inputDamaged, message: message) }

    static func failureThreshold(message: String) -> RunStop { RunStop(.failureThreshold, message: message) }

    static func journalFailure(message: String) -> RunStop { RunStop(.journalFailure, message: message) }
}

extension ExitCode {
    /// How a run that got as far as sending ends: its stop's status, or, when nothing stopped it,
    /// 75 while the journal still owes rows it worked on and 0 when all of them are final.
    static func forRun(stoppedBy stop: RunStop?, pendingRows: Int) -> Int32 {
        if let stop { return stop.exitCode }
        return pendingRows > 0 ? temporaryFailure : success
    }
}
