import Foundation

/// A small tmpfs mounted for one test: a disk that fills up, or one that turns read-only (a
/// snapshot, an archive, a volume mounted `ro`). Mounting needs root (or CAP_SYS_ADMIN): tests that
/// use it are enabled only when `canMount`.
public final class Tmpfs {
    public let path: String
    private var mounted = false

    /// Whether this process may mount: tried once on a throw-away directory.
    public static let canMount: Bool = {
        let probe = Workspace()
        guard (try? command("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path])) == true else {
            return false
        }
        _ = try? command("/bin/umount", [probe.path])
        return true
    }()

    /// Mounts a tmpfs of `sizeKiB` at `path` (made if need be), its root of `mode`: 0755 by
    /// default, as a tmpfs root is 1777 otherwise, a directory the journal rules refuse to write in.
    public init(at path: String, sizeKiB: Int, mode: mode_t = 0o755) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let options = "size=\(sizeKiB)k,mode=0\(String(mode, radix: 8))"
        guard try Self.command("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path]) else {
            throw TestSupportError("cannot mount a tmpfs at \(path)")
        }
        mounted = true
    }

    public func remount(options: String) throws {
        guard try Self.command("/bin/mount", ["-o", "remount,\(options)", path]) else {
            throw TestSupportError("cannot remount \(path) with \(options)")
        }
    }

    public func unmount() {
        guard mounted else { return }
        mounted = false
        _ = try? Self.command("/bin/umount", [path])
    }

    deinit { unmount() }

    @discardableResult
    private static func command(_ executable: String, _ arguments: [String]) throws -> Bool {
        try runProgram(executable, arguments).status == 0
    }
}
