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
    public static let interrupted: Int32 = 130
    public static let terminated: Int32 = 143
}

/// A run that could not start: bad options, unusable input, or a journal that cannot be used.
public struct RunSetupError: Error, CustomStringConvertible, Sendable {
    public let exitCode: Int32
    public let message: String
    public var description: String { message }
}
