import BotsiTestSupport
import Foundation
import Testing

/// cron/botsi-restore-cron.sh in a workspace of its own: a stand-in for botsi-restore that records
/// each start and the environment it got, an env file, a job file, a working directory and a log.
/// With `user`, every file belongs to that user and the wrapper runs as them (`setpriv`).
final class CronSetup {
    static let script = Locations.packageRoot + "/cron/botsi-restore-cron.sh"
    /// A second local user for the tests that need one (they run only as root).
    static let otherUser: uid_t = 65534
    static var isRoot: Bool { getuid() == 0 }

    let workspace = Workspace()
    let user: uid_t?
    /// Settings given by whoever starts the wrapper (cron's environment).
    var settings: [String: String] = [:]

    var workdir: String { workspace.file("work") }
    var logFile: String { workspace.file("logs/cron.log") }
    var envFile: String { workspace.file("env") }
    var jobFile: String { workspace.file("nightly.json") }
    var fake: String { workspace.file("fake-botsi-restore") }

    init(env: String = "# the key\nBOTSI_SECRET_KEY=\"cron-test-key\"\n", envMode: mode_t = 0o600, user: uid_t? = nil) {
        self.user = user
        // The stand-in knows its folder from its own text: the wrapper passes no test variables down.
        write(
            "fake-botsi-restore",
            """
            #!/usr/bin/env bash
            dir=\(workspace.path)
            echo "started $*" >>"$dir/starts"
            env >"$dir/environment"
            for _ in $(seq 1 1200); do [ -e "$dir/release" ] && break; sleep 0.05; done
            exit "$(cat "$dir/exit-status" 2>/dev/null || echo 0)"
            """, mode: 0o755)
        write("env", env, mode: envMode)
        write("nightly.json", "{\"description\": \"the stand-in does not read it\"}\n", mode: 0o644)
        makeDirectory("work", mode: 0o700)
        if let user { chown(workspace.path, user, user) }
        settings = [
            "BOTSI_RESTORE_BIN": fake, "BOTSI_ENV_FILE": envFile, "BOTSI_LOG_FILE": logFile,
            "BOTSI_WORKDIR": workdir,
            // Read only by the wrapper before the lock moved into the working directory.
            "BOTSI_LOCK_FILE": workspace.file("cron.lock"),
        ]
    }

    @discardableResult
    func write(_ name: String, _ text: String, mode: mode_t = 0o600) -> String {
        let path = workspace.write(name, text)
        chmod(path, mode)
        if let user { chown(path, user, user) }
        return path
    }

    @discardableResult
    func makeDirectory(_ name: String, mode: mode_t, owner: uid_t? = nil) -> String {
        let path = workspace.file(name)
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, mode)
        if let owner = owner ?? user { chown(path, owner, owner) }
        return path
    }

    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = Child.environment(key: nil)
        environment.merge(settings) { $1 }
        environment.merge(extra) { $1 }
        return environment
    }

    /// Starts the wrapper on the job file (as `user` when set).
    func start(_ options: [String] = [], environment extra: [String: String] = [:]) throws -> Child {
        var arguments = ["/bin/bash", Self.script, jobFile] + options
        if let user {
            arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--"] + arguments
        }
        return try Child(
            user == nil ? Array(arguments.dropFirst()) : arguments, key: nil, in: workspace,
            environment: environment(extra), executable: user == nil ? "/bin/bash" : "/usr/bin/setpriv")
    }

    func run(_ options: [String] = [], exit: Int32 = 0, environment extra: [String: String] = [:]) throws -> Finished {
        write("exit-status", "\(exit)\n", mode: 0o644)
        let finished = try start(options, environment: extra).wait(timeout: 90)
        #expect(!finished.timedOut, "the cron wrapper ran past 90 s")
        return finished
    }

    func release() { write("release", "", mode: 0o644) }

    var starts: [String] {
        ((try? String(contentsOfFile: workspace.file("starts"), encoding: .utf8)) ?? "").split(separator: "\n")
            .map(String.init)
    }

    /// The environment the stand-in was started with, by name.
    var childEnvironment: [String: String] {
        let text = (try? String(contentsOfFile: workspace.file("environment"), encoding: .utf8)) ?? ""
        var variables: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return variables
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }
}

/// The owner and permission bits of a path (not following a final symlink).
func ownerAndMode(_ path: String) -> (owner: uid_t, mode: mode_t)? {
    var status = stat()
    guard lstat(path, &status) == 0 else { return nil }
    return (status.st_uid, status.st_mode & 0o7777)
}
