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

    /// What to type to run this program again: `botsi-restore` when PATH finds this very
    /// executable (an installed package), else its path (a checkout's `.build`).
    static var commandName: String {
        guard let executable else { return "botsi-restore" }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        for directory in directories {
            guard let found = realpath("\(directory)/botsi-restore", nil) else { continue }
            defer { free(found) }
            return String(cString: found) == executable ? "botsi-restore" : executable
        }
        return executable
    }

    /// A line for a person after `text`, when its commands start with `botsi-restore` but PATH
    /// does not find this executable (a source build): what to type instead. Nil otherwise.
    static func commandNote(after text: String) -> String? {
        let command = commandName
        guard command != "botsi-restore",
            ["botsi-restore run ", "botsi-restore status ", "botsi-restore report "].contains(where: text.contains)
        else { return nil }
        return "(botsi-restore is not on PATH here: for the commands above, type \(RunAdvice.shellQuoted(command)))"
    }
}
