import BotsiAPI
import Foundation
import Testing

private let now = Date(timeIntervalSince1970: 1_795_000_000)

private func classify(_ status: Int, _ body: String, retryAfter: String? = nil) -> RestoreReply {
    classifyReply(
        httpStatus: status, body: Array(body.utf8), retryAfter: retryAfter.flatMap { parseRetryAfter($0, now: now) })
}

@Suite("classifyReply, one test per row of the outcome table")
struct ClassifyReplyTests {
    @Test func restoredKeepsStateAndAccessLevels() {
        let body = """
            {"ok": true, "data": {"profileId": "p1", "appUserId": "user-123", "state": "subscribed",
              "totalRevenueUsd": 49.99,
              "accessLevels": {"premium": {"isActive": true, "store": "app_store", "sourceProductId": "premium_annual",
                "expiresAt": "2027-10-07", "willRenew": true, "isLifetime": false, "id": 7, "createdDate": "2026-01-01"}},
              "subscriptions": {}, "nonSubscriptions": {}}}
            """
        let expected = ProfileSnapshot(
            profileId: "p1", state: "subscribed",
            accessLevels: [
                "premium": AccessLevelSnapshot(
                    isActive: true, expiresAt: "2027-10-07", willRenew: true, sourceProductId: "premium_annual")
            ])
        #expect(classify(200, body) == .restored(expected))
    }

    @Test func restoredToleratesUnknownFieldsNullsAndMissingFields() {
        let body = """
            {"ok": true, "extra": [1, 2, {"x": null}], "data": {"profileId": "p2", "state": null, "brandNew": {"a": 1},
              "accessLevels": {"gold": {"isActive": false, "expiresAt": null, "willRenew": null,
                "sourceProductId": null, "unknownField": "x"}, "odd": "not an object", "empty": {}},
              "subscriptions": null}}
            """
        let expected = ProfileSnapshot(
            profileId: "p2", state: nil,
            accessLevels: ["gold": AccessLevelSnapshot(isActive: false), "empty": AccessLevelSnapshot()])
        #expect(classify(200, body) == .restored(expected))
        #expect(classify(200, #"{"ok": true, "data": {}}"#) == .restored(ProfileSnapshot()))
    }

    @Test(arguments: [
        "{not json",
        "",
        "<html>ok</html>",
        #"{"ok": false, "data": {"profileId": "p"}}"#,
        #"{"ok": true}"#,
        #"{"ok": true, "data": null}"#,
        #"{"ok": true, "data": [1]}"#,
        #"["ok"]"#,
    ])
    func unreadable200IsRetryableInvalidResponse(body: String) {
        guard case .retryable(let code, let status, _, _) = classify(200, body) else {
            Issue.record("expected retryable for \(body)")
            return
        }
        #expect(code == "invalid_response")
        #expect(status == 200)
    }

    @Test func notFoundCodesAreBranchedOnCodeNotMessage() {
        #expect(
            classify(404, #"{"error": "Apple has no subscription", "code": "nothing_to_restore"}"#)
                == .nothingToRestore(message: "Apple has no subscription"))
        #expect(
            classify(404, #"{"error": "nothing to restore here", "code": "not_found"}"#)
                == .profileNotFound(message: "nothing to restore here"))
        // A 404 without Botsi's code is a wrong URL, not a missing Profile.
        guard case .failed("http_404", 404, _) = classify(404, "<html>Not Found</html>") else {
            Issue.record("a plain 404 page should be failed http_404")
            return
        }
    }

    @Test func badRequestRejectsTheRow() {
        #expect(
            classify(400, #"{"error": "profileId is empty", "code": "bad_request"}"#)
                == .rejected(code: "bad_request", message: "profileId is empty"))
    }

    @Test func noIOSSettingsStopsTheRun() {
        guard
            case .fatal(.iosSettingsMissing, 400, let message) = classify(
                400, #"{"error": "No ios settings found", "code": "bad_request"}"#)
        else {
            Issue.record("expected fatal ios_settings_missing")
            return
        }
        #expect(message.contains("App Store"))
        #expect(
            classify(400, #"{"error": "No ios settings found", "code": "bad_request"}"#).code == "ios_settings_missing")
    }

    @Test func unauthorizedAndForbiddenAreFatal() {
        guard case .fatal(.unauthorized, 401, let message) = classify(401, #"{"error": "x", "code": "unauthorized"}"#)
        else {
            Issue.record("expected fatal unauthorized")
            return
        }
        #expect(message.contains("Bearer"))
        #expect(message.contains("environment variable"))
        guard case .fatal(.forbidden, 403, _) = classify(403, "") else {
            Issue.record("expected fatal forbidden")
            return
        }
        #expect(classify(401, "").code == "unauthorized")
        #expect(classify(403, "<html/>").code == "forbidden")
    }

    @Test func requestTimeoutIsRetryable() {
        #expect(
            classify(408, "")
                == .retryable(code: "http_408", httpStatus: 408, retryAfter: nil, message: "The server answered 408."))
    }

    @Test(arguments: [409, 422])
    func otherClientErrorsFailWithTheReplyCode(status: Int) {
        #expect(
            classify(status, #"{"error": "conflict", "code": "some_code"}"#)
                == .failed(code: "some_code", httpStatus: status, message: "conflict"))
    }

    @Test func nonJSONClientErrorFailsWithHTTPStatusCode() {
        #expect(classify(418, "I'm a teapot") == .failed(code: "http_418", httpStatus: 418, message: nil))
    }

    @Test func tooManyRequestsCarriesRetryAfterSeconds() {
        #expect(
            classify(429, #"{"error": "slow down", "code": "rate_limited"}"#, retryAfter: "7")
                == .retryable(code: "rate_limited", httpStatus: 429, retryAfter: 7, message: "slow down"))
    }

    @Test func tooManyRequestsCarriesRetryAfterDate() {
        let inNinetySeconds = "Sat, 12 Nov 2026 08:00:00 GMT"
        let base = Date(timeIntervalSince1970: 1_794_470_310)  // 2026-11-12 07:58:30 UTC
        let reply = classifyReply(
            httpStatus: 429, body: [], retryAfter: parseRetryAfter(inNinetySeconds, now: base))
        #expect(
            reply == .retryable(code: "http_429", httpStatus: 429, retryAfter: 90, message: "The server answered 429."))
    }

    @Test func serverErrorsAreRetryableWithStatusCodeWhenBodyIsUnreadable() {
        #expect(classify(500, #"{"error": "boom", "code": "internal_error"}"#).code == "internal_error")
        #expect(classify(500, "").code == "http_500")
        #expect(classify(502, "<html><body>Bad Gateway</body></html>").code == "http_502")
        let unavailable = classify(503, "", retryAfter: "120")
        #expect(
            unavailable
                == .retryable(code: "http_503", httpStatus: 503, retryAfter: 120, message: "The server answered 503."))
    }

    @Test func redirectsAreFailedNotFollowed() {
        guard case .failed("http_302", 302, _) = classify(302, "") else {
            Issue.record("expected failed http_302")
            return
        }
    }

    @Test func codeThatIsNotATokenFallsBackToStatus() {
        #expect(classify(422, #"{"error": "x", "code": ""}"#).code == "http_422")
        #expect(classify(422, #"{"error": "x", "code": 5}"#).code == "http_422")
    }

    /// Each class of status starts and ends where HTTP's does: any 2xx with a profile is a restore,
    /// 3xx a redirect not followed, 5xx retried, and a status outside them unreadable.
    @Test(arguments: [
        (201, "restored"), (299, "restored"), (300, "http_300"), (399, "http_399"), (500, "http_500"),
        (599, "http_599"), (600, "invalid_response"), (199, "invalid_response"),
    ])
    func statusClassesEndWhereHTTPsDo(status: Int, code: String) {
        let reply = classify(status, #"{"ok": true, "data": {"state": "s"}}"#)
        #expect((reply.code ?? "restored") == code, "\(status): \(reply)")
    }

    /// A server's message is printed on one line whatever it holds: a 401's and a 5xx's too.
    @Test func aServersMessageIsOneLine() {
        let body = #"{"error": "first line\nsecond line", "code": "boom"}"#
        #expect(classify(401, body).message?.contains("\n") == false)
        #expect(classify(401, body).message?.contains("first line") == true)
        #expect(classify(503, body).message?.contains("\n") == false)
        #expect(classify(503, body).code == "boom")
    }

    /// A 400 whose code is not `bad_request` is the server's failure with its own code, not a
    /// row rejected as bad input.
    @Test func a400WithAnotherCodeIsAFailureWithThatCode() {
        #expect(
            classify(400, #"{"error": "nope", "code": "quota_exceeded"}"#)
                == .failed(code: "quota_exceeded", httpStatus: 400, message: "nope"))
    }

    /// Botsi's iOS-settings message is recognised however it is cased, spaced or ended.
    @Test(arguments: ["No ios settings found", "  no IOS settings found.\n", "NO IOS SETTINGS FOUND."])
    func theIOSSettingsMessageIsMatchedLeniently(message: String) {
        let body = try! JSONSerialization.data(withJSONObject: ["error": message])
        guard case .fatal(let reason, _, _) = classifyReply(httpStatus: 400, body: Array(body), retryAfter: nil) else {
            Issue.record("expected fatal for \(message.debugDescription)")
            return
        }
        #expect(reason == .iosSettingsMissing)
        #expect(classify(400, #"{"error": "No ios settings found.."}"#).code == "http_400", "two periods: another text")
    }

    /// An error body's text is `error`, else `message`; a code alone is kept; a code is used only
    /// when it is a plain token of at most 64 letters, digits, `_`, `-` and `.`.
    @Test func anErrorBodysMessageAndCode() {
        #expect(classify(422, #"{"message": "from message"}"#).message == "from message")
        #expect(classify(422, #"{"error": "e", "message": "m"}"#).message == "e")
        #expect(classify(422, #"{"code": "only_code"}"#).code == "only_code")
        for plain in ["Upper_Case-9.x", String(repeating: "a", count: 64), "0123456789"] {
            #expect(classify(422, #"{"code": "\#(plain)"}"#).code == plain)
        }
        for odd in ["with space", String(repeating: "a", count: 65), "semi;colon", "é"] {
            #expect(classify(422, #"{"error": "e", "code": "\#(odd)"}"#).code == "http_422", "\(odd)")
        }
    }
}
