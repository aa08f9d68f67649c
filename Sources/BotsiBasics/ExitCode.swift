/// Exit statuses (sysexits), documented in docs/exit-codes.md.
public enum ExitCode {
    public static let success: Int32 = 0
    public static let usage: Int32 = 64
    public static let dataError: Int32 = 65
    public static let noInput: Int32 = 66
    public static let unavailable: Int32 = 69
    public static let software: Int32 = 70
    /// EX_OSERR: the machine could not give the run a resource (memory, descriptors, a thread).
    public static let osError: Int32 = 71
    public static let cannotCreate: Int32 = 73
    public static let temporaryFailure: Int32 = 75
    public static let permission: Int32 = 77
    public static let configuration: Int32 = 78
    /// 128 + the signal's number, as a shell reports a process the signal ended.
    public static let hungUp: Int32 = 129
    public static let interrupted: Int32 = 130
    public static let terminated: Int32 = 143

    /// The status a run stopped by `signal` (SIGHUP, SIGINT, SIGTERM) exits with.
    public static func stopped(by signal: Int32) -> Int32 { 128 + signal }
}

/// Why a run stopped before its work was done: the one vocabulary from the reply or event that
/// stops it to its exit status, the sentence and advice the summary gives (`RunStop`,
/// `RunAdvice`) and the journal's record of the run (its raw value, in `runs.counts`). Each case
/// is a row of the lifecycle table's stop events. It sits below every module so that the journal's
/// record holds it typed.
public enum StopCause: String, Sendable, Codable, CaseIterable {
    /// A reply that no retry can fix: 401, 403, `No ios settings found`, a TLS failure.
    case unauthorized, forbidden, iosSettingsMissing, tlsFailure
    /// `--max-duration` or `--stop-at` passed.
    case windowEnd
    /// SIGHUP, SIGINT or SIGTERM.
    case signal
    /// `--max-failure-rate` crossed.
    case failureThreshold
    /// An input could not be read further.
    case inputDamaged
    /// The journal could not be written: nothing more is recorded, not even the run's end.
    case journalFailure

    /// The exit statuses a run stopped by it ends with (a signal's depends on which).
    public var exitCodes: [Int32] {
        switch self {
        case .unauthorized, .forbidden: [ExitCode.permission]
        case .iosSettingsMissing: [ExitCode.configuration]
        case .tlsFailure, .failureThreshold: [ExitCode.unavailable]
        case .windowEnd: [ExitCode.temporaryFailure]
        case .signal: [ExitCode.hungUp, ExitCode.interrupted, ExitCode.terminated]
        case .inputDamaged: [ExitCode.dataError]
        case .journalFailure: [ExitCode.cannotCreate]
        }
    }

    /// The journal keeps a record of what the run did: every cause but a journal failure.
    public var isRecorded: Bool { self != .journalFailure }
}
