import BotsiAPI
import Foundation
import Testing

@Suite struct RateLimitHeaderTests {
    let now = Date(timeIntervalSince1970: 1_767_225_600)

    func parse(_ fields: [(String, String)]) -> RateLimitInfo? {
        var parser = RateLimitHeaderParser()
        for (name, value) in fields { parser.add(name: name, value: value, now: now) }
        return parser.result
    }

    @Test func theIETFDraftsPolicyAndRemaining() {
        let info = parse([("RateLimit-Policy", #""default";q=100;w=1"#), ("RateLimit", #""default";r=37;t=1"#)])
        #expect(info == RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 37, resetSeconds: 1))
    }

    @Test func ofSeveralPoliciesTheMostRestrictiveRateWins() {
        let info = parse([("ratelimit-policy", #""burst";q=100;w=1, "hour";q=180000;w=3600"#)])
        #expect(info?.quota == 180_000)
        #expect(info?.windowSeconds == 3600)
    }

    @Test func theEarlierDraftsFields() {
        let info = parse([
            ("RateLimit-Limit", "100"), ("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1"),
            ("RateLimit-Policy", "100;w=1"),
        ])
        #expect(info == RateLimitInfo(quota: 100, windowSeconds: 1, remaining: 0, resetSeconds: 1))
        #expect(parse([("RateLimit-Limit", "10, 10;window=1, 50;window=60")])?.quota == 10)
        #expect(parse([("RateLimit-Policy", "10;window=5")])?.windowSeconds == 5)
    }

    @Test func theVendorFieldsWithAResetAsAUnixTime() {
        let info = parse([
            ("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "4999"), ("X-RateLimit-Reset", "1767229200"),
        ])
        #expect(info == RateLimitInfo(quota: 5000, windowSeconds: nil, remaining: 4999, resetSeconds: 3600))
        #expect(parse([("X-RateLimit-Reset", "1767225000")])?.resetSeconds == 0, "a past reset is now")
        #expect(parse([("X-RateLimit-Reset", "30")])?.resetSeconds == 30, "a small number is seconds from now")
    }

    @Test func malformedValuesAreLeftOutNotGuessed() {
        for value in ["", "-1", "abc", "1e3", "12 34", "0x10", "１００", String(repeating: "9", count: 80)] {
            #expect(parse([("RateLimit-Limit", value), ("X-RateLimit-Remaining", value)]) == nil, "\(value)")
        }
        #expect(parse([("RateLimit-Policy", #""default";q=0;w=1"#)]) == nil, "a zero quota states no rate")
        #expect(parse([("RateLimit-Policy", #""default";q=10;w=0"#)]) == nil, "nor does a zero window")
        #expect(parse([("RateLimit", "garbage;;;=")]) == nil)
        #expect(parse([("Retry-After", "5"), ("X-Request-Id", "7")]) == nil, "other fields are not read")
    }

    @Test func absurdValuesAreCapped() {
        let info = parse([
            ("RateLimit-Limit", "99999999999999999999"), ("RateLimit-Reset", "99999999999"),
        ])
        #expect(info?.quota == RateLimitInfo.largestQuota)
        #expect(parse([("X-RateLimit-Remaining", String(repeating: "9", count: 40))])?.remaining == 100_000_000)
        #expect(info?.resetSeconds == RateLimitInfo.longestWindow)
        #expect(parse([("RateLimit-Policy", "5;w=99999999999")])?.windowSeconds == RateLimitInfo.longestWindow)
        #expect(parse([("X-RateLimit-Reset", "99999999999")])?.resetSeconds == RateLimitInfo.longestWindow)
        #expect(parse([("RateLimit", #""default";r=5;t=99999999999"#)])?.resetSeconds == RateLimitInfo.longestWindow)
    }

    /// Only the vendor's reset is a UNIX time: the drafts' `RateLimit-Reset` is seconds from now
    /// however large, so one near the clock's own count is not read as "in a moment".
    @Test func onlyTheVendorsResetIsAUnixTime() {
        let nearNow = String(Int(now.timeIntervalSince1970) + 10)
        #expect(parse([("X-RateLimit-Reset", nearNow)])?.resetSeconds == 10)
        #expect(parse([("RateLimit-Reset", nearNow)])?.resetSeconds == RateLimitInfo.longestWindow)
    }

    /// A policy states the quota; a limit field after it (a gateway adding its own) does not
    /// overwrite it, and of several limit fields the first stands.
    @Test func theFirstQuotaStatedStands() {
        let info = parse([("RateLimit-Policy", #""default";q=100;w=1"#), ("X-RateLimit-Limit", "500")])
        #expect(info?.quota == 100)
        #expect(parse([("RateLimit-Limit", "20"), ("X-RateLimit-Limit", "500")])?.quota == 20)
    }

    /// The structured fields' small print: parameter names in any case, a bare number only as an
    /// item's first piece, and of several `RateLimit` items the first.
    @Test func structuredFieldsAreReadAsWritten() {
        #expect(parse([("RateLimit-Policy", "100;W=10")])?.windowSeconds == 10)
        let trailing = parse([("RateLimit-Policy", "100;w=10;7")])
        #expect(trailing?.quota == 100)
        #expect(parse([("RateLimit", #""a";r=5;t=1, "b";r=50;t=60"#)])?.remaining == 5)
    }
}
