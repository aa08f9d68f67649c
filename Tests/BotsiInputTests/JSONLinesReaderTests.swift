import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

@Suite struct JSONLinesReaderTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    func read(
        _ text: String, name: String = "input.jsonl", columns: ColumnNames = .init(), maxRecordBytes: Int = 1 << 20
    ) throws -> [InputRecord] {
        try readAll(directory.write(name, text), columns: columns, maxRecordBytes: maxRecordBytes)
    }

    /// Reads `line` after a valid first line, so opening checks do not get in the way.
    func readSecond(_ line: String) throws -> InputRecord {
        let records = try read("{\"profileId\":\"p0\",\"originalTransactionId\":\"1\"}\n\(line)\n")
        try #require(records.count == 2)
        return records[1]
    }

    @Test func readsObjectsWithTheirLineNumbers() throws {
        let records = try read(
            """
            {"profileId": "p1", "originalTransactionId": "2000000261699248"}

            {"originalTransactionId": "2000000261699249", "profileId": "p2", "extra": 1}
            """, name: "input.ndjson")
        #expect(records == [row("p1", "2000000261699248", line: 1), row("p2", "2000000261699249", line: 3)])
    }

    @Test func acceptsSnakeCaseAndOtherCaseKeys() throws {
        let records = try read(
            "{\"profile_id\":\"p1\",\"original_transaction_id\":\"1\"}\n{\"PROFILEID\":\"p2\",\"OriginalTransactionID\":\"2\"}\n"
        )
        #expect(records == [row("p1", "1", line: 1), row("p2", "2", line: 2)])
    }

    @Test func usesTheUsersKeyNames() throws {
        let records = try read(
            "{\"user_id\":\"u1\",\"original_id\":7}\n",
            columns: ColumnNames(profile: "user_id", transaction: "original_id"))
        #expect(records == [row("u1", "7", line: 1)])
    }

    @Test func bigNumbersKeepEveryDigit() throws {
        let records = try read(
            """
            {"profileId": 12345, "originalTransactionId": 2000000261699248123}
            {"profileId": "p", "originalTransactionId": 18446744073709551615}
            {"profileId": "p", "originalTransactionId": 9007199254740993}
            """)
        #expect(
            records == [
                row("12345", "2000000261699248123", line: 1),
                row("p", "18446744073709551615", line: 2),
                row("p", "9007199254740993", line: 3),
            ])
    }

    @Test func numbersThatAreNotIdsAreRejected() throws {
        #expect(
            try readSecond("{\"profileId\":\"p\",\"originalTransactionId\":2.0E15}").asRejected?.reason
                == .scientificNotation)
        #expect(
            try readSecond("{\"profileId\":\"p\",\"originalTransactionId\":2e15}").asRejected?.reason
                == .scientificNotation)
        #expect(
            try readSecond("{\"profileId\":\"p\",\"originalTransactionId\":-5}").asRejected?.reason
                == .invalidTransactionId)
        #expect(
            try readSecond("{\"profileId\":\"p\",\"originalTransactionId\":12.5}").asRejected?.reason
                == .invalidTransactionId)
        #expect(
            try readSecond("{\"profileId\":\"p\",\"originalTransactionId\":18446744073709551616}").asRejected?.reason
                == .invalidTransactionId)
    }

    @Test func otherValueTypesAreInvalidAndNullIsMissing() throws {
        let cases: [(line: String, reason: RejectionReason, profile: String?, transaction: String?)] = [
            ("{\"profileId\":true,\"originalTransactionId\":\"1\"}", .invalidProfileId, "true", "1"),
            ("{\"profileId\":\"p\",\"originalTransactionId\":[1]}", .invalidTransactionId, "p", "[1]"),
            ("{\"profileId\":{\"id\":\"p\"},\"originalTransactionId\":1}", .invalidProfileId, "{\"id\":\"p\"}", "1"),
            ("{\"profileId\":null,\"originalTransactionId\":\"1\"}", .missingProfileId, "null", "1"),
            ("{\"profileId\":\"p\",\"originalTransactionId\":null}", .missingTransactionId, "p", "null"),
            ("{\"profileId\":\"p\"}", .missingTransactionId, "p", nil),
            ("{\"originalTransactionId\":\"1\"}", .missingProfileId, nil, "1"),
            ("{}", .missingProfileId, nil, nil),
        ]
        for testCase in cases {
            let rejected = try #require(try readSecond(testCase.line).asRejected, "\(testCase.line)")
            #expect(rejected.reason == testCase.reason, "\(testCase.line)")
            #expect(rejected.line == 2)
            #expect(rejected.profileId == testCase.profile, "\(testCase.line)")
            #expect(rejected.originalTransactionId == testCase.transaction, "\(testCase.line)")
        }
    }

    @Test func decodesStringEscapes() throws {
        let record = try readSecond(
            #"{"profileId":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","originalTransactionId":"\u0031\u0032"}"#)
        #expect(record == row("café 😀 \"q\" \\ /", "12", line: 2))
    }

    @Test func badUnicodeEscapesAndControlsAreInvalidFields() throws {
        #expect(
            try readSecond(#"{"profileId":"a\ud800b","originalTransactionId":"1"}"#).asRejected?.reason
                == .invalidProfileId)
        #expect(
            try readSecond(#"{"profileId":"a\udc00","originalTransactionId":"1"}"#).asRejected?.reason
                == .invalidProfileId)
        #expect(
            try readSecond(#"{"profileId":"a\u0000b","originalTransactionId":"1"}"#).asRejected?.reason
                == .invalidProfileId)
        #expect(
            try readSecond(#"{"profileId":"p","originalTransactionId":"1\n"}"#) == row("p", "1", line: 2))
    }

    @Test func invalidUTF8InAValueIsAnInvalidField() throws {
        var bytes = Array("{\"profileId\":\"p0\",\"originalTransactionId\":\"1\"}\n{\"profileId\":\"a".utf8)
        bytes += [0xFF, 0xC0]
        bytes += Array("\",\"originalTransactionId\":\"2\"}\n{\"profileId\":\"p3\",\"note\":\"".utf8)
        bytes += [0xFF]
        bytes += Array("\",\"originalTransactionId\":\"3\"}\n".utf8)
        let records = try readAll(directory.write("bad.jsonl", bytes))
        #expect(records.count == 3)
        #expect(records[1].asRejected?.reason == .invalidProfileId)
        #expect(records[2] == row("p3", "3", line: 3))
    }

    @Test func nestedValuesInOtherKeysAreSkipped() throws {
        let record = try readSecond(
            #"{"meta":{"a":[1,2,{"b":null}],"c":"}"},"profileId":"p","list":[],"originalTransactionId":"9","t":true}"#)
        #expect(record == row("p", "9", line: 2))
    }

    @Test func nestingIsBoundedAt64Levels() throws {
        func nested(_ depth: Int) -> String {
            // The line's object is level 1; `depth - 1` arrays inside it.
            "{\"profileId\":\"p\",\"originalTransactionId\":\"1\",\"deep\":"
                + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
        }
        #expect(try readSecond(nested(64)) == row("p", "1", line: 2))
        let rejected = try #require(try readSecond(nested(65)).asRejected)
        #expect(rejected.reason == .malformedJSON)
        #expect(rejected.message.contains("64"))
        // Far deeper input must not exhaust the stack.
        #expect(try readSecond(nested(100_000)).asRejected?.reason == .malformedJSON)
    }

    @Test func duplicateKeysAreRejectedNotSilentlyResolved() throws {
        let record = try readSecond(
            #"{"profileId":"first","originalTransactionId":"1","profile_id":"second","profileId":"third"}"#)
        let rejected = try #require(record.asRejected)
        #expect(rejected.reason == .duplicateKey)
        #expect(rejected.line == 2)
        #expect(rejected.message.contains("both 'profileId' and 'profile_id'"), "\(rejected.message)")
    }

    @Test(arguments: [
        "{\"profileId\":\"p\",\"originalTransactionId\":\"1\"",
        "{\"profileId\":\"p\" \"originalTransactionId\":\"1\"}",
        "{\"profileId\":\"p\",\"originalTransactionId\":01}",
        "{\"profileId\":'p',\"originalTransactionId\":\"1\"}",
        "{\"profileId\":\"p\",\"originalTransactionId\":\"1\"} extra",
        "{\"profileId\":\"p\",\"originalTransactionId\":\"1\",}",
        "{\"profileId\":\"p\tq\",\"originalTransactionId\":\"1\"}",
        "{\"profileId\":\"p\\x\",\"originalTransactionId\":\"1\"}",
        "{\"profileId\":tru,\"originalTransactionId\":\"1\"}",
        "[\"p\", \"1\"]",
        "\"just a string\"",
        "42",
        "profileId,originalTransactionId",
    ])
    func malformedLinesAreRejectedAndReadingGoesOn(line: String) throws {
        let records = try read(
            "{\"profileId\":\"p0\",\"originalTransactionId\":\"1\"}\n\(line)\n{\"profileId\":\"p3\",\"originalTransactionId\":\"3\"}\n"
        )
        #expect(records.count == 3)
        let rejected = try #require(records[1].asRejected)
        #expect(rejected.reason == .malformedJSON)
        #expect(rejected.line == 2)
        #expect(rejected.message.hasPrefix("Line 2 is not valid JSON"))
        #expect(records[2] == row("p3", "3", line: 3))
    }

    @Test func anArrayLineSaysSo() throws {
        let rejected = try #require(try readSecond("[1,2]").asRejected)
        #expect(rejected.message.contains("array"))
    }

    @Test func skipsTheByteOrderMarkBlankLinesAndCRLF() throws {
        let bytes: [UInt8] =
            [0xEF, 0xBB, 0xBF]
            + Array(
                "\r\n  \r\n{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}\r\n\t\r\n{\"profileId\":\"p2\",\"originalTransactionId\":\"2\"}"
                    .utf8)
        let records = try readAll(directory.write("bom.jsonl", bytes))
        #expect(records == [row("p1", "1", line: 3), row("p2", "2", line: 5)])
    }

    @Test func aLongLineIsRejectedWithoutBufferingIt() throws {
        let long = "{\"profileId\":\"" + String(repeating: "x", count: 5 << 20) + "\",\"originalTransactionId\":\"2\"}"
        let path = directory.write(
            "long.jsonl",
            "{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}\n\(long)\n{\"profileId\":\"p3\",\"originalTransactionId\":\"3\"}"
        )
        let reader = try InputReader(path: path, format: nil, maxRecordBytes: 1000)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records.count == 3)
        #expect(records[1].asRejected?.reason == .lineTooLong)
        #expect(records[1].line == 2)
        #expect(records[2] == row("p3", "3", line: 3))
        #expect(reader.bufferCapacityForTesting <= 1000 + 2 * ByteWindow.chunkSize)
    }

    // MARK: inputs unusable as a whole

    @Test func aFirstLineThatIsNotJSONIsNotTabular() throws {
        let error = expectInputError(.notTabular) { _ = try read("profileId,originalTransactionId\np,1\n") }
        #expect(error?.message.contains("--format csv") == true)
        expectInputError(.notTabular) { _ = try read("[1,2,3]\n") }
        expectInputError(.notTabular) { _ = try read(String(repeating: "{", count: 2000), maxRecordBytes: 100) }
    }

    /// What `jq .` writes: one object over several lines. It said only "line 1 is not a JSON object".
    @Test func aPrettyPrintedObjectSaysToWriteOneObjectALine() throws {
        let error = expectInputError(.notTabular) {
            _ = try read("{\n  \"profileId\": \"a\",\n  \"originalTransactionId\": \"2000000000000031\"\n}\n")
        }
        #expect(error?.message.contains("jq -c") == true, "\(error?.message ?? "")")
        let broken = expectInputError(.notTabular) { _ = try read("{\"profileId\": \"a\", }\n") }
        #expect(broken?.message.contains("jq -c") == false, "a whole line that is bad JSON is not that")
        let trailing = expectInputError(.notTabular) {
            _ = try read("{\"profileId\":\"a\",\"originalTransactionId\":\"1\"},\n")
        }
        #expect(trailing?.message.contains("jq -c") == false, "an object with more after it is not that")
    }

    @Test func aFirstObjectWithoutTheKeysNamesWhatItHas() throws {
        let error = expectInputError(.missingColumns) {
            _ = try read("{\"user\":\"u\",\"transaction\":\"1\"}\n")
        }
        #expect(error?.message.contains("'user', 'transaction'") == true)
        #expect(error?.message.contains("--profile-column") == true)
    }
}
