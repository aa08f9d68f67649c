import BotsiAPI
import Foundation
import Testing

@Suite struct RetryAfterTests {
    // 2026-11-12 07:58:30 UTC
    let now = Date(timeIntervalSince1970: 1_794_470_310)

    @Test func deltaSeconds() {
        #expect(parseRetryAfter("120", now: now) == 120)
        #expect(parseRetryAfter(" 0 ", now: now) == 0)
    }

    @Test func imfFixdate() {
        #expect(parseRetryAfter("Thu, 12 Nov 2026 08:00:00 GMT", now: now) == 90)
    }

    @Test func rfc850Date() {
        #expect(parseRetryAfter("Thursday, 12-Nov-26 08:00:00 GMT", now: now) == 90)
    }

    @Test func asctimeDate() {
        #expect(parseRetryAfter("Thu Nov 12 08:00:00 2026", now: now) == 90)
        #expect(parseRetryAfter("Sun Nov  6 08:49:37 1994", now: now) == 0)
    }

    @Test func pastDateMeansNow() {
        #expect(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 0)
    }

    /// Apple's App Store Server API states `Retry-After` as a UNIX time in milliseconds; read as
    /// seconds it stalled a run until --retry-after-cap.
    @Test func aNumberOfTenToTheTwelveOrMoreIsAUnixTimeInMilliseconds() {
        #expect(parseRetryAfter("1794470400000", now: now) == 90)
        #expect(parseRetryAfter("1794470310500", now: now) == 0.5)
        #expect(parseRetryAfter("1000000000000", now: now) == 0, "in the past: now")
    }

    @Test func aNumberOfTenToTheNineOrMoreIsAUnixTimeInSeconds() {
        #expect(parseRetryAfter("1794470400", now: now) == 90)
        #expect(parseRetryAfter("1000000000", now: now) == 0, "in the past: now")
    }

    @Test func aSmallerNumberIsDeltaSeconds() {
        #expect(parseRetryAfter("999999999", now: now) == 999_999_999)
    }

    /// libcurl's own date parser (`curl_getdate`) reads more than the three HTTP forms; what it
    /// reads, it reads right.
    @Test func otherDateFormsAreReadAsLibcurlReadsThem() {
        #expect(parseRetryAfter("Thu, 12 Nov 2026 00:00:00 PST", now: now) == 90)
        #expect(parseRetryAfter("12 Nov 2026 08:00:00 GMT", now: now) == 90)
    }

    @Test(arguments: [
        "", "soon", "-5", "1.5", "1e3", "Thu, 12 Nov 2026 25:00:00 GMT", "Thu, 12 Foo 2026 08:00:00 GMT",
        "99999999999999999999999",
    ])
    func unparseableGivesNil(value: String) {
        #expect(parseRetryAfter(value, now: now) == nil)
    }
}

@Suite struct RequestBodyTests {
    private func decoded(_ profileId: String, _ transactionId: String = "2000000261699248") throws -> [String: String] {
        let body = restoreRequestBody(profileId: profileId, originalTransactionId: transactionId)
        let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: String]
        return try #require(object)
    }

    @Test func plainBody() {
        let body = restoreRequestBody(profileId: "fff3c120", originalTransactionId: "2000000261699248")
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"profileId":"fff3c120","originalTransactionId":"2000000261699248"}"#)
    }

    @Test func quotesAndBackslashesAreEscaped() throws {
        let body = restoreRequestBody(profileId: #"a"b\c"#, originalTransactionId: "1")
        #expect(String(decoding: body, as: UTF8.self) == #"{"profileId":"a\"b\\c","originalTransactionId":"1"}"#)
        #expect(try decoded(#"a"b\c"#)["profileId"] == #"a"b\c"#)
    }

    @Test func controlCharactersAreEscaped() throws {
        let tricky = "line\nbreak\ttab\r\u{0}\u{1F}\u{7F}\u{8}\u{C}"
        let text = String(decoding: restoreRequestBody(profileId: tricky, originalTransactionId: "1"), as: UTF8.self)
        #expect(text.contains(#"line\nbreak\ttab\r\u0000\u001f\u007f\b\f"#))
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 })
        #expect(try decoded(tricky)["profileId"] == tricky)
    }

    @Test func unicodeRoundTrips() throws {
        let profile = "prøfile-日本-👩‍💻-\u{2028}"
        #expect(try decoded(profile)["profileId"] == profile)
        #expect(try decoded(profile)["originalTransactionId"] == "2000000261699248")
    }
}

@Suite struct BaseURLTests {
    @Test(arguments: [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.1.2.3/", "http://127.1.2.3"),
        ("HTTP://LOCALHOST:9000/api//", "http://localhost:9000/api"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("https://api.botsi.com", "https://api.botsi.com"),
        ("https://api.botsi.com/", "https://api.botsi.com"),
        ("https://Api.Botsi.com:443/prefix/", "https://api.botsi.com:443/prefix"),
    ])
    func accepted(input: String, normalized: String) throws {
        #expect(try validateBaseURL(input) == normalized)
    }

    @Test(arguments: [
        "http://api.botsi.com", "http://10.0.0.1:8080", "http://128.0.0.1", "http://localhost.evil.com",
        "http://127.0.0.1.nip.io", "http://[::2]", "http://localhost.", "http://localhost.:8080",
        "http://LOCALHOST.", "http://localhost.localdomain", "http://0x7f.0.0.1", "http://2130706433",
    ])
    func plainHTTPToRemoteHostIsRefused(input: String) {
        #expect {
            try validateBaseURL(input)
        } throws: { error in
            (error as? ClientError)?.message.contains("https") == true
        }
    }

    @Test(arguments: [
        "ftp://api.botsi.com", "api.botsi.com", "", "https://", "https://user:secret@api.botsi.com",
        "https://api.botsi.com?x=1", "https://api.botsi.com:99999", "file:///etc/passwd", "https://api botsi.com",
    ])
    func malformedOrOtherSchemesAreRefused(input: String) {
        #expect(throws: ClientError.self) { try validateBaseURL(input) }
    }

    /// The route is added to the base URL: given with it (or its version), every request went to
    /// `/v2/v2/…` and every row came back profile_not_found.
    @Test(arguments: [
        "http://127.0.0.1:8080/v2", "https://api.botsi.com/v2/",
        "https://api.botsi.com/V2/purchases/apple-store/restore",
        "https://gateway.example.com/botsi/v2/purchases",
    ])
    func aBaseURLThatHoldsTheRouteIsRefused(input: String) {
        #expect {
            try validateBaseURL(input)
        } throws: { error in
            (error as? ClientError)?.message.contains("give the API's root") == true
        }
    }

    @Test func userInfoIsNeverEchoed() {
        do {
            _ = try validateBaseURL("https://user:hunter2secret@api.botsi.com")
            Issue.record("user info should be refused")
        } catch {
            #expect(!error.message.contains("hunter2secret"))
        }
    }
}

@Suite struct ConfigurationTests {
    @Test func descriptionNeverShowsTheKey() {
        var configuration = ClientConfiguration(
            baseURL: "https://api.botsi.com", apiKey: "sk_live_abcdef123456", userAgent: "botsi-restore/1.0")
        configuration.proxy = .url("http://me:hunter2@proxy:3128")
        #expect(!configuration.description.contains("sk_live_abcdef123456"))
        #expect(!configuration.description.contains("hunter2"))
        #expect(!String(reflecting: ClientError("x")).contains("sk_live"))
    }

    @Test func clientRefusesBadSetupWithoutNamingTheKey() {
        var configuration = ClientConfiguration(
            baseURL: "http://example.com", apiKey: "sk_live_abcdef123456", userAgent: "botsi-restore/1.0")
        #expect { try RestoreClient(configuration: configuration) { _ in } } throws: { error in
            let message = (error as? ClientError)?.message ?? ""
            return message.contains("https") && !message.contains("sk_live")
        }
        configuration.baseURL = "https://api.botsi.com"
        configuration.apiKey = "sk_live\nInjected: header"
        #expect { try RestoreClient(configuration: configuration) { _ in } } throws: { error in
            let message = (error as? ClientError)?.message ?? ""
            return message.contains("line break") && !message.contains("sk_live")
        }
        configuration.apiKey = "sk_live_abcdef123456"
        configuration.caCertificatePath = "/nonexistent/ca.pem"
        #expect(throws: ClientError.self) { try RestoreClient(configuration: configuration) { _ in } }
    }
}
