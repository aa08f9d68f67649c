import Foundation

/// One line of a run's input file.
enum InputLine: CustomStringConvertible {
    case pair(Pair)
    /// The same pair with spaces around the ids: trimmed by the reader, so a duplicate in disguise.
    case padded(Pair)
    /// A row the input checks refuse (never sent, kept in `rejections`).
    case bad(profileId: String, transactionId: String)

    static let badRows: [InputLine] = [
        .bad(profileId: "", transactionId: "3000000000000001"),
        .bad(profileId: "mb-1", transactionId: ""),
        .bad(profileId: "mb-2", transactionId: "3E15"),
        .bad(profileId: "mb-3", transactionId: "0300000000000001"),
        .bad(profileId: "mb-4", transactionId: "12ab"),
    ]

    /// The pair the run should work on, if the line is valid.
    var pair: Pair? {
        switch self {
        case .pair(let pair), .padded(let pair): return pair
        case .bad: return nil
        }
    }

    var fields: (String, String) {
        switch self {
        case .pair(let pair): return (pair.profileId, pair.transactionId)
        case .padded(let pair): return (" \(pair.profileId) ", " \(pair.transactionId)")
        case .bad(let profileId, let transactionId): return (profileId, transactionId)
        }
    }

    var description: String {
        switch self {
        case .pair(let pair): return ModelUniverse.short(pair)
        case .padded(let pair): return "' \(ModelUniverse.short(pair))'"
        case .bad(let profileId, let transactionId): return "bad(\(profileId)/\(transactionId))"
        }
    }

    static func csv(_ lines: [InputLine]) -> String {
        "profileId,originalTransactionId\n" + lines.map { "\($0.fields.0),\($0.fields.1)\n" }.joined()
    }

    static func jsonLines(_ lines: [InputLine]) -> String {
        lines.map { #"{"profileId": "\#($0.fields.0)", "originalTransactionId": "\#($0.fields.1)"}"# + "\n" }.joined()
    }
}

/// How a run ends, besides finishing its work.
enum Stop: CustomStringConvertible {
    case none
    /// `--max-duration`.
    case window(milliseconds: Int)
    /// SIGINT or SIGTERM this long after the run is recorded as running.
    case signal(Int32, afterMilliseconds: Int)
    /// SIGKILL this long after the process started.
    case kill(afterMilliseconds: Int)
    /// A failure threshold low enough to cross: `--max-failure-rate 20 --min-sample 4`.
    case threshold

    var description: String {
        switch self {
        case .none: return "no stop"
        case .window(let milliseconds): return "--max-duration \(milliseconds)ms"
        case .signal(let signal, let after): return "\(signal == SIGINT ? "SIGINT" : "SIGTERM") after \(after)ms"
        case .kill(let after): return "kill -9 after \(after)ms"
        case .threshold: return "failure threshold"
        }
    }
}

struct RunMode: CustomStringConvertible {
    var retryFailed = false
    /// `--refresh-older-than` in seconds.
    var refreshSeconds: Int? = nil
    var dryRun = false
    /// `--shard I/2`.
    var shard: Int? = nil

    /// Whether the mode resends rows that are already final.
    var resendsFinals: Bool { retryFailed || refreshSeconds != nil }

    var arguments: [String] {
        var arguments: [String] = []
        if retryFailed { arguments.append("--retry-failed") }
        if let refreshSeconds { arguments += ["--refresh-older-than", "\(refreshSeconds)s"] }
        if dryRun { arguments.append("--dry-run") }
        if let shard { arguments += ["--shard", "\(shard)/2"] }
        return arguments
    }

    var description: String { arguments.isEmpty ? "plain" : arguments.joined(separator: " ") }
}

struct RunStep: CustomStringConvertible {
    var world = World()
    var mode = RunMode()
    var stop = Stop.none
    /// nil: `run --journal J` with no input files.
    var input: [InputLine]? = []
    var fileName = "day.csv"
    var concurrency = 4
    var maxAttempts = 3
    var jsonLog = true
    /// `--forget-input` of these files (by name, in the workspace): what earlier runs left unread
    /// of them is no longer named.
    var forget: [String] = []

    var inputPairs: Set<Pair> { Set((input ?? []).compactMap(\.pair)) }

    var description: String {
        let inputText =
            input.map { "\(fileName) [\($0.map(\.description).joined(separator: " "))]" } ?? "no input files"
        let forgetText = forget.map { ", --forget-input \($0)" }.joined()
        return
            "run \(mode), \(stop), \(world); concurrency \(concurrency), max-attempts \(maxAttempts)\(jsonLog ? ", json log" : "")\(forgetText); \(inputText)"
    }
}

/// Another spelling of the journal's path, for a second run while the first works.
enum Spelling: String, CaseIterable {
    case same, symlink, hardlink, dotDot = "sub/..", relative
}

/// A check `--dry-run` must make before it says anything (R5).
enum PreflightFault: String, CaseIterable {
    case noKey = "no key in the environment"
    case publicHTTP = "http:// to a public host"
    case missingCACert = "a --cacert file that is not there"
    case journalInMissingDirectory = "a journal in a directory that is not there"

    var exitStatus: Int32 { self == .journalInMissingDirectory ? 73 : 64 }
}

/// Where `report --output` is pointed: the journal or a file that belongs to it.
enum OutputTarget: String, CaseIterable {
    case journal, symlink, hardlink, dotDot = "sub/..", relative, wal = "-wal", shm = "-shm", lock = ".lock"
}

enum Step: CustomStringConvertible {
    case run(RunStep)
    /// A run reading stdin holds the journal while a second run tries it through another spelling.
    case concurrent(RunStep, second: Spelling)
    /// The same bad setup, with or without `--dry-run`.
    case preflight(PreflightFault, dryRun: Bool)
    case reportOntoJournal(OutputTarget)
    /// `report` in several forms, `report --changes`, `status`, `runs`.
    case query
    /// The journal copied, the copy run on its own, and both merged into the journal.
    case mergeCopy(RunStep)

    var description: String {
        switch self {
        case .run(let run): return run.description
        case .concurrent(let first, let second):
            return
                "concurrent: a second run through the \(second.rawValue) spelling while this one holds the journal: \(first)"
        case .preflight(let fault, let dryRun): return "run\(dryRun ? " --dry-run" : "") with \(fault.rawValue)"
        case .reportOntoJournal(let target): return "report --output onto the journal (\(target.rawValue))"
        case .query: return "report, report --changes, status, runs"
        case .mergeCopy(let run): return "merge the journal with a copy of it that ran: \(run)"
        }
    }
}
