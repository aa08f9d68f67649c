/// A small streaming SHA-256 (FIPS 180-4), so that a run can record which input it read
/// without pulling in a crypto library. Value semantics: `finalize()` works on a copy, so a
/// digest of "the bytes so far" can be taken while hashing goes on.
public struct SHA256: Sendable {
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of an incomplete block, waiting for the rest.
    private var pending: [UInt8] = []
    private var totalLength: UInt64 = 0

    public init() {
        pending.reserveCapacity(64)
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, let base = bytes.baseAddress else { return }
        totalLength &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let taken = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: taken))
            offset = taken
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBytes { compress(blocks: $0.baseAddress!, count: 1) }
            pending.removeAll(keepingCapacity: true)
        }
        let wholeBlocks = (bytes.count - offset) / 64
        if wholeBlocks > 0 {
            compress(blocks: base + offset, count: wholeBlocks)
            offset += wholeBlocks * 64
        }
        if offset < bytes.count {
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset))
        }
    }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The digest of everything passed to `update` so far; the hasher itself is unchanged.
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = totalLength &* 8
        var padding: [UInt8] = [0x80]
        let afterMarker = Int(totalLength % 64) + 1  // 1...64: the marker may fill the block
        let zeros = afterMarker <= 56 ? 56 - afterMarker : 120 - afterMarker
        padding.append(contentsOf: repeatElement(0, count: zeros))
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        copy.update(padding)
        precondition(copy.pending.isEmpty, "SHA-256 padding must end on a block boundary")
        let words = [
            copy.state.0, copy.state.1, copy.state.2, copy.state.3, copy.state.4, copy.state.5, copy.state.6,
            copy.state.7,
        ]
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in words {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// The digest so far in lowercase hexadecimal.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in finalize() {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Convenience for one-shot hashing.
    public static func hex(of bytes: some Sequence<UInt8>) -> String {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.hex
    }

    private mutating func compress(blocks: UnsafeRawPointer, count: Int) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        Self.roundConstants.withUnsafeBufferPointer { constants in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
                for blockIndex in 0..<count {
                    let block = blocks + blockIndex * 64
                    for index in 0..<16 {
                        let word = block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self)
                        schedule[index] = UInt32(bigEndian: word)
                    }
                    for index in 16..<64 {
                        let w15 = schedule[index - 15]
                        let w2 = schedule[index - 2]
                        let sigma0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 >> 3)
                        let sigma1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 >> 10)
                        schedule[index] = schedule[index - 16] &+ sigma0 &+ schedule[index - 7] &+ sigma1
                    }
                    var (a, b, c, d, e, f, g, h) = (h0, h1, h2, h3, h4, h5, h6, h7)
                    for index in 0..<64 {
                        let bigSigma1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choose = (e & f) ^ (~e & g)
                        let temp1 = h &+ bigSigma1 &+ choose &+ constants[index] &+ schedule[index]
                        let bigSigma0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = bigSigma0 &+ majority
                        h = g
                        g = f
                        f = e
                        e = d &+ temp1
                        d = c
                        c = b
                        b = a
                        a = temp1 &+ temp2
                    }
                    h0 &+= a
                    h1 &+= b
                    h2 &+= c
                    h3 &+= d
                    h4 &+= e
                    h5 &+= f
                    h6 &+= g
                    h7 &+= h
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self &>> count) | (self &<< (32 &- count))
    }
}
