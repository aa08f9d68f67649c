/// Finds echoes of the API key in text a server sent, so they never reach stderr, the journal or a
/// report. An echo is any case-insensitive run of at least 12 characters of the key (the whole key
/// when it is shorter): a truncated or upper-cased key in a message is a leak too.
///
/// The scan keeps a rolling window of the last 12 bytes and looks it up only while every byte of
/// it could belong to the key, so ordinary text (spaces, punctuation, words shorter than 12) costs
/// a table lookup per byte and no allocation.
struct KeyRedactor: Sendable {
    static let replacement = "[redacted]"
    static let minimumEcho = 12

    private let windowLength: Int
    /// Every window of the key, ASCII-lowercased, packed big-endian into the low bytes.
    private let windows: Set<UInt128>
    /// Which (lowercased) bytes occur in the key.
    private let alphabet: [Bool]

    init(key: String) {
        let bytes = key.utf8.map(Self.lowercased)
        windowLength = max(1, min(Self.minimumEcho, bytes.count))
        var alphabet = [Bool](repeating: false, count: 256)
        for byte in bytes { alphabet[Int(byte)] = true }
        self.alphabet = alphabet
        var windows = Set<UInt128>()
        if bytes.count >= windowLength {
            for start in 0...(bytes.count - windowLength) {
                windows.insert(Self.pack(bytes[start..<start + windowLength]))
            }
        }
        self.windows = windows
    }

    /// `text` with every echo replaced by `[redacted]`, or nil when it holds none.
    func redact(_ text: String) -> String? {
        let ranges = echoes(in: text)
        guard !ranges.isEmpty else { return nil }
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var position = 0
        for range in ranges {
            result.append(contentsOf: bytes[position..<range.lowerBound])
            result.append(contentsOf: Self.replacement.utf8)
            position = range.upperBound
        }
        result.append(contentsOf: bytes[position...])
        return String(decoding: result, as: UTF8.self)
    }

    /// `text` without echoes (unchanged when it has none).
    func clean(_ text: String) -> String { redact(text) ?? text }

    /// Byte ranges of the echoes, merged where they overlap or touch.
    private func echoes(in text: String) -> [Range<Int>] {
        var text = text
        // Native strings are contiguous UTF-8: scan their buffer, not the view's iterator.
        return text.withUTF8 { bytes in
            guard bytes.count >= windowLength, mayHoldEcho(bytes) else { return [] }
            return echoes(in: bytes)
        }
    }

    /// The cheap first pass: false when no run of key bytes is as long as an echo. Most text a
    /// server sends (ids, dates, words between spaces) is rejected here without building a window.
    private func mayHoldEcho(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        alphabet.withUnsafeBufferPointer { alphabet in
            var run = 0
            for byte in bytes {
                if alphabet[Int(Self.lowercased(byte))] {
                    run += 1
                    if run >= windowLength { return true }
                } else {
                    run = 0
                }
            }
            return false
        }
    }

    private func echoes(in bytes: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        let mask: UInt128 = (1 << UInt128(windowLength * 8)) - 1
        var ranges: [Range<Int>] = []
        var run = 0
        var window: UInt128 = 0
        for (index, byte) in bytes.enumerated() {
            let folded = Self.lowercased(byte)
            guard alphabet[Int(folded)] else {
                run = 0
                continue
            }
            run += 1
            window = ((window << 8) | UInt128(folded)) & mask
            guard run >= windowLength, windows.contains(window) else { continue }
            let match = (index + 1 - windowLength)..<(index + 1)
            if let last = ranges.last, last.upperBound >= match.lowerBound {
                ranges[ranges.count - 1] = last.lowerBound..<match.upperBound
            } else {
                ranges.append(match)
            }
        }
        return ranges
    }

    private static func pack(_ bytes: ArraySlice<UInt8>) -> UInt128 {
        bytes.reduce(0) { ($0 << 8) | UInt128($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
    }
}

extension KeyRedactor {
    /// The reply with every text the server chose scrubbed: messages, codes and, for a 200, the
    /// profile snapshot's strings. A code holding an echo falls back to `http_<status>`.
    func scrub(_ reply: RestoreReply) -> RestoreReply {
        func code(_ code: String, _ status: Int?) -> String {
            redact(code) == nil ? code : status.map { "http_\($0)" } ?? "invalid_response"
        }
        switch reply {
        case .restored(let snapshot):
            return .restored(scrub(snapshot))
        case .failed(let value, let status, let message):
            return .failed(code: code(value, status), httpStatus: status, message: message.map(clean))
        case .retryable(let value, let status, let retryAfter, let message):
            return .retryable(
                code: code(value, status), httpStatus: status, retryAfter: retryAfter, message: message.map(clean))
        case .nothingToRestore(let message):
            return .nothingToRestore(message: message.map(clean))
        case .profileNotFound(let message):
            return .profileNotFound(message: message.map(clean))
        case .rejected(let value, let message):
            // Its code is always `bad_request` (`classifyReply`): the server's text is the message.
            return .rejected(code: value, message: message.map(clean))
        case .fatal(let reason, let status, let message):
            return .fatal(reason, httpStatus: status, message: clean(message))
        }
    }

    private func scrub(_ snapshot: ProfileSnapshot) -> ProfileSnapshot {
        func holdsEcho(_ text: String?) -> Bool { text.map { !echoes(in: $0).isEmpty } ?? false }
        // The common case: nothing to change, nothing allocated.
        let holdsAny =
            holdsEcho(snapshot.profileId) || holdsEcho(snapshot.state)
            || snapshot.accessLevels.contains { name, level in
                holdsEcho(name) || holdsEcho(level.expiresAt) || holdsEcho(level.sourceProductId)
            }
        guard holdsAny else { return snapshot }
        var levels: [String: AccessLevelSnapshot] = [:]
        for (name, level) in snapshot.accessLevels {
            var level = level
            level.expiresAt = level.expiresAt.map(clean)
            level.sourceProductId = level.sourceProductId.map(clean)
            levels[clean(name)] = level
        }
        return ProfileSnapshot(
            profileId: snapshot.profileId.map(clean), state: snapshot.state.map(clean), accessLevels: levels)
    }
}
