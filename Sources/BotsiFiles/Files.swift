import BotsiBasics
import Foundation

/// How the tool touches the file system: safe outputs, the journal's resolved path and its lock.
/// Every target that creates or opens a file by a path a person typed goes through here.
///
/// The rules, the way git and OpenSSH write files: a path is resolved once and then used by its
/// resolved name; nothing is created through a symbolic link; a file is chmodded only when it is a
/// regular file of the running user; an output is written to a new temporary sibling and renamed
/// over its target, never opened over it. docs/journal.md and docs/security.md say why.
public enum Files {
    /// A notice about a file (a journal made private, for one), posted on the process's one notice
    /// channel; a warning, so `--quiet` keeps it.
    static func notice(_ text: String) {
        Notices.post(Notice(.warning, "botsi-restore: " + text))
    }

    /// A new directory only the running user can enter, made by mkdtemp(3) in TMPDIR: its name is
    /// unpredictable and it cannot already exist, so nobody can prepare it.
    public static func makePrivateDirectory(prefix: String) throws(FileError) -> String {
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            let reason = Files.reason(errno)
            throw FileError(
                .failed, path: base,
                "cannot make a private directory in \(base): \(reason); set TMPDIR to a directory you can write")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes a directory `makePrivateDirectory` made, with the files in it (links are unlinked,
    /// never followed; subdirectories are not expected and make it stay).
    public static func removePrivateDirectory(_ path: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            unlink(path + "/" + name)
        }
        rmdir(path)
    }

    /// True when `path` (or, when it names nothing yet, the directory it would be in) is on a file
    /// system mounted read-only: no permission, not even root's, lets anything be written there.
    public static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        var info = statvfs()
        if statvfs(path, &info) != 0 {
            guard errno == ENOENT, statvfs(ResolvedPath.parent(of: path), &info) == 0 else { return false }
        }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// strerror(3) text for an errno value.
    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// `0644`: a mode as people write it.
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// Why a file could not be used, as one sentence that names it and says what to do.
public struct FileError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// It does not exist (and was not to be created).
        case missing
        /// It exists but is not what it must be: another user's, a link, a device, shared, a journal.
        case refused
        /// It cannot be written (read-only file, directory or file system).
        case readOnly
        /// The file system is full.
        case diskFull
        /// Any other failure of the system call.
        case failed
    }

    public let kind: Kind
    /// The path as it was given.
    public let path: String
    public let message: String

    public init(_ kind: Kind, path: String, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    public var description: String { message }

    /// The kind an errno value from creating or writing a file means.
    static func kind(of code: Int32) -> Kind {
        switch code {
        case ENOENT, ENOTDIR: return .missing
        case EACCES, EPERM, EROFS: return .readOnly
        case ENOSPC, EDQUOT: return .diskFull
        default: return .failed
        }
    }
}
