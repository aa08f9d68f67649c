import BotsiBasics
import BotsiRestore
import Foundation

/// The progress line's fields, each in its forms (widest first) with a rank: when the terminal is
/// too narrow the line is fitted as curl, pv and kubectl do — the least important fields take
/// their short form first, then go, and what is left is cut — so it never wraps, and each
/// redraw (carriage return, erase line) replaces it whole instead of leaving a stray line.
enum ProgressLine {
    struct Field: Equatable {
        var forms: [String]
        /// 0 matters most: it goes last.
        var rank: Int
    }

    static func fields(_ progress: RunProgress) -> [Field] {
        var fields: [Field] = []
        func add(_ rank: Int, _ forms: String...) { fields.append(Field(forms: forms, rank: rank)) }
        // While stopping nothing more is sent: no ETA, and what the drain waits on comes first.
        let stopping = progress.stopping != nil
        if let total = progress.totalBytes, total > 0 {
            let fraction = min(Double(progress.bytesRead) / Double(total), 1)
            add(stopping ? 3 : 1, String(format: "%.0f%% read", fraction * 100))
        } else {
            add(stopping ? 3 : 1, "\(progress.bytesRead / 1024) KiB read")
        }
        if !stopping, let eta = progress.etaSeconds {
            let time = Basics.duration(eta, wholeSeconds: true)
            // Until the input is read to its end, the rows still unread are not in it.
            if progress.inputComplete {
                add(2, "ETA \(time)")
            } else {
                add(2, "ETA \(time) for the rows read so far", "ETA >\(time)")
            }
        }
        add(7, Basics.count(progress.rowsRead, "row", "rows"))
        add(0, "\(progress.finished) done")
        add(3, String(format: "%.0f req/s", progress.recentRate))
        add(stopping ? 1 : 4, "\(progress.inFlight) in flight")
        if progress.slowReplies > 0 {
            let after = Basics.durationOption(progress.slowAfter)
            let slots = "\(progress.slowReplies) of \(progress.concurrencyLimit) slots"
            let longest = Basics.duration(progress.longestWait, wholeSeconds: true)
            let timeout = Basics.durationOption(progress.requestTimeout)
            add(
                stopping ? 1 : 2,
                "\(slots) waiting on replies slower than \(after) (longest \(longest), --timeout \(timeout))",
                "\(slots) waiting on replies slower than \(after)",
                "\(progress.slowReplies)/\(progress.concurrencyLimit) slots wait >\(after)")
        }
        if progress.waitingToRetry > 0 {
            add(5, "\(progress.waitingToRetry) waiting to retry", "\(progress.waitingToRetry) to retry")
        }
        let statuses = progress.statuses.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key) \($0.value)" }
        if !statuses.isEmpty { add(8, statuses.joined(separator: ", ")) }
        if progress.retries > 0 { add(6, Basics.count(progress.retries, "retry", "retries")) }
        if progress.rejected > 0 { add(9, "\(progress.rejected) rejected") }
        if progress.skipped > 0 { add(9, "\(progress.skipped) already done") }
        if let rate = progress.throttledRate {
            add(
                5, String(format: "throttled to %.1f/s, concurrency %d", rate, progress.concurrencyLimit),
                String(format: "throttled %.1f/s", rate))
        } else if let cap = progress.rateCap {
            // --rate, or this shard's share of --job-rate: a pace held by the options, not the replies.
            add(5, String(format: "rate cap %.1f/s", cap), String(format: "cap %.1f/s", cap))
        }
        if stopping { add(0, "stopping") }
        return fields
    }

    /// The fields joined with " | ", fitted to `width` columns when one is given (a terminal);
    /// the last column stays free, so the cursor never waits at the edge to wrap.
    static func fit(_ fields: [Field], width: Int?) -> String {
        let separator = " | "
        var chosen: [Int?] = Array(repeating: 0, count: fields.count)
        func text() -> String {
            zip(fields, chosen).compactMap { field, form in form.map { field.forms[$0] } }.joined(separator: separator)
        }
        guard let width else { return text() }
        let room = max(width - 1, 1)
        // The least important first; among equals, the rightmost.
        let order = fields.indices.sorted { (fields[$0].rank, $0) > (fields[$1].rank, $1) }
        for index in order {
            while text().count > room, let form = chosen[index], form + 1 < fields[index].forms.count {
                chosen[index] = form + 1
            }
        }
        for index in order where text().count > room && fields[index].rank > 0 {
            chosen[index] = nil
        }
        let line = text()
        return line.count > room ? String(line.prefix(room)) : line
    }
}

/// The terminal's width in columns: the window size of stderr's terminal (TIOCGWINSZ), else
/// `COLUMNS`, else none (not a terminal: log lines are not cut).
enum TerminalWidth {
    static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int? {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return nil
    }
}
