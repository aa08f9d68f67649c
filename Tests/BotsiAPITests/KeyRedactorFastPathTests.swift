import Testing

@testable import BotsiAPI

/// The redactor first looks for a run of key bytes as long as an echo and scans for echoes only
/// where it finds one: echoes placed where that pre-check could wrongly give up.
@Suite struct KeyRedactorFastPathTests {
    static let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    let redactor = KeyRedactor(key: Self.key)

    @Test func echoesAtEitherEndOrFillingTheTextAreFound() {
        let echo = String(Self.key.dropFirst(5).prefix(12))
        #expect(redactor.clean(echo) == "[redacted]")
        #expect(redactor.clean("\(echo) at the start") == "[redacted] at the start")
        #expect(redactor.clean("at the end: \(echo)") == "at the end: [redacted]")
        #expect(redactor.clean("!\(echo.uppercased())!") == "![redacted]!")
        #expect(redactor.redact(String(echo.dropLast())) == nil)
    }

    /// A run of key bytes that is long but no echo, then an echo: the scan must not stop at the
    /// first long run.
    @Test func anEchoAfterALongRunThatIsNoEcho() {
        let notAnEcho = String(repeating: "s", count: 40)
        let echo = String(Self.key.suffix(12))
        #expect(redactor.redact(notAnEcho) == nil)
        #expect(redactor.clean("\(notAnEcho) \(echo)") == "\(notAnEcho) [redacted]")
        #expect(redactor.clean("\(notAnEcho)\(echo)") == "\(notAnEcho)[redacted]")
    }

    /// An echo is a contiguous run of the key: one broken by a byte the key does not hold is two
    /// short runs, not an echo (and no part of the text around it is cut out).
    @Test func aRunBrokenByAnotherByteIsNoEcho() {
        let echo = Self.key.dropFirst(5).prefix(12)
        // After a long run of key bytes that is no echo, so that the full scan looks at it.
        let longRun = String(repeating: "s", count: 20)
        let broken = "\(longRun) \(echo.prefix(6)) \(echo.suffix(6))"
        #expect(redactor.redact(broken) == nil, "\(broken)")
        #expect(redactor.redact("\(longRun) \(echo.prefix(6))\u{1F600}\(echo.suffix(6))") == nil)
    }

    /// Two echoes that touch are one `[redacted]`: how many pieces of the key a server's text held
    /// is not for the log to tell.
    @Test func echoesThatTouchAreRedactedAsOne() {
        let first = Self.key.prefix(12)
        let second = Self.key.suffix(12)
        #expect(redactor.clean("<\(first)\(second)>") == "<[redacted]>")
    }

    @Test func anEchoInNonASCIITextIsFound() {
        let echo = String(Self.key.prefix(12))
        #expect(redactor.clean("clé «\(echo)» 😀") == "clé «[redacted]» 😀")
    }

    /// Each text of a profile snapshot on its own: the check that skips a clean snapshot must look
    /// at every one of them.
    @Test(arguments: ["profileId", "state", "name", "expiresAt", "sourceProductId"])
    func anEchoInAnyOneSnapshotTextIsScrubbed(field: String) {
        let echo = String(Self.key.dropFirst(8).prefix(13))
        func text(_ name: String, _ plain: String) -> String { field == name ? "x\(echo)" : plain }
        let level = AccessLevelSnapshot(
            isActive: true, expiresAt: text("expiresAt", "2027-01-01T00:00:00.000Z"), willRenew: true,
            sourceProductId: text("sourceProductId", "com.example.premium"))
        let snapshot = ProfileSnapshot(
            profileId: text("profileId", "p-1"), state: text("state", "subscribed"),
            accessLevels: [text("name", "premium"): level])
        guard case .restored(let scrubbed) = redactor.scrub(.restored(snapshot)) else {
            Issue.record("a 200 stays a 200")
            return
        }
        let texts =
            [scrubbed.profileId, scrubbed.state] + scrubbed.accessLevels.keys.map { $0 }
            + scrubbed.accessLevels.values.flatMap { [$0.expiresAt, $0.sourceProductId] }
        #expect(texts.contains("x[redacted]"))
        #expect(!texts.contains { $0?.contains(echo) ?? false })
    }
}
