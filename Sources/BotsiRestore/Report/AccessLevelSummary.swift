import Foundation

/// The access levels of a profile snapshot, reduced to what a spreadsheet column can hold: the
/// active ones (by name), the latest expiry among them, and whether any will renew.
struct AccessLevelSummary: Equatable {
    var active: [String] = []
    /// The active ones' names, space-separated: the report's `activeAccessLevels`.
    var activeList: String { active.count == 1 ? active[0] : active.joined(separator: " ") }
    var latestExpiry: String?
    var willRenew: Bool?

    /// nil when there is no snapshot or it is not a JSON object.
    init?(json: String?) {
        guard var json else { return nil }
        // The journal's own snapshots (compact, keys sorted, plain ASCII) are read by a scanner
        // made for that shape: Foundation's parser per row was most of a report's time. Any other
        // text goes through Foundation, which gives the same answer for what both can read.
        let scanned = json.withUTF8 { bytes -> AccessLevelSummary? in
            var levels = ScannedLevels()
            guard levels.scan(bytes) else { return nil }
            var summary = AccessLevelSummary()
            summary.active = levels.active.map { levels.text($0, of: bytes) }
            summary.latestExpiry = levels.latestExpiry.map { levels.text($0, of: bytes) }
            summary.willRenew = levels.willRenew
            return summary
        }
        guard let summary = scanned ?? Self.parsed(json) else { return nil }
        self = summary
    }

    /// The same, read by Foundation's JSON parser whatever the text.
    init?(parsing json: String) {
        guard let summary = Self.parsed(json) else { return nil }
        self = summary
    }

    private static func parsed(_ json: String) -> AccessLevelSummary? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        else { return nil }
        var summary = AccessLevelSummary()
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            guard let level = value as? [String: Any] else { continue }
            guard level["isActive"] as? Bool == true else { continue }
            summary.add(
                active: name, expiresAt: level["expiresAt"] as? String, willRenew: level["willRenew"] as? Bool)
        }
        return summary
    }

    fileprivate init() {}

    fileprivate mutating func add(active name: String, expiresAt: String?, willRenew renew: Bool?) {
        active.append(name)
        if let expiresAt, expiresAt > (latestExpiry ?? "") { latestExpiry = expiresAt }
        if let renew { willRenew = (willRenew ?? false) || renew }
    }
}

/// The summary of a snapshot read by `SnapshotScanner`, as ranges of the snapshot's bytes: a
/// report writes them on without a String per row. Reused from row to row.
struct ScannedLevels {
    /// The active levels' names, in order.
    var active: [Range<Int>] = []
    var latestExpiry: Range<Int>?
    var willRenew: Bool?

    /// False when the snapshot is not of the runner's shape: then read it with Foundation.
    mutating func scan(_ json: UnsafeBufferPointer<UInt8>) -> Bool {
        active.removeAll(keepingCapacity: true)
        latestExpiry = nil
        willRenew = nil
        var scanner = SnapshotScanner(bytes: json)
        return scanner.scan(into: &self)
    }

    func text(_ range: Range<Int>, of json: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: json[range]), as: UTF8.self)
    }

    /// What `AccessLevelSummary.add` does, on ranges: the scanner's strings are ASCII, whose
    /// byte order is the order Swift compares them in.
    fileprivate mutating func add(
        active name: Range<Int>, expiresAt: Range<Int>?, willRenew renew: Bool?, of json: UnsafeBufferPointer<UInt8>
    ) {
        active.append(name)
        if let expiresAt {
            let later =
                latestExpiry.map { SnapshotScanner.isLess($0, expiresAt, in: json) } ?? !expiresAt.isEmpty
            if later { latestExpiry = expiresAt }
        }
        if let renew { willRenew = (willRenew ?? false) || renew }
    }
}

/// Reads a snapshot of the shape the runner writes: an object of objects whose names are in
/// increasing order and whose members are `true`, `false`, `null` or strings, every string
/// printable ASCII without escapes. Anything else gives false, and the caller uses Foundation.
/// (For ASCII, byte order is the order Swift sorts strings in, so the names need no sorting.)
private struct SnapshotScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    enum Value: Equatable {
        case string(Range<Int>)
        case bool(Bool)
        case null
    }

    mutating func scan(into summary: inout ScannedLevels) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        var previous: Range<Int>?
        if !take(UInt8(ascii: "}")) {
            repeat {
                guard let name = string(), take(UInt8(ascii: ":")), take(UInt8(ascii: "{")) else { return false }
                if let previous, !Self.isLess(previous, name, in: bytes) { return false }
                previous = name
                var isActive: Value?
                var expiresAt: Value?
                var willRenew: Value?
                if !take(UInt8(ascii: "}")) {
                    repeat {
                        guard let key = string(), take(UInt8(ascii: ":")), let value = value() else { return false }
                        if equals(key, "isActive") {
                            guard isActive == nil else { return false }
                            isActive = value
                        } else if equals(key, "expiresAt") {
                            guard expiresAt == nil else { return false }
                            expiresAt = value
                        } else if equals(key, "willRenew") {
                            guard willRenew == nil else { return false }
                            willRenew = value
                        }
                    } while take(UInt8(ascii: ","))
                    guard take(UInt8(ascii: "}")) else { return false }
                }
                guard isActive == .bool(true) else { continue }
                var expiry: Range<Int>?
                if case .string(let range) = expiresAt { expiry = range }
                var renew: Bool?
                if case .bool(let value) = willRenew { renew = value }
                summary.add(active: name, expiresAt: expiry, willRenew: renew, of: bytes)
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return false }
        }
        skipSpace()
        return at == bytes.count
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            let byte = bytes[at]
            guard byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D else { return }
            at += 1
        }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    /// A string of printable ASCII without escapes: the range of its bytes, quotes left out.
    private mutating func string() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = at
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                at += 1
                return start..<(at - 1)
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            at += 1
        }
        return nil
    }

    private mutating func value() -> Value? {
        skipSpace()
        guard at < bytes.count else { return nil }
        switch bytes[at] {
        case UInt8(ascii: "\""): return string().map(Value.string)
        case UInt8(ascii: "t"): return word("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return word("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return word("null") ? .null : nil
        default: return nil
        }
    }

    private mutating func word(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        for index in 0..<count where bytes[at + index] != word.utf8Start[index] { return false }
        at += count
        return true
    }

    private func equals(_ range: Range<Int>, _ word: StaticString) -> Bool {
        guard range.count == word.utf8CodeUnitCount else { return false }
        for index in 0..<range.count where bytes[range.lowerBound + index] != word.utf8Start[index] { return false }
        return true
    }

    static func isLess(_ lhs: Range<Int>, _ rhs: Range<Int>, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        UnsafeBufferPointer(rebasing: bytes[lhs]).lexicographicallyPrecedes(UnsafeBufferPointer(rebasing: bytes[rhs]))
    }
}
