import BotsiBasics
import BotsiRestore
import Foundation
import Synchronization

/// How log lines are written off a terminal: text for people, JSON objects for log shippers.
enum LogFormat: String, Sendable {
    case text, json
}

/// The live progress line on a terminal, or a plain log line every `logInterval` elsewhere
/// (cron), so logs stay readable next morning; with `--log-format json`, one JSON object a line.
final class ProgressPrinter: Sendable {
    let isTerminal: Bool
    let quiet: Bool
    let logInterval: Double
    let format: LogFormat
    private let state = Mutex(State())

    private struct State {
        var lastLog: Double = 0
        var lineShown = false
    }

    init(isTerminal: Bool, quiet: Bool, logInterval: Double, format: LogFormat = .text) {
        self.isTerminal = isTerminal
        self.quiet = quiet
        self.logInterval = logInterval
        self.format = format
    }

    var tickInterval: Double { isTerminal ? 0.25 : min(logInterval, 1) }

    func show(_ progress: RunProgress) {
        guard !quiet else { return }
        // The width is asked each time: a resized window gets a line that fits it at the next redraw.
        let line = Self.line(progress, width: isTerminal ? TerminalWidth.current() ?? 80 : nil)
        state.withLock { state in
            if isTerminal {
                Output.liveLine(line)
                state.lineShown = true
            } else if progress.elapsed - state.lastLog >= logInterval {
                state.lastLog = progress.elapsed
                if format == .json {
                    Self.writeJSON(Self.fields(progress).merging(["event": "progress"]) { $1 })
                } else {
                    let stamp = ISO8601DateFormatter().string(from: Date())
                    Output.error("\(stamp) progress: \(line)")
                }
            }
        }
    }

    /// Ends the live line so the summary starts on a fresh one.
    func finish() {
        state.withLock { state in
            if state.lineShown {
                Output.error("")
                state.lineShown = false
            }
        }
    }

    /// A one-off message (stopping, an error): a line of text, or a JSON object.
    func event(_ name: String, message: String, exitCode: Int32? = nil) {
        finish()
        guard format == .json else {
            // One line each: a line break in it (a file's name) would forge the lines after it.
            let line = VisibleText.escaped(message, keeping: .tab)
            Output.error(name == "stopping" ? "\nbotsi-restore: \(line)" : line)
            return
        }
        var object: [String: Any] = ["event": name, "message": message]
        if let exitCode { object["exitCode"] = Int(exitCode) }
        Self.writeJSON(object)
    }

    /// The end of a run: the summary for people, or its fields as one JSON object.
    func summary(_ summary: RunSummary, journalPath: String) {
        // What the inputs' checks noted (an empty export), each said on its own, before the summary.
        for note in summary.inputNotes {
            let isWarning = note.hasPrefix("warning: ")
            if format == .json {
                Self.writeJSON(["event": isWarning ? "warning" : "notice", "message": note])
            } else {
                Output.error("botsi-restore: \(note)")
            }
        }
        guard format == .json else {
            let text = summary.render(journalPath: journalPath)
            Output.error(text)
            if let note = Installation.commandNote(after: text) { Output.error(note) }
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var object =
            (try? encoder.encode(summary)).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
            ?? [:]
        object["event"] = "summary"
        object["journal"] = journalPath
        object["message"] = summary.render(journalPath: journalPath)
        Self.writeJSON(object)
    }

    static func fields(_ progress: RunProgress) -> [String: Any] {
        var object: [String: Any] = [
            "elapsedSeconds": progress.elapsed, "rowsRead": progress.rowsRead, "bytesRead": progress.bytesRead,
            "done": progress.finished, "inFlight": progress.inFlight, "waitingToRetry": progress.waitingToRetry,
            "requests": progress.requests, "retries": progress.retries, "ratePerSecond": progress.recentRate,
            "statuses": Dictionary(uniqueKeysWithValues: progress.statuses.map { ($0.key.rawValue, $0.value) }),
            "rejected": progress.rejected, "alreadyDone": progress.skipped,
            "duplicates": progress.duplicates, "concurrencyLimit": progress.concurrencyLimit,
        ]
        if let total = progress.totalBytes { object["totalBytes"] = total }
        if let rate = progress.throttledRate { object["throttledRate"] = rate }
        if let cap = progress.rateCap { object["rateCap"] = cap }
        if let stopping = progress.stopping { object["stopping"] = stopping }
        object["inputComplete"] = progress.inputComplete
        object["outstanding"] = progress.outstanding
        if let eta = progress.etaSeconds { object["etaSeconds"] = eta }
        if progress.slowReplies > 0 {
            object["slowReplies"] = progress.slowReplies
            object["slowAfterSeconds"] = progress.slowAfter
            object["longestWaitSeconds"] = progress.longestWait
        }
        return object
    }

    static func writeJSON(_ object: [String: Any]) {
        var object = object
        object["time"] = ISO8601DateFormatter().string(from: Date())
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: options) else { return }
        // JSONSerialization escapes C0 controls; the choke point escapes the rest, valid inside a string.
        Output.error(String(decoding: data, as: UTF8.self))
    }

    /// The progress line, fitted to `width` columns when given (a terminal's).
    static func line(_ progress: RunProgress, width: Int? = nil) -> String {
        ProgressLine.fit(ProgressLine.fields(progress), width: width)
    }
}
