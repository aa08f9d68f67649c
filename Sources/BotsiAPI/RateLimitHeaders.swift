import Foundation

/// What a reply's rate-limit header fields said, as numbers. Every field is optional: servers send
/// different subsets, and a value that does not parse is left out rather than guessed.
public struct RateLimitInfo: Sendable, Equatable {
    /// Requests allowed per window.
    public var quota: Int?
    /// The window in seconds, when the server states it (a policy's `w`).
    public var windowSeconds: Double?
    /// Requests still allowed now.
    public var remaining: Int?
    /// Seconds from now until the quota next grows.
    public var resetSeconds: Double?

    public init(quota: Int? = nil, windowSeconds: Double? = nil, remaining: Int? = nil, resetSeconds: Double? = nil) {
        self.quota = quota
        self.windowSeconds = windowSeconds
        self.remaining = remaining
        self.resetSeconds = resetSeconds
    }

    /// Larger numbers than these are not a limit anyone means: capped, so arithmetic stays sane.
    public static let largestQuota = 100_000_000
    public static let longestWindow = 31 * 86_400.0
}

/// Reads the three families of rate-limit header fields, one line at a time, into `RateLimitInfo`:
/// - the IETF httpapi draft: `RateLimit-Policy: "default";q=100;w=1` and `RateLimit: "default";r=37;t=1`
///   (several policies: the most restrictive rate wins);
/// - its earlier form: `RateLimit-Limit: 100`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds from
///   now) and `RateLimit-Policy: 100;w=1` (or `window=1`);
/// - the vendor form: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` as a UNIX time
///   in seconds (or, when small, seconds from now).
public struct RateLimitHeaderParser: Sendable {
    public private(set) var info = RateLimitInfo()
    /// True once any rate-limit field was seen, parsable or not.
    public private(set) var sawField = false

    public init() {}

    /// The lower-cased field names this parser reads; the transport keeps only these.
    public static let fieldNames: Set<String> = [
        "ratelimit", "ratelimit-policy", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
        "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
    ]

    /// Parses one field; `name` in any case. `now` turns an absolute reset into seconds from now.
    public mutating func add(name: String, value: String, now: Date) {
        let field = name.lowercased()
        guard Self.fieldNames.contains(field) else { return }
        sawField = true
        let text = value.trimmingCharacters(in: .whitespaces)
        switch field {
        case "ratelimit":
            guard let item = Self.items(text).first else { return }
            if let remaining = item["r"].flatMap(Self.count) { info.remaining = remaining }
            if let reset = item["t"].flatMap(Self.seconds) {
                info.resetSeconds = min(reset, RateLimitInfo.longestWindow)
            }
        case "ratelimit-policy":
            // The most restrictive policy decides the rate.
            var best: (quota: Int, window: Double)?
            for item in Self.items(text) {
                guard let quota = (item["q"] ?? item[""]).flatMap(Self.count), quota > 0 else { continue }
                let window = min((item["w"] ?? item["window"]).flatMap(Self.seconds) ?? 1, RateLimitInfo.longestWindow)
                guard window > 0 else { continue }
                if best.map({ Double(quota) / window < Double($0.quota) / $0.window }) ?? true {
                    best = (quota, window)
                }
            }
            if let best {
                info.quota = best.quota
                info.windowSeconds = best.window
            }
        case "ratelimit-limit", "x-ratelimit-limit":
            // Early drafts allow `100, 100;w=1, 1000;w=3600`: the first number is the one in force.
            let first = text.split(separator: ",").first.map { $0.split(separator: ";").first ?? "" } ?? ""
            if info.quota == nil, let quota = Self.count(first.trimmingCharacters(in: .whitespaces)), quota > 0 {
                info.quota = quota
            }
        case "ratelimit-remaining", "x-ratelimit-remaining":
            if let remaining = Self.count(text) { info.remaining = remaining }
        default:  // the resets
            guard let number = Self.seconds(text) else { return }
            if field == "x-ratelimit-reset", number >= 1_000_000_000 {
                info.resetSeconds = min(RateLimitInfo.longestWindow, max(0, number - now.timeIntervalSince1970))
            } else {
                info.resetSeconds = min(number, RateLimitInfo.longestWindow)
            }
        }
    }

    /// The parsed fields, or nil when the reply had none worth using.
    public var result: RateLimitInfo? { info == RateLimitInfo() ? nil : info }

    /// Items of a structured-field list: `"name";a=1;b=2, …` as parameter maps; a bare leading
    /// number (the earlier draft's `100;w=1`) is stored under "".
    static func items(_ text: String) -> [[String: String]] {
        text.split(separator: ",").map { item in
            var parameters: [String: String] = [:]
            for (index, part) in item.split(separator: ";").enumerated() {
                let piece = part.trimmingCharacters(in: .whitespaces)
                if let equals = piece.firstIndex(of: "=") {
                    parameters[piece[..<equals].lowercased()] = String(piece[piece.index(after: equals)...])
                } else if index == 0 {
                    parameters[""] = piece
                }
            }
            return parameters
        }
    }

    /// A non-negative whole count, capped (digits beyond UInt64 too).
    static func count(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 64, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(min(UInt64(text) ?? UInt64.max, UInt64(RateLimitInfo.largestQuota)))
    }

    /// Non-negative seconds, whole or decimal, uncapped: the caller caps a delay or turns a UNIX time
    /// into one.
    static func seconds(_ text: String) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 24,
            text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }), let value = Double(text),
            value.isFinite
        else { return nil }
        return value
    }
}
