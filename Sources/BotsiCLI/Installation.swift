import BotsiFiles
import BotsiRestore
import Foundation

/// Where an installed botsi-restore finds the files its package ships, and how its hints name it.
enum Installation {
    /// This executable, symlinks resolved.
    static var executable: String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    /// `<prefix>/share/botsi-restore/NAME` for an executable in `<prefix>/bin` (the .deb: /usr), when it exists.
    static func sharedFile(_ name: String) -> String? {
        guard let executable else { return nil }
        let prefix = URL(fileURLWithPath: executable).deletingLastPathComponent().deletingLastPathComponent()
        let path = prefix.appendingPathComponent("share/botsi-restore/" + name).path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// The `botsi-restore` PATH finds first, symlinks resolved; nil when it finds none.
    static var onPath: String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if let found = ResolvedPath.realPath("\(directory)/botsi-restore") { return found }
        }
        return nil
    }

    /// What to type to run this program again: `botsi-restore` when PATH finds this very
    /// executable (an installed package), else its path (a checkout's `.build`).
    static var commandName: String {
        guard let executable else { return "botsi-restore" }
        return onPath == executable ? "botsi-restore" : executable
    }

    /// A line for a person after `text`, when its commands start with `botsi-restore` but PATH
    /// does not find this executable (a source build), or finds another (an older package):
    /// what to type instead. Nil otherwise.
    static func commandNote(after text: String) -> String? {
        guard let executable, onPath != executable,
            ["botsi-restore run ", "botsi-restore status ", "botsi-restore report "].contains(where: text.contains)
        else { return nil }
        let which = onPath == nil ? "botsi-restore is not on PATH here" : "the botsi-restore on PATH is another binary"
        return "(\(which): for the commands above, type \(RunAdvice.shellQuoted(executable)))"
    }
}
