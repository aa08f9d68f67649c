import BotsiAPI
import Foundation
import Glibc

/// Where the API key comes from. Never argv: every user on the machine can read it with `ps`.
public enum APIKeySource: Sendable, Equatable {
    /// An environment variable (`BOTSI_SECRET_KEY`, or the one `--key-env` names).
    case environment(variable: String)
    /// A file only its owner can read (`--key-file`), e.g. a systemd credential in
    /// `$CREDENTIALS_DIRECTORY`.
    case file(path: String)
}

/// The key could not be used; the message says why and what to do, and never holds the value.
public struct APIKeyError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    init(_ message: String) { self.message = message }
}

extension APIKeySource {
    /// The largest key file read: a key is a line, far smaller.
    static let maximumFileBytes = 4096

    /// Reads the key once. Refuses what cannot be a key: nothing, several lines, or a path (a sign
    /// that `--key-env` was given a variable like PATH or HOME rather than the key's own).
    public func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIKeyError)
        -> String
    {
        switch self {
        case .environment(let variable):
            guard let value = environment[variable] else {
                throw APIKeyError(
                    "the API key is not set: export it as \(variable) (or name another variable with --key-env, "
                        + "or give a file with --key-file)")
            }
            let key = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else {
                throw APIKeyError("the environment variable \(variable) is empty: put the Botsi secret key in it")
            }
            try Self.refuseNonKey(key, origin: "the environment variable \(variable)")
            return key
        case .file(let path):
            return try Self.readKeyFile(path)
        }
    }

    private static func refuseNonKey(_ key: String, origin: String) throws(APIKeyError) {
        if key.hasPrefix("/") || key.hasPrefix("~") || key.contains(":/") {
            throw APIKeyError(
                "\(origin) holds a path or a list of paths, not an API key: --key-env takes the name of the "
                    + "variable that holds the key (e.g. --key-env BOTSI_SECRET_KEY), never the name of PATH or HOME")
        }
        if key.contains(where: \.isNewline) {
            throw APIKeyError("\(origin) holds more than one line; put only the key in it")
        }
    }

    /// A regular file owned by the user running the tool, readable by that user alone (mode 0600 or
    /// 0400), opened without following a symbolic link and checked on the open descriptor, so what is
    /// checked is what is read.
    private static func readKeyFile(_ path: String) throws(APIKeyError) -> String {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            let reason = errno
            switch reason {
            case ENOENT: throw APIKeyError("the key file \(path) does not exist; check the path given to --key-file")
            case ELOOP:
                throw APIKeyError(
                    "the key file \(path) is a symbolic link; give the path of the file itself to --key-file")
            case EACCES: throw APIKeyError("the key file \(path) cannot be read by this user (permission denied)")
            default: throw APIKeyError("the key file \(path) cannot be opened: \(String(cString: strerror(reason)))")
            }
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw APIKeyError("the key file \(path) cannot be examined: \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw APIKeyError("the key file \(path) is not a regular file; give --key-file the file holding the key")
        }
        guard info.st_uid == geteuid() else {
            throw APIKeyError(
                "the key file \(path) belongs to uid \(info.st_uid), not to the user running botsi-restore "
                    + "(uid \(geteuid())): whoever owns it chooses the key; chown it to this user")
        }
        let permissions = info.st_mode & 0o7777
        guard permissions == 0o600 || permissions == 0o400 else {
            throw APIKeyError(
                "the key file \(path) has mode \(String(permissions, radix: 8)), readable or writable by others; "
                    + "make it private with: chmod 600 \(path)")
        }
        guard info.st_size <= maximumFileBytes else {
            throw APIKeyError("the key file \(path) is larger than \(maximumFileBytes) bytes; put only the key in it")
        }
        var bytes = [UInt8](repeating: 0, count: maximumFileBytes + 1)
        // explicit_bzero: a plain memset of a buffer about to be freed may be optimized away.
        defer { bytes.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        var count = 0
        while count < bytes.count {
            let read = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + count, $0.count - count, count)
            }
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else {
                throw APIKeyError("the key file \(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            if read == 0 { break }
            count += read
        }
        guard count <= maximumFileBytes else {
            throw APIKeyError("the key file \(path) is larger than \(maximumFileBytes) bytes; put only the key in it")
        }
        guard let text = String(validating: bytes[0..<count], as: UTF8.self) else {
            throw APIKeyError("the key file \(path) is not UTF-8 text; put only the key in it")
        }
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw APIKeyError("the key file \(path) is empty: put the Botsi secret key in it") }
        try refuseNonKey(key, origin: "the key file \(path)")
        return key
    }
}

/// Before the key is read: no core dump, no `ptrace`, no `/proc/<pid>/environ` for other processes of
/// the same user, for as long as the process lives (`prctl(PR_SET_DUMPABLE, 0)`).
@discardableResult
public func protectProcessHoldingTheKey() -> Bool {
    KeyCustody.protectProcess()
}
