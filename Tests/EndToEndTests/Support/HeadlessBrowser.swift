import BotsiTestSupport
import Foundation
import Glibc
import Testing

/// Debian's Chromium, headless, driven through the DevTools protocol over a pipe
/// (`--remote-debugging-pipe`: the browser reads commands on descriptor 3 and writes replies and
/// events on 4, each a JSON object ending in a NUL byte), so no port is opened and no WebSocket is
/// needed. One page; every console message, log entry and exception it produces is kept.
final class HeadlessBrowser {
    /// The browser `scripts/install-deps.sh --test` installs; nil when it is not there.
    static let path: String? = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Why a browser test is skipped.
    static let missing: Comment =
        "chromium is not installed: bash scripts/install-deps.sh --test installs it; the browser tests are skipped"

    /// A console message, log entry or uncaught exception of the page.
    struct Message: CustomStringConvertible {
        let level: String
        let text: String
        var description: String { "\(level): \(text)" }
    }

    private let pid: pid_t
    private let commands: Int32
    private let replies: Int32
    private var pending: [UInt8] = []
    private var nextID = 1
    private var closed = false
    private var session = ""
    private(set) var messages: [Message] = []
    private var events: [String] = []

    /// Starts the browser with a fresh profile in `directory`, its stderr in `directory/chromium.log`.
    init(profile directory: String) throws {
        guard let path = Self.path else { throw TestSupportError("chromium is not installed") }
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else {
            throw TestSupportError("pipe failed: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec at once (Glibc's module has no pipe2): no other child of the tests keeps them.
        for descriptor in toBrowser + fromBrowser { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 leaves the copies open across exec (the originals are close-on-exec).
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, directory + "/chromium.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let arguments = [
            path, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=\(directory)/profile", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-component-update",
            "--mute-audio", "--hide-scrollbars", "--force-color-profile=srgb", "about:blank",
        ]
        var argv = arguments.map { strdup($0) }
        argv.append(nil)
        defer { argv.forEach { free($0) } }
        // A write to a browser that died must fail, not kill the tests.
        signal(SIGPIPE, SIG_IGN)
        var child: pid_t = 0
        let spawned = posix_spawn(&child, path, &actions, nil, &argv, environ)
        Glibc.close(toBrowser[0])
        Glibc.close(fromBrowser[1])
        guard spawned == 0 else {
            Glibc.close(toBrowser[1])
            Glibc.close(fromBrowser[0])
            throw TestSupportError("cannot start \(path): \(String(cString: strerror(spawned)))")
        }
        pid = child
        commands = toBrowser[1]
        replies = fromBrowser[0]
        let target = try send("Target.createTarget", ["url": "about:blank"], browserLevel: true)
        guard let targetID = target["targetId"] as? String else { throw TestSupportError("no target: \(target)") }
        let attached = try send(
            "Target.attachToTarget", ["targetId": targetID, "flatten": true], browserLevel: true)
        guard let session = attached["sessionId"] as? String else { throw TestSupportError("no session: \(attached)") }
        self.session = session
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] { try send(domain) }
    }

    deinit { close() }

    /// Closes the browser and waits for it to exit; safe to call twice.
    func close() {
        guard !closed else { return }
        closed = true
        _ = try? send("Browser.close", browserLevel: true, timeout: 5)
        var status: Int32 = 0
        var exited = false
        for _ in 0..<50 where !exited {
            exited = waitpid(pid, &status, WNOHANG) == pid
            if !exited { usleep(100_000) }
        }
        if !exited {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
        Glibc.close(commands)
        Glibc.close(replies)
    }

    /// Sets the window to `width` × `height` CSS pixels.
    func setViewport(width: Int, height: Int) throws {
        try send(
            "Emulation.setDeviceMetricsOverride",
            ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false])
    }

    /// Opens `url` and waits for its load event.
    func open(_ url: String) throws {
        events.removeAll()
        try send("Page.navigate", ["url": url])
        try waitForEvent("Page.loadEventFired")
    }

    /// Evaluates `expression` in the page and returns its value as JSON gives it back.
    @discardableResult
    func evaluate(_ expression: String) throws -> Any? {
        let result = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true])
        if let exception = result["exceptionDetails"] { throw TestSupportError("\(expression) threw \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// `print` or `screen`, and media features such as `prefers-color-scheme: dark`.
    func emulateMedia(_ media: String, features: [String: String] = [:]) throws {
        try send(
            "Emulation.setEmulatedMedia",
            ["media": media, "features": features.map { ["name": $0.key, "value": $0.value] }])
    }

    /// A PNG of the whole page, however long, or of its top `height` CSS pixels.
    func screenshot(width: Int? = nil, height: Int? = nil) throws -> Data {
        var parameters: [String: Any] = ["format": "png", "captureBeyondViewport": true]
        if let width, let height {
            parameters["clip"] = ["x": 0, "y": 0, "width": width, "height": height, "scale": 1]
        }
        let result = try send("Page.captureScreenshot", parameters)
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw TestSupportError("no screenshot in \(result.keys)")
        }
        return data
    }

    // MARK: The protocol

    @discardableResult
    private func send(
        _ method: String, _ parameters: [String: Any] = [:], browserLevel: Bool = false, timeout: Double = 30
    ) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if !browserLevel { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            guard written > 0 else {
                throw TestSupportError("cannot write to chromium: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reply = try nextMessage(until: deadline, waitingFor: method)
            guard reply["id"] as? Int == id else { continue }
            if let error = reply["error"] { throw TestSupportError("\(method) failed: \(error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    private func waitForEvent(_ name: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !events.contains(name) { _ = try nextMessage(until: deadline, waitingFor: name) }
    }

    /// Reads the next message; events are noted (and console output kept) on the way.
    private func nextMessage(until deadline: Date, waitingFor what: String) throws -> [String: Any] {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let body = Data(pending[..<end])
                pending.removeSubrange(...end)
                guard let message = try JSONSerialization.jsonObject(with: body) as? [String: Any] else { continue }
                if let method = message["method"] as? String {
                    note(method, message["params"] as? [String: Any] ?? [:])
                }
                return message
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestSupportError("chromium did not answer \(what) in time") }
            var poller = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(min(left, 1) * 1000)) >= 0 else { continue }
            guard poller.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(replies, &chunk, chunk.count)
            guard count > 0 else { throw TestSupportError("chromium closed its pipe while \(what) was awaited") }
            pending.append(contentsOf: chunk[..<count])
        }
    }

    private func note(_ method: String, _ parameters: [String: Any]) {
        events.append(method)
        switch method {
        case "Runtime.consoleAPICalled":
            let arguments = (parameters["args"] as? [[String: Any]] ?? []).map {
                "\($0["value"] ?? $0["description"] ?? "")"
            }
            messages.append(
                Message(level: "console.\(parameters["type"] ?? "")", text: arguments.joined(separator: " ")))
        case "Runtime.exceptionThrown":
            messages.append(Message(level: "exception", text: "\(parameters["exceptionDetails"] ?? "")"))
        case "Log.entryAdded":
            let entry = parameters["entry"] as? [String: Any] ?? [:]
            messages.append(Message(level: "log.\(entry["level"] ?? "")", text: "\(entry["text"] ?? "")"))
        default:
            break
        }
    }
}
