import BotsiRestore
import Foundation
import Synchronization

/// The live progress line on a terminal, or a plain log line every `logInterval` elsewhere
/// (cron), so logs stay readable next morning.
final class ProgressPrinter: Sendable {
    let isTerminal: Bool
    let quiet: Bool
    let logInterval: Double
    private let state = Mutex(State())

    private struct State {
        var lastLog: Double = 0
        var lineShown = false
    }

    init(isTerminal: Bool, quiet: Bool, logInterval: Double) {
        self.isTerminal = isTerminal
        self.quiet = quiet
        self.logInterval = logInterval
    }

    var tickInterval: Double { isTerminal ? 0.25 : min(logInterval, 1) }

    func show(_ progress: RunProgress) {
        guard !quiet else { return }
        let line = Self.line(progress)
        state.withLock { state in
            if isTerminal {
                FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
                state.lineShown = true
            } else if progress.elapsed - state.lastLog >= logInterval {
                state.lastLog = progress.elapsed
                let stamp = ISO8601DateFormatter().string(from: Date())
                FileHandle.standardError.write(Data("\(stamp) progress: \(line)\n".utf8))
            }
        }
    }

    /// Ends the live line so the summary starts on a fresh one.
    func finish() {
        state.withLock { state in
            if state.lineShown {
                FileHandle.standardError.write(Data("\n".utf8))
                state.lineShown = false
            }
        }
    }

    static func line(_ progress: RunProgress) -> String {
        var parts: [String] = []
        if let total = progress.totalBytes, total > 0 {
            let fraction = Double(progress.bytesRead) / Double(total)
            parts.append(String(format: "%.0f%% read", min(fraction, 1) * 100))
            if fraction > 0.01 && fraction < 1 {
                let remaining = progress.elapsed / fraction - progress.elapsed
                parts.append("ETA \(formatDuration(remaining))")
            }
        } else {
            parts.append("\(progress.bytesRead / 1024) KiB read")
        }
        parts.append("\(progress.rowsRead) rows")
        parts.append("\(progress.finished) done")
        parts.append(String(format: "%.0f req/s", progress.recentRate))
        parts.append("\(progress.inFlight) in flight")
        if progress.waitingToRetry > 0 { parts.append("\(progress.waitingToRetry) waiting to retry") }
        let statuses = progress.statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if !statuses.isEmpty { parts.append(statuses.joined(separator: ", ")) }
        if progress.retries > 0 { parts.append("\(progress.retries) retries") }
        if progress.rejected > 0 { parts.append("\(progress.rejected) rejected") }
        if progress.skipped > 0 { parts.append("\(progress.skipped) already done") }
        if let rate = progress.throttledRate {
            parts.append(String(format: "throttled to %.1f/s, concurrency %d", rate, progress.concurrencyLimit))
        }
        if progress.stopping != nil { parts.append("stopping") }
        return parts.joined(separator: " | ")
    }

    static func formatDuration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        let whole = Int(seconds)
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", (whole % 3600) / 60))m"
    }
}
