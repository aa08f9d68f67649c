import BotsiBasics
import Testing

@Suite struct EditDistanceTests {
    @Test func swapsAndCaseCostWhatTheyShould() {
        #expect(Basics.editDistance("kitten", "sitting") == 3)
        #expect(Basics.editDistance("jbo", "job") == 1)
        #expect(Basics.editDistance("maxattempts", "maxAttempts") == 0)
        #expect(Basics.editDistance("MAXATTEMPTS", "maxAttempts") == 0)
        #expect(Basics.editDistance("", "abc") == 3)
        #expect(Basics.editDistance("abc", "") == 3)
        #expect(Basics.editDistance("ca", "abc") == 3)
    }

    @Test func onlyCloseNamesAreSuggested() {
        #expect(Basics.nearest(to: "rn", among: ["run", "runs"]) == "run")
        #expect(Basics.nearest(to: "stauts", among: ["runs", "status"]) == "status")
        #expect(Basics.nearest(to: "max_attempts", among: ["maxAttempts"]) == "maxAttempts")
        #expect(Basics.nearest(to: "xyz", among: ["run", "report"]) == nil)
        #expect(Basics.nearest(to: "timeot", among: ["timeout", "time"]) == "timeout")
        #expect(Basics.nearest(to: "zzzzzzzzzz", among: ["concurrency", "inputs"]) == nil)
        // One edit per three characters typed: seven allow two, and "form" is three away.
        #expect(Basics.nearest(to: "formatx", among: ["form"]) == nil)
        #expect(Basics.nearest(to: "formatx", among: ["format"]) == "format")
    }

    @Test func aTieGoesToTheNameListedFirst() {
        #expect(Basics.nearest(to: "ab", among: ["abc", "abd"]) == "abc")
        #expect(Basics.nearest(to: "ab", among: ["abd", "abc"]) == "abd")
    }
}
