import Foundation

/// Which file a name leads to: the same (device, inode) is the same file, however it is spelled
/// (symbolic link, hard link, `..`, a relative path).
public struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
    public let device: UInt64
    public let inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    public var description: String { "device \(device), inode \(inode)" }
}

/// stat(2) of a file, with the questions the rules ask of it.
struct FileStatus {
    let raw: stat

    /// lstat(2): what the name itself is (a link is a link). nil with errno set when it fails.
    static func ofName(_ path: String) -> FileStatus? {
        var status = stat()
        return lstat(path, &status) == 0 ? FileStatus(raw: status) : nil
    }

    /// stat(2): what the name leads to, links followed.
    static func ofTarget(_ path: String) -> FileStatus? {
        var status = stat()
        return stat(path, &status) == 0 ? FileStatus(raw: status) : nil
    }

    static func ofDescriptor(_ descriptor: Int32) -> FileStatus? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? FileStatus(raw: status) : nil
    }

    var identity: FileIdentity { FileIdentity(device: UInt64(raw.st_dev), inode: UInt64(raw.st_ino)) }
    var type: mode_t { raw.st_mode & S_IFMT }
    var isRegular: Bool { type == S_IFREG }
    var isDirectory: Bool { type == S_IFDIR }
    var isLink: Bool { type == S_IFLNK }
    var permissions: mode_t { raw.st_mode & 0o7777 }
    var owner: uid_t { raw.st_uid }
    var group: gid_t { raw.st_gid }
    var linkCount: Int { Int(raw.st_nlink) }
    var size: Int64 { Int64(raw.st_size) }
    var isOwnedByUser: Bool { owner == geteuid() }

    /// "a directory", "a FIFO", …: what the file is, for a message.
    var kindName: String {
        switch type {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}

/// Users and groups, for messages and the group rule of directories.
enum Accounts {
    static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return String(cString: entry.pw_name)
    }

    /// "uid 65534 (nobody)".
    static func describe(_ uid: uid_t) -> String {
        userName(uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
    }

    /// Whether the running process is in group `gid` (its own group or a supplementary one): a
    /// directory that group may write is one the user chose to share with it (a Debian user's
    /// private group, a Kubernetes pod's fsGroup).
    static func isMember(of gid: gid_t) -> Bool {
        if gid == getegid() { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &groups)
        return filled > 0 && groups[0..<Int(filled)].contains(gid)
    }
}
