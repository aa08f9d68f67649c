/// ASCII-only case folding, for names that are ASCII by contract (column and header names, HTTP
/// field names): `A`–`Z` become `a`–`z` and every other byte, non-ASCII ones included, stays as it is,
/// so folding never depends on the locale or changes a byte count.
public enum ASCIICase {
    @inline(__always)
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
    }

    public static func lowercased(_ text: String) -> String {
        String(decoding: text.utf8.map(lowercased), as: UTF8.self)
    }
}
