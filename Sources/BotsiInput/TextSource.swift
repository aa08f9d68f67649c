import Glibc

/// The decoded stream as UTF-8 text, whatever encoding the file was written in.
///
/// Opening sniffs the first bytes (after gzip): a spreadsheet, PDF or other binary is refused
/// there by its magic bytes, and a byte-order mark, or the zero bytes of BOM-less UTF-16 text,
/// picks the encoding. UTF-16 and the single-byte encodings are transcoded chunk by chunk, so
/// memory stays two fixed buffers whatever the file's size. Line ends keep their place, so line
/// numbers stay the file's own. Bytes that are not valid in their encoding (an unpaired UTF-16
/// surrogate, an odd last byte) become 0xFF, which no UTF-8 check accepts: an id field holding one
/// is rejected instead of being sent changed.
final class TextSource {
    enum Decoding: Equatable {
        case utf8
        case utf16(bigEndian: Bool)
        case singleByte(InputEncoding)
    }

    private let source: DecodedSource
    let decoding: Decoding
    /// The decoded stream held no byte at all (a 0-byte file, or gzip of one).
    let isZeroBytes: Bool

    /// Sniffed bytes not yet handed out (UTF-8) or not yet transcoded (the others).
    private var pending: [UInt8]
    private var pendingOffset = 0
    private var sourceEnded = false
    private var transcoder: Transcoder?

    /// How many bytes opening reads to recognise the content, at most.
    static let sniffBytes = 512
    /// Enough to see every signature `ContentSniffer` knows: with these and a whole first line,
    /// opening stops reading, so a run fed slowly through a pipe starts with its first line.
    static let sniffBytesWithALine = 16

    init(source: DecodedSource, requested: InputEncoding?, path: String, displayName: String) throws(InputError) {
        self.source = source
        var prefix = [UInt8](repeating: 0, count: Self.sniffBytes)
        var filled = 0
        while filled < prefix.count {
            let count = try prefix.withUnsafeMutableBufferPointer { buffer throws(InputError) in
                try source.read(into: buffer.baseAddress! + filled, count: buffer.count - filled)
            }
            if count == 0 {
                sourceEnded = true
                break
            }
            filled += count
            if filled >= Self.sniffBytesWithALine && prefix[..<filled].contains(0x0A) { break }
        }
        prefix.removeLast(prefix.count - filled)
        isZeroBytes = filled == 0
        if let what = ContentSniffer.binaryKind(prefix, name: displayName) {
            throw InputError(
                kind: .notTabular, path: path,
                message:
                    "Input '\(displayName)' is \(what), not text; open it in the app that made it and export it as CSV (UTF-8), then pass that file."
            )
        }
        let (decoding, markLength) = ContentSniffer.decoding(of: prefix, requested: requested)
        if case .singleByte(let encoding) = decoding, ContentSniffer.isUTF8WithNonASCII(prefix) {
            throw InputError(
                kind: .notTabular, path: path,
                message:
                    "Input '\(displayName)' is UTF-8 text already (its first lines hold UTF-8 letters), not \(encoding.rawValue); drop --encoding \(encoding.rawValue) so its names are not garbled."
            )
        }
        self.decoding = decoding
        pending = Array(prefix.dropFirst(markLength))
        if decoding != .utf8 { transcoder = Transcoder(decoding: decoding) }
    }

    /// Reads at most `count` bytes of UTF-8; 0 means end of the stream.
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) throws(InputError) -> Int {
        guard let transcoder else {
            if pendingOffset < pending.count {
                let taken = min(count, pending.count - pendingOffset)
                for index in 0..<taken { buffer[index] = pending[pendingOffset + index] }
                pendingOffset += taken
                return taken
            }
            return sourceEnded ? 0 : try source.read(into: buffer, count: count)
        }
        while transcoder.outputAvailable == 0 {
            if pendingOffset < pending.count {
                pendingOffset += transcoder.takeInput(pending[pendingOffset...])
            } else if !sourceEnded {
                let got = try transcoder.fillInput { (space, room) throws(InputError) in
                    try source.read(into: space, count: room)
                }
                if got == 0 { sourceEnded = true }
            }
            let exhausted = sourceEnded && pendingOffset == pending.count
            transcoder.transcode(atEnd: exhausted)
            if transcoder.outputAvailable == 0 && exhausted { return 0 }
        }
        return transcoder.takeOutput(into: buffer, count: count)
    }

    func close() { source.close() }
}

/// UTF-16 or a single-byte encoding to UTF-8, through two fixed buffers.
private final class Transcoder {
    private let decoding: TextSource.Decoding
    private static let inputCapacity = 64 * 1024
    private let input = UnsafeMutablePointer<UInt8>.allocate(capacity: inputCapacity)
    private var inputStart = 0
    private var inputEnd = 0
    // Each input byte makes at most 3 output bytes (a single-byte € is 3; UTF-16 makes 3 of 2).
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: 3 * inputCapacity)
    private var outputStart = 0
    private var outputEnd = 0

    init(decoding: TextSource.Decoding) {
        self.decoding = decoding
    }

    deinit {
        input.deallocate()
        output.deallocate()
    }

    var outputAvailable: Int { outputEnd - outputStart }

    private func compactInput() {
        guard inputStart > 0 else { return }
        let kept = inputEnd - inputStart
        if kept > 0 { memmove(input, input + inputStart, kept) }
        inputStart = 0
        inputEnd = kept
    }

    /// Copies from `bytes` as much as fits; returns how many bytes were taken.
    func takeInput(_ bytes: ArraySlice<UInt8>) -> Int {
        compactInput()
        let taken = min(bytes.count, Self.inputCapacity - inputEnd)
        var index = bytes.startIndex
        for offset in 0..<taken {
            input[inputEnd + offset] = bytes[index]
            index += 1
        }
        inputEnd += taken
        return taken
    }

    /// Reads into the free input space; returns what `read` returned.
    func fillInput(
        _ read: (UnsafeMutablePointer<UInt8>, Int) throws(InputError) -> Int
    ) throws(InputError) -> Int {
        compactInput()
        let got = try read(input + inputEnd, Self.inputCapacity - inputEnd)
        inputEnd += got
        return got
    }

    func takeOutput(into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int {
        let taken = min(count, outputAvailable)
        buffer.update(from: output + outputStart, count: taken)
        outputStart += taken
        return taken
    }

    /// Converts every complete unit of input; `atEnd` also flushes an incomplete one as 0xFF.
    func transcode(atEnd: Bool) {
        if outputStart == outputEnd {
            outputStart = 0
            outputEnd = 0
        }
        // The output buffer is emptied before each call, and holds 3 bytes per input byte.
        var written = outputEnd
        var index = inputStart
        let end = inputEnd
        func emit(_ scalar: UInt32) {
            switch scalar {
            case 0..<0x80:
                output[written] = UInt8(scalar)
                written += 1
            case 0x80..<0x800:
                output[written] = UInt8(0xC0 | scalar >> 6)
                output[written + 1] = UInt8(0x80 | scalar & 0x3F)
                written += 2
            case 0x800..<0x10000:
                output[written] = UInt8(0xE0 | scalar >> 12)
                output[written + 1] = UInt8(0x80 | (scalar >> 6) & 0x3F)
                output[written + 2] = UInt8(0x80 | scalar & 0x3F)
                written += 3
            default:
                output[written] = UInt8(0xF0 | scalar >> 18)
                output[written + 1] = UInt8(0x80 | (scalar >> 12) & 0x3F)
                output[written + 2] = UInt8(0x80 | (scalar >> 6) & 0x3F)
                output[written + 3] = UInt8(0x80 | scalar & 0x3F)
                written += 4
            }
        }
        func invalid() {
            output[written] = 0xFF
            written += 1
        }
        switch decoding {
        case .utf8:
            break
        case .singleByte(let encoding):
            let table = encoding == .windows1252 ? Self.windows1252High : nil
            while index < end {
                let byte = input[index]
                if byte >= 0x80 && byte < 0xA0, let table {
                    emit(UInt32(table[Int(byte - 0x80)]))
                } else {
                    emit(UInt32(byte))
                }
                index += 1
            }
        case .utf16(let bigEndian):
            func unit(at position: Int) -> UInt32 {
                let first = UInt32(input[position])
                let second = UInt32(input[position + 1])
                return bigEndian ? first << 8 | second : second << 8 | first
            }
            while end - index >= 2 {
                let code = unit(at: index)
                if code >= 0xD800 && code < 0xDC00 {
                    guard end - index >= 4 else {
                        if atEnd {
                            invalid()
                            index += 2
                            continue
                        }
                        break
                    }
                    let low = unit(at: index + 2)
                    if low >= 0xDC00 && low < 0xE000 {
                        emit(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                        index += 4
                    } else {
                        invalid()
                        index += 2
                    }
                } else if code >= 0xDC00 && code < 0xE000 {
                    invalid()
                    index += 2
                } else {
                    emit(code)
                    index += 2
                }
            }
            if atEnd && index < end {
                invalid()  // an odd last byte
                index = end
            }
        }
        inputStart = index
        outputEnd = written
    }

    /// Windows-1252's 0x80–0x9F as the WHATWG Encoding Standard maps them (the five bytes it
    /// leaves undefined map to the C1 control of the same value).
    static let windows1252High: [UInt16] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152,
        0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122,
        0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]
}

/// What the first bytes of an input say about it.
enum ContentSniffer {
    /// A description of a binary format (for "Input 'x' is …, not text"), or nil for text.
    static func binaryKind(_ prefix: [UInt8], name: String) -> String? {
        func starts(_ signature: [UInt8]) -> Bool { prefix.starts(with: signature) }
        let lowerName = name.lowercased()
        if starts([0x50, 0x4B, 0x03, 0x04]) || starts([0x50, 0x4B, 0x05, 0x06]) {
            if lowerName.hasSuffix(".xlsx") || lowerName.hasSuffix(".xlsm") { return "an Excel workbook (.xlsx)" }
            if lowerName.hasSuffix(".numbers") { return "a Numbers document" }
            if lowerName.hasSuffix(".ods") { return "an OpenDocument spreadsheet (.ods)" }
            return "a ZIP archive (as .xlsx, Numbers and .ods spreadsheets are)"
        }
        if starts([0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
            return "an old-style Office document (such as an Excel .xls workbook)"
        }
        if starts(Array("%PDF-".utf8)) { return "a PDF document" }
        if starts(Array("SQLite format 3".utf8) + [0]) { return "an SQLite database (a journal?)" }
        if starts([0x7F, 0x45, 0x4C, 0x46]) { return "a program (ELF)" }
        if starts([0x89, 0x50, 0x4E, 0x47]) || starts([0xFF, 0xD8, 0xFF]) || starts(Array("GIF8".utf8)) {
            return "an image"
        }
        if starts([0x42, 0x5A, 0x68]) && prefix.count >= 10 && (0x31...0x39).contains(prefix[3])
            && Array(prefix[4..<10]) == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
        {
            return "compressed with bzip2 (only gzip is read directly; decompress it first)"
        }
        if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) {
            return "compressed with xz (only gzip is read directly; decompress it first)"
        }
        if starts([0x28, 0xB5, 0x2F, 0xFD]) {
            return "compressed with zstd (only gzip is read directly; decompress it first)"
        }
        if starts([0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) { return "a 7-Zip archive" }
        if starts([0xFF, 0xFE, 0x00, 0x00]) || starts([0x00, 0x00, 0xFE, 0xFF]) { return "UTF-32 text" }
        return nil
    }

    /// The encoding the prefix shows (a byte-order mark wins), and the mark's length.
    static func decoding(of prefix: [UInt8], requested: InputEncoding?) -> (TextSource.Decoding, Int) {
        if prefix.starts(with: [0xEF, 0xBB, 0xBF]) { return (.utf8, 3) }
        if prefix.starts(with: [0xFF, 0xFE]) { return (.utf16(bigEndian: false), 2) }
        if prefix.starts(with: [0xFE, 0xFF]) { return (.utf16(bigEndian: true), 2) }
        switch requested {
        case .windows1252, .latin1:
            return (.singleByte(requested!), 0)
        case .utf8:
            return (.utf8, 0)
        case .utf16, nil:
            // Text in UTF-16 without a mark: every other byte of ASCII letters is zero.
            if prefix.count >= 4 {
                if prefix[0] != 0 && prefix[1] == 0 && prefix[2] != 0 && prefix[3] == 0 {
                    return (.utf16(bigEndian: false), 0)
                }
                if prefix[0] == 0 && prefix[1] != 0 && prefix[2] == 0 && prefix[3] != 0 {
                    return (.utf16(bigEndian: true), 0)
                }
            }
            return requested == .utf16 ? (.utf16(bigEndian: false), 0) : (.utf8, 0)
        }
    }

    /// Whether the complete lines of the prefix hold non-ASCII bytes that are all valid UTF-8.
    static func isUTF8WithNonASCII(_ prefix: [UInt8]) -> Bool {
        guard let lastLineEnd = prefix.lastIndex(where: { $0 == ASCII.lineFeed || $0 == ASCII.carriageReturn })
        else { return false }
        let lines = prefix[..<lastLineEnd]
        guard lines.contains(where: { $0 >= 0x80 }) else { return false }
        return String(validating: lines, as: UTF8.self) != nil
    }
}
