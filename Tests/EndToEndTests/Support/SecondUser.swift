import BotsiTestSupport
import Foundation
import Testing

/// Another local user (`nobody`), for tests that play someone else on the same machine: what it
/// creates belongs to it, through setpriv(1), so a test does not depend on the machine's
/// `fs.protected_symlinks`. Needs root; tests that use it skip themselves elsewhere.
enum SecondUser {
    static let uid: uid_t = 65534
    static let gid: gid_t = 65534
    static let setpriv = "/usr/bin/setpriv"
    static let arguments = ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups"]

    static var isAvailable: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) }

    /// Runs `script` with /bin/sh as the second user, in `directory`; returns its exit status.
    @discardableResult
    static func shell(_ script: String, in directory: String) throws -> Int32 {
        try runProgram(setpriv, arguments + ["/bin/sh", "-c", script], directory: directory).status
    }

    /// A new directory in `parent` owned by the second user, with `mode`.
    static func directory(_ name: String, in parent: String, mode: mode_t = 0o755) -> String {
        let path = parent + "/" + name
        mkdir(path, mode)
        chown(path, uid, gid)
        chmod(path, mode)
        return path
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test that must act as root (chown, mknod) or as a second user.
    static var needsRoot: Self {
        .enabled(if: SecondUser.isAvailable, "needs root and setpriv(1): run the tests as root, as CI does")
    }
}

/// The names in a directory, for "left no new file behind"; the test's own child logs excluded.
func names(in directory: String) -> Set<String> {
    let all = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return Set(all.filter { !$0.hasPrefix("child-") })
}

/// lstat(2) of a path: what a link itself is, or nil when nothing is there.
func linkStatus(_ path: String) -> stat? {
    var status = stat()
    return lstat(path, &status) == 0 ? status : nil
}

/// The permission bits of what `path` names (links followed).
func mode(_ path: String) -> mode_t? {
    var status = stat()
    return stat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
}
