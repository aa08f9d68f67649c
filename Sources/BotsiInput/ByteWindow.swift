import Glibc

/// A sliding window over the decoded stream that keeps the record being parsed contiguous in
/// memory, so fields are read in place. It grows only as far as the longest record allowed
/// (`maxRecordBytes`) plus one read chunk: memory never depends on the number of rows, and a
/// longer line is skipped, not buffered.
final class ByteWindow {
    static let chunkSize = 64 * 1024

    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    /// One past the last valid byte.
    private(set) var end = 0
    /// The decoded stream has ended; `end` will not move again.
    private(set) var reachedEnd = false
    /// Decoded bytes dropped from the window's start so far: index `i` is byte `dropped + i`.
    private(set) var dropped: Int64 = 0
    private let maximumCapacity: Int
    private let source: TextSource

    /// Most bytes one refill asks for; tests make it tiny so every record boundary meets a refill.
    private let readLimit: Int

    init(source: TextSource, maxRecordBytes: Int, readLimit: Int = .max) {
        self.source = source
        self.readLimit = readLimit
        let (sum, overflow) = maxRecordBytes.addingReportingOverflow(2 * Self.chunkSize)
        maximumCapacity = overflow ? Int.max / 2 : sum
        capacity = min(4 * Self.chunkSize, maximumCapacity)
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    /// Drops the bytes before `keep` and reads more after the kept ones. Returns how far the
    /// kept bytes moved toward the start, which callers subtract from the indices they hold.
    /// When nothing new arrives, `reachedEnd` is true.
    func refill(keepingFrom keep: Int) throws(InputError) -> Int {
        precondition(keep >= 0 && keep <= end)
        let kept = end - keep
        if keep > 0 && kept > 0 {
            memmove(base, base + keep, kept)
        }
        end = kept
        dropped += Int64(keep)
        if capacity - end < Self.chunkSize && capacity < maximumCapacity {
            let grown = min(max(capacity * 2, end + Self.chunkSize), maximumCapacity)
            let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
            bigger.update(from: base, count: end)
            base.deallocate()
            base = bigger
            capacity = grown
        }
        if !reachedEnd && end < capacity {
            let count = try source.read(into: base + end, count: min(capacity - end, readLimit))
            if count == 0 {
                reachedEnd = true
            } else {
                end += count
            }
        }
        return keep
    }
}
