import BotsiTestSupport
import Testing

@testable import BotsiInput

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func knownVectors(message: String, digest: String) {
        #expect(SHA256.hex(of: Array(message.utf8)) == digest)
    }

    @Test func aMillionAs() {
        let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(of: bytes) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func piecesGiveTheSameDigestAsTheWhole() {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = SHA256.hex(of: bytes)
        for pieceSize in [1, 3, 63, 64, 65, 1000] {
            var hasher = SHA256()
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + pieceSize, bytes.count)
                hasher.update(bytes[offset..<end])
                offset = end
            }
            #expect(hasher.hex == whole, "pieces of \(pieceSize)")
            #expect(hasher.finalize().count == 32)
        }
    }

    @Test func finalizeLeavesTheHasherUsable() {
        var hasher = SHA256()
        hasher.update(Array("ab".utf8))
        #expect(hasher.hex == SHA256.hex(of: Array("ab".utf8)))
        hasher.update(Array("c".utf8))
        #expect(hasher.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(arguments: [55, 56, 57, 63, 64, 119, 120])
    func paddingBoundaries(length: Int) throws {
        let bytes = [UInt8](repeating: 0x61, count: length)
        let output = try runProgram("/bin/sh", ["-c", "head -c \(length) /dev/zero | tr '\\0' a | sha256sum"])
            .requireSuccess().output
        #expect(SHA256.hex(of: bytes) == String(output.prefix(64)))
    }
}
