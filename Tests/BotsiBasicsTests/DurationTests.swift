import BotsiBasics
import Testing

@Suite struct DurationTests {
    @Test func showsTenthsBelowAMinuteAndWholeUnitsAbove() {
        #expect(Basics.duration(0) == "0.0s")
        #expect(Basics.duration(4.24) == "4.2s")
        #expect(Basics.duration(59.94) == "59.9s")
        #expect(Basics.duration(60) == "1m00s")
        #expect(Basics.duration(187.9) == "3m07s")
        #expect(Basics.duration(69) == "1m09s")
        #expect(Basics.duration(610) == "10m10s")
        #expect(Basics.duration(3599) == "59m59s")
        #expect(Basics.duration(3600) == "1h00m")
        #expect(Basics.duration(7500) == "2h05m")
    }

    @Test func anEstimateShowsWholeSeconds() {
        #expect(Basics.duration(4.9, wholeSeconds: true) == "4s")
        #expect(Basics.duration(187.9, wholeSeconds: true) == "3m07s")
    }

    @Test func whatIsNotADurationIsAQuestionMarkNotATrap() {
        #expect(Basics.duration(-1) == "?")
        #expect(Basics.duration(.nan) == "?")
        #expect(Basics.duration(.infinity, wholeSeconds: true) == "?")
        #expect(Basics.duration(1e300).hasSuffix("m"))
    }

    @Test func aStatedNumberOfSecondsShowsAsGiven() {
        #expect(Basics.seconds(0) == "0 s")
        #expect(Basics.seconds(12) == "12 s")
        #expect(Basics.seconds(120) == "120 s")
        #expect(Basics.seconds(999_999_999) == "999999999 s")
        #expect(Basics.seconds(0.05) == "0.05 s")
        #expect(Basics.seconds(1.5) == "1.5 s")
        #expect(Basics.seconds(1.0 / 3) == "0.333333 s")
        #expect(Basics.seconds(1_234_567.5) == "1.23457e+06 s")
        #expect(Basics.seconds(1e9) == "1e+09 s")
        #expect(Basics.seconds(2_302_420_000) == "2.30242e+09 s")
    }

    /// The largest unit that holds it whole, as an option would be typed again; under a second
    /// in milliseconds, and nothing at all as `0s`.
    @Test func aDurationOptionReadsAsItWasTyped() {
        #expect(Basics.durationOption(0) == "0s")
        #expect(Basics.durationOption(0.5) == "500ms")
        #expect(Basics.durationOption(30) == "30s")
        #expect(Basics.durationOption(90 * 60) == "90m")
        #expect(Basics.durationOption(7 * 86400) == "7d")
        #expect(Basics.durationOption(36 * 3600) == "36h")
    }

    @Test func aCountTakesItsNounInTheNumberItTakes() {
        #expect(Basics.count(0, "retry", "retries") == "0 retries")
        #expect(Basics.count(1, "retry", "retries") == "1 retry")
        #expect(Basics.count(2, "retry", "retries") == "2 retries")
    }

    @Test func secondsThatAreNotFiniteShowAsCWritesThemInsteadOfTrapping() {
        #expect(Basics.seconds(.infinity) == "inf s")
        #expect(Basics.seconds(-.infinity) == "-inf s")
        #expect(Basics.seconds(.nan) == "nan s")
    }
}
