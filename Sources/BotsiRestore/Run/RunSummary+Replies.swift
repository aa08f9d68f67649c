import BotsiAPI
import BotsiBasics

/// The transport errors of a run by message, so the summary can name the commonest one as curl
/// said it ("Failed to connect to 127.0.0.1 port 28099"): a wrong port or host shows its cause
/// in the run's own output, not only in `report`.
public struct TransportErrorTally: Sendable, Codable, Equatable {
    public struct Entry: Sendable, Codable, Equatable {
        public var code: String
        /// The latest message of its kind, verbatim.
        public var message: String
        public var count: Int
    }

    /// Distinct kinds kept at most; later kinds count only in `total`.
    static let limit = 32
    public private(set) var entries: [Entry] = []
    public private(set) var total = 0

    public init() {}

    /// The kind with the most requests (the earliest seen among equals).
    public var mostCommon: Entry? {
        entries.enumerated().max { ($0.element.count, -$0.offset) < ($1.element.count, -$1.offset) }?.element
    }

    mutating func add(code: String, message: String) {
        total += 1
        let key = Self.kind(of: message)
        if let index = entries.firstIndex(where: { $0.code == code && Self.kind(of: $0.message) == key }) {
            entries[index].count += 1
            entries[index].message = message
        } else if entries.count < Self.limit {
            entries.append(Entry(code: code, message: message, count: 1))
        }
    }

    /// A message with its durations left out ("after 3 ms", "after 30001 milliseconds"), so
    /// that one cause is one kind however long each attempt took.
    static func kind(of message: String) -> String {
        let words = message.split(separator: " ", omittingEmptySubsequences: false)
        var kept: [Substring] = []
        for (index, word) in words.enumerated() {
            let next = index + 1 < words.count ? words[index + 1] : ""
            let isDuration = !word.isEmpty && word.allSatisfy(\.isASCIIDigit) && next.hasPrefix("m")
            kept.append(isDuration ? "N" : word)
        }
        return kept.joined(separator: " ")
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension RunSummary {
    /// One reply under `--timeout`: a transport error is tallied by message, a timeout counted
    /// with its slot time.
    mutating func note(_ reply: RestoreReply, duration: Double, timeout: Double = 30) {
        requestSeconds += duration
        requestTimeout = timeout
        guard case .retryable(let code, let httpStatus, _, let message) = reply, httpStatus == nil else { return }
        transportErrors.add(code: code, message: message ?? code)
        if code == "timeout" {
            timeouts += 1
            timeoutSeconds += duration
        }
    }

    /// Share of the slots' busy time spent on requests that timed out.
    public var timeoutShare: Double { requestSeconds > 0 ? min(timeoutSeconds / requestSeconds, 1) : 0 }

    /// The commonest transport error, verbatim, and the timeouts when they held the slots.
    func replyLines() -> [String] {
        var lines: [String] = []
        if let common = transportErrors.mostCommon {
            lines.append(
                "  most common transport error (\(common.code), \(common.count) of the \(transportErrors.total) "
                    + "requests answered without HTTP): "
                    + common.message)
        }
        if timeouts > 0 {
            let timeout = Basics.durationOption(requestTimeout)
            let share = Int((timeoutShare * 100).rounded())
            let sentence =
                "  requests that waited the whole --timeout \(timeout): \(timeouts), \(share)% of the slots' busy time"
            lines.append(
                timeoutShare >= 0.5
                    ? sentence + "; timeouts dominated: the server held replies (a lower --timeout frees slots "
                        + "sooner, if answers come well within it)"
                    : sentence)
        }
        return lines
    }
}
