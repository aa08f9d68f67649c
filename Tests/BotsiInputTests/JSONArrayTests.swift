import Foundation
import Testing

@testable import BotsiInput

/// JSON arrays of objects, and duplicate keys in any JSON object.
@Suite struct JSONArrayTests {
    func read(_ text: String, name: String = "input.json", maxRecordBytes: Int = 1 << 20, readLimit: Int = .max)
        throws -> [InputRecord]
    {
        try readBytes(Array(text.utf8), name: name, maxRecordBytes: maxRecordBytes, readLimit: readLimit).records
    }

    @Test func aPrettyPrintedArrayIsReadElementByElementWithTheirLines() throws {
        let text = """
            [
              {
                "profileId": "p1",
                "originalTransactionId": "2000000000000001"
              },
              {"profileId": "p2", "originalTransactionId": 2000000000000002},
              {
                "note": "a string with ] and } and \\" inside",
                "profileId": "p3", "originalTransactionId": "3"
              }
            ]

            """
        for readLimit in [Int.max, 1, 5] {
            let records = try read(text, readLimit: readLimit)
            #expect(
                records == [
                    row("p1", "2000000000000001", line: 2), row("p2", "2000000000000002", line: 6),
                    row("p3", "3", line: 7),
                ], "read limit \(readLimit)")
        }
    }

    @Test func aCompactArrayOnOneLineAndCRLFAndABOMAreRead() throws {
        let text =
            "\u{FEFF}[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},{\"profileId\":\"p2\",\"originalTransactionId\":\"2\"}]"
        #expect(try read(text) == [row("p1", "1", line: 1), row("p2", "2", line: 1)])
        let crlf =
            "[\r\n{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},\r\n\r\n{\"profileId\":\"p2\",\"originalTransactionId\":\"2\"}\r\n]\r\n"
        #expect(try read(crlf) == [row("p1", "1", line: 2), row("p2", "2", line: 4)])
    }

    @Test func anArrayInAJSONLinesFileIsReadToo() throws {
        let text = "[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}]\n"
        #expect(try read(text, name: "rows.jsonl") == [row("p1", "1", line: 1)])
    }

    @Test func badElementsAreRejectedRowsAndReadingGoesOn() throws {
        let text = """
            [
              {"profileId": "p1", "originalTransactionId": "1"},
              {"profileId": "p2", "originalTransactionId": },
              42,
              {"profileId": "p4", "originalTransactionId": "4"}
              {"profileId": "p5", "originalTransactionId": "5"},
              {"profileId": "p6", "originalTransactionId": "6"},
            ]
            """
        let records = try read(text)
        let summary = records.map { record -> String in
            switch record {
            case .row(let row): "\(row.line):\(row.profileId)"
            case .rejected(let rejected): "\(rejected.line):\(rejected.reason.rawValue)"
            }
        }
        #expect(
            summary == [
                "2:p1", "3:malformed_json", "4:malformed_json", "5:p4", "6:malformed_json", "6:p5", "7:p6",
                "8:malformed_json",
            ])
        #expect(records[4].asRejected?.message.contains("lacks a ','") == true)
        #expect(records[7].asRejected?.message.contains("trailing comma") == true)
    }

    @Test func anArrayThatIsNeverClosedKeepsItsRowsAndSaysSo() throws {
        let records = try read("[\n{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},\n{\"profileId\":\"p2\",")
        #expect(records.first == row("p1", "1", line: 2))
        #expect(records.count == 2)
        #expect(records[1].asRejected?.reason == .malformedJSON)
        #expect(records[1].line == 3)
        #expect(records[1].asRejected?.message.contains("never closed") == true)
        let unclosed = try read("[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}\n")
        #expect(unclosed.last?.asRejected?.message.contains("never closed with ']'") == true)
    }

    @Test func textAfterTheArrayIsReportedOnce() throws {
        let records = try read("[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}]\n[{\"profileId\":\"p2\"}]\n")
        #expect(records.count == 2)
        #expect(records[1].asRejected?.line == 2)
        #expect(records[1].asRejected?.message.contains("after the array's closing") == true)
    }

    @Test func anElementLongerThanTheLimitIsSkippedWithoutBeingKept() throws {
        let long = String(repeating: "x", count: 5000)
        let text =
            "[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},\n{\"note\":\"\(long)\"},\n{\"profileId\":\"p3\",\"originalTransactionId\":\"3\"}]"
        let reader = try InputReader(
            raw: RawFile(bytes: Array(text.utf8), name: "a.json"), format: nil, options: .init(),
            maxRecordBytes: 1000, readLimit: 64)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records.count == 3)
        #expect(records[1].asRejected?.reason == .lineTooLong)
        #expect(records[1].line == 2)
        #expect(records[2] == row("p3", "3", line: 3))
        #expect(reader.bufferCapacityForTesting <= 1000 + 2 * ByteWindow.chunkSize)
    }

    @Test func anArrayWhoseFirstElementIsNotAnObjectOrLacksTheKeysIsRefused() throws {
        expectInputError(.notTabular) { _ = try read("[1,2,3]") }
        let error = expectInputError(.missingColumns) { _ = try read("[{\"user\":\"u\",\"id\":\"1\"}]") }
        #expect(error?.message.contains("'user', 'id'") == true)
    }

    // MARK: duplicate keys

    @Test(arguments: [
        "{\"profileId\":\"p\",\"originalTransactionId\":\"1\",\"profileId\":\"q\"}",
        "{\"profileId\":\"p\",\"profile_id\":\"q\",\"originalTransactionId\":\"1\"}",
        "{\"profileId\":\"p\",\"originalTransactionId\":\"1\",\"ORIGINAL_TRANSACTION_ID\":\"2\"}",
    ])
    func aDuplicateKeyIsARejectedRowNotASilentChoice(object: String) throws {
        for (name, text) in [("a.jsonl", object + "\n"), ("a.json", "[\(object)]")] {
            let records = try read(text, name: name)
            #expect(records.count == 1)
            #expect(records.first?.asRejected?.reason == .duplicateKey, "\(name): \(records)")
            #expect(records.first?.asRejected?.message.contains("keep one") == true)
        }
    }

    @Test func aDuplicateOfAKeyTheReaderDoesNotUseIsHarmless() throws {
        let records = try read(
            "{\"profileId\":\"p\",\"x\":1,\"x\":2,\"originalTransactionId\":\"1\"}\n", name: "a.jsonl")
        #expect(records == [row("p", "1", line: 1)])
    }

    // MARK: where elements end (the scanner)

    @Test func aMissingCommaNamesTheLineTheElementBeforeItEndsOn() throws {
        let text = """
            [
              {"profileId": "p1",
               "originalTransactionId": "1"}
              {"profileId": "p2", "originalTransactionId": "2"}
            ]
            """
        let records = try read(text)
        #expect(records.count == 3)
        #expect(records.first == row("p1", "1", line: 2))
        #expect(
            records[1].asRejected?.message
                == "Line 4 lacks a ',' between the element that ends on line 3 and the next one; reading went on with the next element."
        )
        #expect(records.last == row("p2", "2", line: 4))
    }

    @Test func textAfterAnArrayClosedAfterATrailingCommaIsReportedToo() throws {
        let records = try read("[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},]\n[1]\n")
        #expect(records.count == 3)
        #expect(records[1].asRejected?.message.contains("trailing comma") == true)
        #expect(records[2].asRejected?.line == 2)
        #expect(records[2].asRejected?.message.contains("after the array's closing") == true)
    }

    @Test func anElementHoldingArraysAndBracketsInStringsIsOneElement() throws {
        let text =
            "[{\"tags\":[\"a\",[\"]\"]],\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},{\"profileId\":\"p2\",\"originalTransactionId\":\"2\"}]"
        #expect(try read(text) == [row("p1", "1", line: 1), row("p2", "2", line: 1)])
    }

    @Test func aScalarRightBeforeTheClosingBracketIsAnElementOfItsOwn() throws {
        let records = try read("[{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"},\n42]\n")
        #expect(records.count == 2)
        #expect(records[1].asRejected?.reason == .malformedJSON)
        #expect(records[1].line == 2)
        #expect(records[1].asRejected?.message.contains("not a valid JSON object") == true)
    }

    @Test func lineEndsInsideElementsCountLikeThoseBetweenThem() throws {
        // A lone CR right before an element's closing brace, then an LF: two line ends, not a
        // CRLF; a CRLF then an LF inside an element: two as well.
        let text =
            "[{\"profileId\":\"p1\",\r\"originalTransactionId\":\"1\"\r}\n,{\"profileId\":\"p2\",\r\n\n\"originalTransactionId\":\"2\"}\n,{\"profileId\":\"p3\",\"originalTransactionId\":\"3\"}]"
        for readLimit in [Int.max, 1] {
            #expect(
                try read(text, readLimit: readLimit) == [
                    row("p1", "1", line: 1), row("p2", "2", line: 4), row("p3", "3", line: 7),
                ], "read limit \(readLimit)")
        }
    }

    @Test func anElementOfExactlyTheLimitIsReadAndOneByteMoreIsSkipped() throws {
        let element = "{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}"
        // One byte longer, over two lines: reported on the line it starts on.
        let longer = "{\"profileId\":\"p2\",\n\"originalTransactionId\":\"2\"}"
        let limit = element.utf8.count
        for readLimit in [Int.max, 1] {
            let records = try read(
                "[\(element),\n\(longer),\n\(element)]", maxRecordBytes: limit, readLimit: readLimit)
            #expect(records.count == 3, "read limit \(readLimit)")
            #expect(records.first == row("p1", "1", line: 1))
            #expect(records[1].asRejected?.reason == .lineTooLong, "read limit \(readLimit)")
            #expect(records[1].line == 2, "read limit \(readLimit)")
            #expect(records.last == row("p1", "1", line: 4))
            // A scalar of exactly the limit is kept too, and rejected as what it is.
            let scalar = String(repeating: "1", count: limit)
            let scalars = try read("[\(element),\n\(scalar)\n]", maxRecordBytes: limit, readLimit: readLimit)
            #expect(scalars.last?.asRejected?.reason == .malformedJSON, "read limit \(readLimit): \(scalars)")
        }
    }

    @Test func anUnclosedElementIsReportedOnceOnTheLineItStarts() throws {
        let first = "{\"profileId\":\"p1\",\"originalTransactionId\":\"1\"}"
        for tail in ["{\"profileId\":\"p2\",\n\"originalTransactionId\":", "\"an unclosed\nstring"] {
            let records = try read("[\(first),\n\(tail)")
            #expect(records.count == 2, "\(records)")
            #expect(records[1].line == 2)
            #expect(
                records[1].asRejected?.message
                    == "The element starting on line 2 is never closed before the end of the input (an unbalanced brace or quote?)."
            )
        }
    }
}
