import Testing

@testable import BotsiJournal

@Suite struct UpgradeSpaceTests {
    /// What an upgrade needs, worked by hand for 4 KiB pages, 10,000 pages written into a file of
    /// 12,000 that now holds 40,000,000 bytes: its log (a 32-byte header and a frame of the page and
    /// 24 bytes for each page written, the free list's 11 trunk pages and 16 spare), the log's
    /// index (32 KiB for every 4,096 frames begun), the file's growth when the log is copied back,
    /// and 1 MiB of slack.
    @Test func theRoomAnUpgradeNeedsIsItsLogItsIndexItsGrowthAndTheSlack() {
        let frames: Int64 = 10_000 + 12_000 / 1_022 + 16
        let log = 32 + frames * (4_096 + 24)
        let index: Int64 = 3 * 32_768
        let growth: Int64 = 12_000 * 4_096 - 40_000_000
        #expect(frames == 10_027 && log == 41_311_272 && growth == 9_152_000)
        #expect(
            UpgradeSpace.needed(pageSize: 4_096, livePages: 10_000, finalPages: 12_000, fileBytes: 40_000_000)
                == log + index + growth + 1_048_576)
        // A file already as large as the result does not grow.
        #expect(
            UpgradeSpace.needed(pageSize: 4_096, livePages: 10_000, finalPages: 12_000, fileBytes: 60_000_000)
                == log + index + 1_048_576)
    }

    /// Messages say what is needed rounded up and what is free rounded down: never "needs 12 MB,
    /// 12 MB are free" for a refusal.
    @Test func megabytesRoundWhatIsNeededUpAndWhatIsFreeDown() {
        let justOver: Int64 = (12 << 20) + 1
        #expect(UpgradeSpace.megabytes(justOver, roundingUp: true) == 13)
        #expect(UpgradeSpace.megabytes(justOver, roundingUp: false) == 12)
        #expect(UpgradeSpace.megabytes(12 << 20, roundingUp: true) == 12)
    }
}
