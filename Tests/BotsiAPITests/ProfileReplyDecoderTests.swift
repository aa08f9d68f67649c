import BotsiAPI
import Foundation
import Testing

/// The hand-written 200 decoder, through the public classification.
@Suite struct ProfileReplyDecoderTests {
    private func classify(_ body: String) -> RestoreReply {
        classifyReply(httpStatus: 200, body: Array(body.utf8), retryAfter: nil)
    }

    @Test func keepsTheAuditFieldsAndSkipsEverythingElse() {
        let body = """
            { "ok" : true, "extra": [1, 2.5e3, {"deep": [null, false, "x\\"y"]}],
              "data": {"profileId": "p\\u00e9\\ud83d\\ude00", "appUserId": null, "totalRevenueUsd": -49.99,
                "state": "subscribed", "subscriptions": {"a": {"isActive": true}},
                "accessLevels": {"premium": {"id": 7, "isActive": true, "expiresAt": "2027-10-07",
                  "willRenew": false, "sourceProductId": "premium_annual", "store": null},
                  "weird": "not an object", "lapsed": {"isActive": false, "expiresAt": null}}},
              "trailing": {} }
            """
        guard case .restored(let snapshot) = classify(body) else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot.profileId == "pé😀")
        #expect(snapshot.state == "subscribed")
        #expect(
            snapshot.accessLevels["premium"]
                == AccessLevelSnapshot(
                    isActive: true, expiresAt: "2027-10-07", willRenew: false, sourceProductId: "premium_annual"))
        #expect(snapshot.accessLevels["lapsed"] == AccessLevelSnapshot(isActive: false))
        #expect(snapshot.accessLevels["weird"] == nil)
    }

    @Test(arguments: [
        "", "{", "{\"ok\": true, \"data\": {}", "{\"ok\": true, \"data\": {}} trailing",
        "{\"ok\": false, \"data\": {}}",
        "{\"ok\": \"yes\", \"data\": {}}", "{\"ok\": true}", "{\"ok\": true, \"data\": null}",
        "{\"ok\": true, \"data\": {\"state\": \"a\u{01}b\"}}", "{\"ok\": true, \"data\": {\"state\": \"\\ud800\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\udc00\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\ud83d \\ude00\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\ud83d\\u0041\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\ud83dxude00\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\ud83d\\nde00\"}}",
        "{\"ok\": true, \"data\": {\"state\": \"\\ud83d\\\"}}",
        "{\"ok\": true, \"data\": {\"n\": 01.}}", "{\"ok\": true, \"data\": {\"n\": 01}}",
        "{\"ok\": true, \"data\": {\"n\": [-00]}}", "[1]", "<html>502</html>",
    ])
    func anUnreadableBodyIsRetryableInvalidResponse(body: String) {
        guard case .retryable(let code, _, _, _) = classify(body) else {
            Issue.record("expected retryable for \(body)")
            return
        }
        #expect(code == "invalid_response")
    }

    /// Fields the decoder skips, and every key, are still checked as JSON: it passes over their
    /// strings without building them, so the checks there are its own.
    @Test(arguments: [
        Array("{\"ok\": true, \"data\": {\"skipped\": \"a\u{01}b\"}}".utf8),
        Array("{\"ok\": true, \"data\": {\"skipped\": \"a\\qb\"}}".utf8),
        Array("{\"ok\": true, \"data\": {\"skipped\": \"open".utf8),
        Array("{\"ok\": true, \"data\": {\"skipped\": \"a".utf8) + [0xC3, 0x28] + Array("\"}}".utf8),
        Array("{\"ok\": true, \"data\": {\"skipped\": [\"a".utf8) + [0xFF] + Array("\"]}}".utf8),
        // Within the body's last eight bytes, where the scan goes byte by byte.
        Array(#"{"ok": true, "data": {"state": "s"}, "x": ""#.utf8) + [0x80] + Array(#""}"#.utf8),
        // A key is text too: an access level's name would reach the journal with U+FFFD in it.
        Array("{\"ok\": true, \"data\": {\"accessLevels\": {\"p".utf8) + [0xFF] + Array("\": {}}}}".utf8),
        Array("{\"ok\": true, \"data\": {\"sk".utf8) + [0xC3, 0x28] + Array("\": 1}}".utf8),
    ])
    func aSkippedStringThatIsNotValidJSONMakesTheBodyUnreadable(body: [UInt8]) {
        guard case .retryable(let code, _, _, _) = classifyReply(httpStatus: 200, body: body, retryAfter: nil) else {
            Issue.record("expected retryable for \(body)")
            return
        }
        #expect(code == "invalid_response")
    }

    @Test func skippedStringsWithEscapesAndNonASCIITextAreReadPast() {
        let body = #"{"ok": true, "skipped": "caf\u00e9 \"q\" é😀", "data": {"x": ["\\", "ü"], "state": "s"}}"#
        guard case .restored(let snapshot) = classify(body) else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot.state == "s")
    }

    /// Keys are compared where they lie in the body unless they hold escapes; an escaped key is
    /// decoded first and then means the same field.
    @Test func anEscapedKeyIsTheSameField() {
        let body =
            #"{"\u006fk": true, "d\u0061ta": {"st\u0061te": "s", "accessLevels": {"p\u0072o": {"isActiv\u0065": true}}}}"#
        guard case .restored(let snapshot) = classify(body) else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot.state == "s")
        #expect(snapshot.accessLevels["pro"] == AccessLevelSnapshot(isActive: true))
    }

    /// A field that is read keeps its text as sent when it is UTF-8 (ASCII or not), and a read
    /// field that is not valid UTF-8 makes the body unreadable.
    @Test func aReadFieldKeepsItsUTF8AndRefusesInvalidBytes() {
        let prefix = Array(#"{"ok": true, "data": {"state": "a"#.utf8)
        let suffix = Array(#"b", "profileId": "plain"}}"#.utf8)
        guard
            case .restored(let snapshot) = classifyReply(
                httpStatus: 200, body: prefix + Array("é😀".utf8) + suffix, retryAfter: nil)
        else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot.state == "aé😀b")
        #expect(snapshot.profileId == "plain")
        // A lone continuation byte is all the text holds in the last: every byte of it is above ASCII.
        let alone = Array(#"{"ok": true, "data": {"state": ""#.utf8) + [0x80] + Array(#""}}"#.utf8)
        #expect(classifyReply(httpStatus: 200, body: alone, retryAfter: nil).code == "invalid_response")
        for invalid: [UInt8] in [[0xC3, 0x28], [0xFF], [0xED, 0xA0, 0x80]] {
            guard
                case .retryable(let code, _, _, _) = classifyReply(
                    httpStatus: 200, body: prefix + invalid + suffix, retryAfter: nil)
            else {
                Issue.record("expected retryable for \(invalid)")
                continue
            }
            #expect(code == "invalid_response")
        }
    }

    /// The scan for a string's end reads eight bytes at a time: a quote, an escape, a control
    /// character or a byte of non-ASCII text at every place in and across those words is found
    /// where it is, in keys and in skipped strings alike.
    @Test func everyStopInAStringIsFoundWhereverItFalls() {
        func body(key: [UInt8], value: [UInt8]) -> [UInt8] {
            Array(#"{"ok": true, "data": {""#.utf8) + key + Array(#"": ""#.utf8) + value
                + Array(#"", "state": "s"}}"#.utf8)
        }
        func state(_ body: [UInt8]) -> String?? {
            guard case .restored(let snapshot) = classifyReply(httpStatus: 200, body: body, retryAfter: nil) else {
                return .none
            }
            return .some(snapshot.state)
        }
        for length in 0...20 {
            let plain = Array(repeating: UInt8(ascii: "a"), count: length)
            #expect(state(body(key: plain, value: plain)) == "s", "plain, \(length)")
            // A key of that length that is the field itself, padded by a skipped key before it.
            let named = Array(#"{"ok": true, "data": {""#.utf8) + plain + Array(#"": 1, "state": "x"}}"#.utf8)
            #expect(state(named) == "x", "key before the field, \(length)")
            for place in 0...length {
                func with(_ inserted: [UInt8]) -> [UInt8] { Array(plain[..<place]) + inserted + plain[place...] }
                #expect(
                    state(body(key: plain, value: with(Array(#"\""#.utf8)))) == "s", "escape at \(place) of \(length)")
                #expect(state(body(key: with(Array(#"\u0041"#.utf8)), value: plain)) == "s", "escaped key, \(place)")
                #expect(state(body(key: plain, value: with(Array("é".utf8)))) == "s", "non-ASCII at \(place)")
                #expect(state(body(key: with(Array("é".utf8)), value: plain)) == "s", "non-ASCII key, \(place)")
                #expect(state(body(key: plain, value: with([0x1F]))) == .none, "control at \(place) of \(length)")
                #expect(state(body(key: with([0x09]), value: plain)) == .none, "control in key at \(place)")
                #expect(state(body(key: plain, value: with([0xFF]))) == .none, "invalid UTF-8 at \(place)")
                #expect(state(body(key: plain, value: with([0x80]))) == .none, "a continuation byte at \(place)")
                #expect(
                    state(body(key: plain, value: with([0x7F, 0x20, 0x5B, 0x5D]))) == "s", "DEL and ASCII at \(place)")
            }
        }
        // A string cut off by the body's end, at every length.
        for length in 0...20 {
            let cut = Array(#"{"ok": true, "data": {"k": ""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: length)
            #expect(state(cut) == .none, "unterminated, \(length)")
        }
    }

    /// A surrogate pair at either end of the ranges is the scalar beyond the BMP it stands for.
    @Test func surrogatePairsAtTheEdgesOfTheirRangesAreRead() {
        for (escaped, text) in [(#"\ud800\udc00"#, "\u{10000}"), (#"\udbff\udfff"#, "\u{10FFFF}")] {
            guard case .restored(let snapshot) = classify(#"{"ok": true, "data": {"state": "\#(escaped)"}}"#) else {
                Issue.record("expected restored for \(escaped)")
                continue
            }
            #expect(snapshot.state == text)
        }
    }

    /// A key is the field only when it is the whole name: `stateHistory` is not `state`. The
    /// last of a repeated key counts, as most parsers have it.
    @Test func aKeyIsTheFieldOnlyWhenItIsTheWholeName() {
        let body = #"""
            {"okay": false, "ok": true, "dataset": null, "data": {"stateHistory": "old", "state": "s",
              "profileIdx": "other", "accessLevelsOld": {"gone": {}}, "accessLevels": {"pro": {"isActiveSince": false,
              "isActive": true, "willRenewal": false, "expiresAtUtc": "x", "sourceProductIds": "y"}}}}
            """#
        guard case .restored(let snapshot) = classify(body) else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot == ProfileSnapshot(state: "s", accessLevels: ["pro": AccessLevelSnapshot(isActive: true)]))
        let repeated = #"{"ok": true, "data": {"state": "first", "state": "last"}, "data": {"state": "again"}}"#
        guard case .restored(let last) = classify(repeated) else {
            Issue.record("expected restored")
            return
        }
        #expect(last.state == "again")
        #expect(classify(#"{"ok": true, "data": {"state": "s"}, "data": null}"#).code == "invalid_response")
    }

    /// Fields the decoder skips may nest deeply and are read past; only nesting beyond any
    /// reply's (128 levels) is refused.
    @Test func nestingWithinTheLimitIsReadPast() {
        let nested = String(repeating: "[", count: 120) + String(repeating: "]", count: 120)
        let objects = String(repeating: #"{"a":"#, count: 120) + "1" + String(repeating: "}", count: 120)
        let body = #"{"ok": true, "data": {"x": \#(nested), "y": \#(objects), "state": "s"}}"#
        guard case .restored(let snapshot) = classify(body) else {
            Issue.record("expected restored")
            return
        }
        #expect(snapshot.state == "s")
    }

    @Test func deepNestingIsRefusedWithoutCrashing() {
        let body = "{\"ok\": true, \"data\": {\"x\": " + String(repeating: "[", count: 100_000) + "}}"
        guard case .retryable = classify(body) else {
            Issue.record("expected retryable")
            return
        }
    }
}
