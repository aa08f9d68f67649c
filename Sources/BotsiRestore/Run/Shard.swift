/// Which of N machines handles a profile: FNV-1a (64-bit) of the profileId's UTF-8 bytes, modulo
/// N. Stable across versions and platforms, so every row of one profile lands on one shard.
public func shardIndex(profileId: String, shardCount: Int) -> Int {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in profileId.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    return Int(hash % UInt64(shardCount))
}
