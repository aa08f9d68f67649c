import Testing

@testable import BotsiInput

/// The scanner under every JSON reader (lines, array elements, a JWS's header and payload),
/// directly: the values it finds for the wanted keys, and the problem it names in bytes that are
/// not one JSON object. The readers' tests see its verdicts through rows; here each rule of the
/// grammar it checks has a line that breaks it.
@Suite struct JSONLineParserTests {
    let parser = JSONLineParser(groups: [["profileId", "profile_id"], ["originalTransactionId"]])

    private func parse(_ text: String, collectingKeys: Bool = false) -> Result<JSONObjectLine, JSONSyntaxError> {
        Array(text.utf8).withUnsafeBufferPointer { bytes in
            Result { () throws(JSONSyntaxError) in
                try parser.parse(bytes, collectingKeys: collectingKeys, scratch: ScratchBuffer())
            }
        }
    }

    /// The problem named, or nil when the text is one object.
    private func problem(_ text: String) -> String? {
        guard case .failure(let error) = parse(text) else { return nil }
        return error.problem
    }

    /// Group `group`'s value as written (a string's content, a number's token), or its kind.
    private func value(_ text: String, _ group: Int = 0) -> String? {
        guard case .success(let object) = parse(text), let span = object[group] else { return nil }
        let bytes = Array(text.utf8)
        switch span {
        case .string(let start, let end, _), .number(let start, let end):
            return String(decoding: bytes[start..<end], as: UTF8.self)
        case .null: return "null"
        case .other(let kind, _, _): return kind
        }
    }

    @Test func anEmptyOrBlankLineIsSaidToBeEmpty() {
        #expect(problem("") == "the line is empty")
        #expect(problem(" \t ") == "the line is empty")
    }

    /// A key held twice keeps its last value (a JWS header's `alg` is read so), and the first
    /// duplicate names both keys as written.
    @Test func aKeyHeldTwiceKeepsItsLastValueAndNamesBothKeys() throws {
        let text = #"{"profileId":"first","profile_id":"second","PROFILEID":"third"}"#
        #expect(value(text) == "third")
        guard case .success(let object) = parse(text) else { return }
        let duplicate = try #require(object.duplicate)
        #expect(duplicate.group == 0 && duplicate.first == "profileId" && duplicate.second == "profile_id")
    }

    /// A key is wanted when the whole of it is one of the names: `profileIdOld` is not `profileId`.
    @Test func aKeyIsMatchedWhole() {
        #expect(value(#"{"profileIdOld":"x","profileId":"p"}"#) == "p")
        #expect(value(#"{"profileIdOld":"x"}"#) == nil)
        #expect(value(#"{"profile":"x"}"#) == nil)
        guard case .success(let object) = parse(#"{"profileIdOld":"x","profileId":"p"}"#) else { return }
        #expect(object.duplicate == nil)
    }

    /// Tabs, carriage returns and line feeds are whitespace between tokens, as spaces are.
    @Test func everyKindOfJSONWhitespaceSeparatesTokens() {
        let text = "{\t\"profileId\"\t:\t\"p\"\t,\r\n\"originalTransactionId\" :\r1 }\r"
        #expect(value(text) == "p")
        #expect(value(text, 1) == "1")
    }

    @Test func stringsAcceptJSONsEscapesAndRefuseTheRest() {
        #expect(value(#"{"profileId":"a\tb\/c\u00e9"}"#) == #"a\tb\/c\u00e9"#)
        #expect(problem(#"{"profileId":"a\u004G"}"#) == "a \\u escape needs four hex digits")
        #expect(problem(#"{"profileId":"a\u00"}"#) == "a \\u escape needs four hex digits")
        // A \u escape that ends the bytes leaves the string open: that is what is said.
        #expect(problem(#"{"profileId":"a\u0041"#) == "a string is not closed")
        #expect(problem(#"{"profileId":"a\x"}"#) == "invalid escape sequence in a string")
        #expect(problem("{\"profileId\":\"a\u{1F}b\"}") == "a control character inside a string must be escaped")
        #expect(value("{\"profileId\":\"a\u{7F}b\"}") == "a\u{7F}b", "JSON asks an escape only below U+0020")
    }

    @Test func otherValuesAreNamedByTheirKind() {
        #expect(value(#"{"profileId":[1,{"a":[]}]}"#) == "an array")
        #expect(value(#"{"profileId":{"a":[1]}}"#) == "an object")
        #expect(value(#"{"profileId":true}"#) == "a boolean")
        #expect(value(#"{"profileId":null}"#) == "null")
    }

    /// Numbers as JSON writes them: no leading zero, digits after a point and after an exponent,
    /// whose sign may be either.
    @Test func numbersFollowJSONsGrammar() {
        #expect(value(#"{"profileId":-12.5e-3}"#) == "-12.5e-3")
        #expect(value(#"{"profileId":0.5E+2}"#) == "0.5E+2")
        #expect(problem(#"{"profileId":01}"#)?.hasPrefix("a number starts with 0") == true)
        #expect(problem(#"{"profileId":1.}"#) == "a number is incomplete")
        #expect(problem(#"{"profileId":1e}"#) == "a number is incomplete")
        #expect(problem(#"{"profileId":1e-}"#) == "a number is incomplete")
    }

    @Test func aLiteralCutShortOrLeftOpenIsNamedForWhatItIs() {
        #expect(problem(#"{"profileId":tru}"#) == "unexpected word where a value should be")
        #expect(problem(#"{"profileId":true"#) == "expected ',' or '}' after a value")
    }

    /// Inside a value, objects and arrays are checked as strictly as the line's own object.
    @Test func nestedContainersAreCheckedToo() {
        #expect(problem(#"{"k":{a:1}}"#) == "expected a key in double quotes")
        #expect(problem(#"{"k":{"a" 1}}"#) == "expected ':' after a key")
        #expect(problem(#"{"k":[1}}"#) == "expected ',' or ']' in an array")
        #expect(problem(#"{"k":{"a":1]}"#) == "expected ',' or '}' in an object")
        #expect(problem(#"{"k":[1,2],"profileId":"p"}"#) == nil)
    }

    /// Every key in order when asked (the first line's, for a message naming what it holds).
    @Test func theKeysAreCollectedOnlyWhenAsked() throws {
        let text = #"{"a":1,"profile\u0049d":"p","b":[]}"#
        guard case .success(let asked) = parse(text, collectingKeys: true),
            case .success(let unasked) = parse(text)
        else {
            Issue.record("not parsed")
            return
        }
        #expect(asked.keys == ["a", "profileId", "b"])
        #expect(unasked.keys.isEmpty)
        #expect(value(text) == "p", "an escaped key is matched as decoded")
    }

    /// `report` writes a snapshot into a line of JSON only when it is one value, whole.
    @Test func oneValueIsOneWholeValueOfAnyKind() {
        func isOneValue(_ text: String) -> Bool { Array(text.utf8).withUnsafeBufferPointer(JSONSyntax.isOneValue) }
        for text in [#" {"a":{"isActive":true}} "#, "[1]", #""x""#, "-1.5", "null", "{}"] {
            #expect(isOneValue(text), "\(text)")
        }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        for text in ["", " ", #"{"a":{"isActive":true"#, "{} {}", "[1]x", "\u{80}", "tru", deep] {
            #expect(!isOneValue(text), "\(text)")
        }
        #expect(isOneValue(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)))
    }
}
