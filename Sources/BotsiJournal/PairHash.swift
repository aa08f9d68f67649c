extension Journal {
    /// The 64-bit hash stored with each pair (`items.pair_hash`, FNV-1a over the profile id's
    /// UTF-8, a zero byte and the transaction id's): admission matches the rows a lookup by
    /// transaction finds by it before comparing the texts, so two pairs of one hash stay apart.
    public static func pairHash(profileId: String, originalTransactionId: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        // Over the contiguous UTF-8 itself: iterating `String.utf8` cost a rerun ~1,700
        // instructions a row, a tenth of the run's own thread.
        var profileId = profileId
        var originalTransactionId = originalTransactionId
        profileId.withUTF8 { hash = fnv1a(hash, $0) }
        hash = (hash ^ 0) &* 0x100_0000_01b3
        originalTransactionId.withUTF8 { hash = fnv1a(hash, $0) }
        return Int64(bitPattern: hash)
    }

    /// FNV-1a over `bytes`, from `start`: the step of the journal's stored hashes (pairs, snapshots).
    static func fnv1a(_ start: UInt64, _ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash = start
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
