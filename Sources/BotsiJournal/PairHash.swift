extension Journal {
    /// The 64-bit hash the journal finds a pair by (`items.pair_hash`, FNV-1a over the profile
    /// id's UTF-8, a zero byte and the transaction id's): an index of eight bytes a row instead of
    /// one of both texts. The texts are compared too, so two pairs of one hash stay apart.
    public static func pairHash(profileId: String, originalTransactionId: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in profileId.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        hash = (hash ^ 0) &* 0x100_0000_01b3
        for byte in originalTransactionId.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
