import Foundation

/// A path someone typed, resolved once: every symbolic link, `..` and relative part followed to
/// the one real name, which is what everything after uses.
public struct ResolvedPath: Sendable, Equatable {
    /// As given.
    public let typed: String
    /// Absolute, without symbolic links (for a file that does not exist yet: its resolved directory
    /// and its name).
    public let path: String
    /// The resolved directory that holds it.
    public let directory: String
    public let exists: Bool
    /// When `typed` itself is a symbolic link: the resolved directory the link is in, which
    /// decides where it leads and so must be trusted as much as `directory`.
    public var linkDirectory: String? = nil

    /// Resolves `typed`, following links to the end. A link that leads nowhere is refused: a file
    /// is never created at the far end of a link. `role` names the file in messages ("journal").
    public static func resolve(_ typed: String, role: String) throws(FileError) -> ResolvedPath {
        guard !typed.isEmpty else { throw FileError(.missing, path: typed, "the \(role) path is empty") }
        if FileStatus.ofName(typed) != nil {
            guard let real = realPath(typed) else {
                let code = errno
                // /dev/stdin on a pipe: a link to "pipe:[…]", which names no file but opens.
                if let target = FileStatus.ofTarget(typed), !target.isRegular {
                    throw FileError(
                        .refused, path: typed,
                        "\(role) \(typed) is not a regular file (it is \(target.kindName)); nothing was changed — "
                            + "give the path of a file")
                }
                if code == ENOENT {
                    throw FileError(
                        .refused, path: typed,
                        "\(role) \(typed) is a symbolic link to a missing file; nothing was changed — "
                            + "give the path of the file itself (a \(role) is never created through a link)")
                }
                throw FileError(.failed, path: typed, "cannot resolve \(role) \(typed): \(Files.reason(code))")
            }
            var resolved = ResolvedPath(typed: typed, path: real, directory: parent(of: real), exists: true)
            if FileStatus.ofName(typed)?.isLink == true, let linkDirectory = realPath(split(typed).directory),
                linkDirectory != resolved.directory
            {
                resolved.linkDirectory = linkDirectory
            }
            return resolved
        }
        let code = errno
        guard code == ENOENT else {
            throw FileError(FileError.kind(of: code), path: typed, "cannot use \(role) \(typed): \(Files.reason(code))")
        }
        let (path, realDirectory) = try inResolvedDirectory(typed, role: role)
        return ResolvedPath(typed: typed, path: path, directory: realDirectory, exists: false)
    }

    /// The directory that holds `typed` resolved, and `typed`'s own last name, not followed: where
    /// an output is renamed to (a link there is replaced, never written through).
    public static func resolveParent(_ typed: String, role: String) throws(FileError) -> ResolvedPath {
        let (path, realDirectory) = try inResolvedDirectory(typed, role: role)
        return ResolvedPath(
            typed: typed, path: path, directory: realDirectory, exists: FileStatus.ofName(path) != nil)
    }

    /// `typed`'s last name (not followed) in its directory resolved: the path and that directory.
    /// Refuses a name that names no file and a directory that does not exist.
    private static func inResolvedDirectory(
        _ typed: String, role: String
    ) throws(FileError) -> (path: String, directory: String) {
        let (directory, name) = split(typed)
        guard !name.isEmpty, name != ".", name != ".." else {
            throw FileError(.refused, path: typed, "\(role) \(typed) does not name a file; give a file name")
        }
        guard let realDirectory = realPath(directory), FileStatus.ofTarget(realDirectory)?.isDirectory == true else {
            throw FileError(
                .missing, path: typed, "the directory \(directory) for \(role) \(typed) does not exist; create it first"
            )
        }
        return (realDirectory == "/" ? "/" + name : realDirectory + "/" + name, realDirectory)
    }

    /// Refuses a directory someone else could write to: they could put a link or a file of their
    /// own where SQLite opens the journal's `-wal`/`-shm`, or swap the journal itself. It must be
    /// the user's (or root's), not writable by others, and writable by its group only when the user
    /// is in that group.
    public func checkDirectoryIsPrivate(role: String) throws(FileError) {
        try Self.checkPrivate(directory, holding: typed, role: role)
        // A link in someone else's directory leads wherever they like: not followed.
        if let linkDirectory { try Self.checkPrivate(linkDirectory, holding: typed, role: role) }
    }

    private static func checkPrivate(_ directory: String, holding typed: String, role: String) throws(FileError) {
        guard let status = FileStatus.ofTarget(directory) else {
            throw FileError(.failed, path: typed, "cannot inspect the directory \(directory): \(Files.reason(errno))")
        }
        let advice = "nothing was changed — keep the \(role) in a directory only you can write (mkdir -m 700 DIR)"
        if status.owner != geteuid() && status.owner != 0 {
            throw FileError(
                .refused, path: typed,
                "the directory \(directory) holding \(role) \(typed) belongs to \(Accounts.describe(status.owner)), "
                    + "not to you; \(advice), or run it as its owner")
        }
        let groupWritable = status.permissions & S_IWGRP != 0 && !Accounts.isMember(of: status.group)
        if status.permissions & S_IWOTH != 0 || groupWritable {
            throw FileError(
                .refused, path: typed,
                "other users can write the directory \(directory) holding \(role) \(typed) "
                    + "(mode \(Files.octal(status.permissions))); \(advice)")
        }
    }

    /// The file `path` names with links and `..` resolved (realpath(3)); nil when it names nothing.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// ("dir", "name") of a typed path; "." for a bare name. A trailing slash leaves an empty name.
    static func split(_ typed: String) -> (directory: String, name: String) {
        guard let slash = typed.lastIndex(of: "/") else { return (".", typed) }
        let name = String(typed[typed.index(after: slash)...])
        let directory = slash == typed.startIndex ? "/" : String(typed[..<slash])
        return (directory, name)
    }
}
