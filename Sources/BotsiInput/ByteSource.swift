internal import CZlib
import Glibc

/// Raw bytes of one file descriptor (or of bytes in memory), counted and hashed as they are read.
final class RawFile {
    let path: String
    private var descriptor: Int32
    private let ownsDescriptor: Bool
    /// Content given in memory instead of a descriptor, and how much of it was read.
    private var memory: [UInt8]?
    private var memoryOffset = 0
    private(set) var bytesRead: Int64 = 0
    private(set) var hasher = SHA256()
    /// Size of a regular file; `nil` for pipes, terminals and other streams.
    let totalBytes: Int64?

    /// `path` "-" reads standard input, which is never closed by the reader.
    init(path: String) throws(InputError) {
        self.path = path
        if path == "-" {
            descriptor = STDIN_FILENO
            ownsDescriptor = false
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else {
                let code = errno
                let kind: InputError.Kind = code == ENOENT || code == ENOTDIR ? .fileMissing : .unreadable
                let advice =
                    kind == .fileMissing
                    ? "check the path" : "check its permissions (the reading user needs read access)"
                throw InputError(
                    kind: kind, path: path,
                    message: "Cannot open input file '\(path)': \(Self.systemMessage(code)); \(advice).")
            }
            descriptor = opened
            ownsDescriptor = true
        }
        var status = stat()
        if fstat(descriptor, &status) == 0 {
            let type = status.st_mode & S_IFMT
            if type == S_IFDIR {
                if ownsDescriptor { _ = Glibc.close(descriptor) }
                throw InputError(
                    kind: .unreadable, path: path,
                    message: "Input '\(path)' is a directory; name the CSV or JSON-lines files inside it instead.")
            }
            totalBytes = type == S_IFREG ? Int64(status.st_size) : nil
        } else {
            totalBytes = nil
        }
    }

    /// Serves `bytes` as if they were a regular file named `name`.
    init(bytes: [UInt8], name: String) {
        path = name
        descriptor = -1
        ownsDescriptor = false
        memory = bytes
        totalBytes = Int64(bytes.count)
    }

    deinit { close() }

    /// Reads at most `count` bytes; 0 means end of file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(InputError) -> Int {
        if let memory {
            let taken = min(count, memory.count - memoryOffset)
            guard taken > 0 else { return 0 }
            memory.withUnsafeBytes { source in
                let slice = UnsafeRawBufferPointer(rebasing: source[memoryOffset..<memoryOffset + taken])
                buffer.copyMemory(from: slice.baseAddress!, byteCount: taken)
                hasher.update(slice)
            }
            memoryOffset += taken
            bytesRead += Int64(taken)
            return taken
        }
        guard descriptor >= 0 else { return 0 }
        while true {
            let result = Glibc.read(descriptor, buffer, count)
            if result >= 0 {
                if result > 0 {
                    bytesRead += Int64(result)
                    hasher.update(UnsafeRawBufferPointer(start: buffer, count: result))
                }
                return result
            }
            let code = errno
            if code == EINTR { continue }
            throw InputError(
                kind: .unreadable, path: path,
                message:
                    "Reading input '\(displayName)' failed after \(bytesRead) bytes: \(Self.systemMessage(code)); check the file and the disk, then run again."
            )
        }
    }

    var displayName: String { path == "-" ? "stdin" : path }

    func close() {
        memory = nil
        if ownsDescriptor && descriptor >= 0 {
            _ = Glibc.close(descriptor)
        }
        descriptor = -1
    }

    static func systemMessage(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// The decoded byte stream of an input: the raw bytes, or their gunzipped content when the
/// file starts with the gzip magic bytes 1f 8b (whatever its name says).
final class DecodedSource {
    let raw: RawFile
    private(set) var isGzip = false
    /// Raw bytes read while sniffing, handed out before anything else (plain files only).
    private var sniffed: [UInt8] = []
    private var inflater: Inflater?

    init(raw: RawFile) throws(InputError) {
        self.raw = raw
        let probeBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 2)
        defer { probeBytes.deallocate() }
        var filled = 0
        while filled < 2 {
            let count = try raw.read(into: probeBytes + filled, count: 2 - filled)
            if count == 0 { break }
            filled += count
        }
        let probe = Array(UnsafeBufferPointer(start: probeBytes, count: filled))
        if probe == [0x1f, 0x8b] {
            isGzip = true
            inflater = try Inflater(raw: raw, prefix: probe)
        } else {
            sniffed = probe
        }
    }

    /// Raw bytes behind the decoded bytes handed out so far: less what is read and not yet
    /// decoded (the sniffed bytes, the inflater's pending input).
    var rawBytesBehindOutput: Int64 {
        raw.bytesRead - Int64(inflater?.pendingInput ?? sniffed.count)
    }

    /// Reads at most `count` decoded bytes; 0 means end of the stream.
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws(InputError) -> Int {
        if let inflater {
            return try inflater.read(into: buffer, count: count)
        }
        if !sniffed.isEmpty {
            let taken = min(count, sniffed.count)
            for index in 0..<taken { buffer[index] = sniffed[index] }
            sniffed.removeFirst(taken)
            return taken
        }
        return try raw.read(into: buffer, count: count)
    }

    func close() {
        inflater?.end()
        inflater = nil
        raw.close()
    }
}

/// zlib inflate over the raw file as a stream, one gzip member after another.
private final class Inflater {
    private let raw: RawFile
    private let stream: UnsafeMutablePointer<z_stream>
    private let input: UnsafeMutablePointer<UInt8>
    private let inputCapacity = 64 * 1024
    private var rawEnded = false
    /// True right after a member ended and before the next one produced anything: the only
    /// place where the end of the raw file is a clean end of the stream.
    private var betweenMembers = false
    private var ended = false

    init(raw: RawFile, prefix: [UInt8]) throws(InputError) {
        self.raw = raw
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        input = .allocate(capacity: inputCapacity)
        for (index, byte) in prefix.enumerated() { input[index] = byte }
        stream.pointee.next_in = input
        stream.pointee.avail_in = UInt32(prefix.count)
        guard czlib_inflate_init_gzip(stream) == Z_OK else {
            input.deallocate()
            stream.deallocate()
            throw InputError(
                kind: .unreadable, path: raw.path,
                message: "Cannot start gzip decompression for '\(raw.displayName)' (zlib out of memory); try again.")
        }
    }

    deinit {
        end()
        input.deallocate()
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compressed bytes read and not yet inflated.
    var pendingInput: Int { ended ? 0 : Int(stream.pointee.avail_in) }

    func end() {
        if !ended {
            inflateEnd(stream)
            ended = true
        }
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws(InputError) -> Int {
        guard !ended else { return 0 }
        while true {
            if stream.pointee.avail_in == 0 && !rawEnded {
                let got = try raw.read(into: input, count: inputCapacity)
                if got == 0 {
                    rawEnded = true
                } else {
                    stream.pointee.next_in = input
                    stream.pointee.avail_in = UInt32(got)
                }
            }
            if stream.pointee.avail_in == 0 && rawEnded {
                if betweenMembers { return 0 }
                throw corrupt("ends in the middle of the compressed data (truncated download or copy?)")
            }
            stream.pointee.next_out = buffer
            stream.pointee.avail_out = UInt32(count)
            let status = inflate(stream, Z_NO_FLUSH)
            let produced = count - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                // Another member may follow (as `cat a.gz b.gz` makes); reset and see.
                betweenMembers = true
                inflateReset(stream)
            case Z_OK:
                betweenMembers = false
            case Z_BUF_ERROR:
                break  // needs more input; the loop reads it
            default:
                let detail = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw corrupt("is not valid gzip data (\(detail))")
            }
            if produced > 0 { return produced }
        }
    }

    private func corrupt(_ what: String) -> InputError {
        InputError(
            kind: .damaged, path: raw.path,
            message:
                "Input '\(raw.displayName)' \(what) after \(raw.bytesRead) compressed bytes; check it with 'gzip -t' and provide an intact file."
        )
    }
}
