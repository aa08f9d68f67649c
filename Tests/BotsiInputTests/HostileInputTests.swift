import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

/// Random and adversarial inputs: the readers must not crash, must give the same records
/// whatever the read boundaries, and must report lines in increasing order.
@Suite struct HostileInputTests {
    let directory: Workspace

    init() throws {
        directory = Workspace()
    }

    /// Reads with several read sizes and checks that all agree; returns the records.
    func readEveryWay(_ bytes: [UInt8], name: String, maxRecordBytes: Int) throws -> [InputRecord]? {
        let path = directory.write(name, bytes)
        var results: [Result<[InputRecord], InputError>] = []
        for readLimit in [1, 2, 3, 7, 64, Int.max] {
            do throws(InputError) {
                let reader = try InputReader(
                    raw: RawFile(path: path), format: nil, options: .init(), maxRecordBytes: maxRecordBytes,
                    readLimit: readLimit)
                var records: [InputRecord] = []
                while let record = try reader.next() { records.append(record) }
                results.append(.success(records))
            } catch {
                results.append(.failure(error))
            }
        }
        let reference = results[0]
        for (index, result) in results.enumerated().dropFirst() {
            switch (reference, result) {
            case (.success(let expected), .success(let actual)):
                #expect(actual == expected, "read size #\(index) differs for \(bytes)")
            case (.failure(let expected), .failure(let actual)):
                #expect(actual.kind == expected.kind, "read size #\(index) differs for \(bytes)")
            default:
                Issue.record("read size #\(index) gives \(result), the first gives \(reference), for \(bytes)")
            }
        }
        guard case .success(let records) = reference else { return nil }
        let lines = records.map(\.line)
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $0 < $1 }, "lines \(lines) for \(bytes)")
        for record in records {
            if let row = record.asRow {
                #expect(!row.profileId.isEmpty && row.profileId.unicodeScalars.count <= 128)
                #expect(row.originalTransactionId.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
                #expect(UInt64(row.originalTransactionId) != nil)
            }
        }
        return records
    }

    @Test func randomCSV() throws {
        let alphabet: [[UInt8]] = [
            [0x61], [0x31], [0x32], [0x2C], [0x2C], [0x22], [0x22], [0x0D], [0x0A], [0x0A], [0x20], [0x00],
            [0xFF], [0xC3, 0xA9], [0xEF, 0xBB, 0xBF], Array("2E15".utf8), Array("\r\n".utf8), [0x2B], [0x2E],
        ]
        var generator = SplitMix64(seed: 0xB075_1C5F)
        for round in 0..<300 {
            var bytes = Array("profileId,originalTransactionId\n".utf8)
            for _ in 0..<Int.random(in: 0..<120, using: &generator) {
                bytes += alphabet.randomElement(using: &generator)!
            }
            let maxRecordBytes = round % 3 == 0 ? 8 : 1 << 20
            _ = try readEveryWay(bytes, name: "random\(round).csv", maxRecordBytes: maxRecordBytes)
        }
    }

    @Test func randomJSONLines() throws {
        let alphabet: [[UInt8]] = [
            Array("{\"profileId\":\"p\",\"originalTransactionId\":\"1\"}\n".utf8),
            Array("{\"profileId\":".utf8), Array("\"originalTransactionId\":".utf8), Array("123".utf8),
            [0x7B], [0x7D], [0x5B], [0x5D], [0x22], [0x3A], [0x2C], [0x5C], Array("\\u".utf8), Array("d83d".utf8),
            [0x0A], [0x0D], [0x20], [0x00], [0xFF], Array("null".utf8), Array("2e15".utf8), [0x2D],
        ]
        var generator = SplitMix64(seed: 0x15_0B_7E5)
        for round in 0..<300 {
            var bytes = Array("{\"profileId\":\"p0\",\"originalTransactionId\":\"1\"}\n".utf8)
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                bytes += alphabet.randomElement(using: &generator)!
            }
            let maxRecordBytes = round % 3 == 0 ? 16 : 1 << 20
            _ = try readEveryWay(bytes, name: "random\(round).jsonl", maxRecordBytes: maxRecordBytes)
        }
    }

    @Test(arguments: [
        "profileId,originalTransactionId\r\np1,1\r\n\"p\r\n2\",2\r\n\r\n\"unclosed,3\r\np4,4\r\np5,\"5\"\"\"\r\n",
        "profileId,originalTransactionId\rp1,1\r\rp2,2\r\"\r\"\r,3\r",
        "\u{FEFF}profileId,originalTransactionId\n\"p\"\"1\",1\n\"",
        "profileId,originalTransactionId\np1,1\np2,\"2\nx\"y\np3,3\n",
    ])
    func readBoundariesDoNotChangeCSVRecords(text: String) throws {
        let records = try #require(try readEveryWay(Array(text.utf8), name: "edge.csv", maxRecordBytes: 1 << 20))
        #expect(!records.isEmpty)
    }

    @Test func readBoundariesDoNotChangeTheUnclosedQuoteRecovery() throws {
        var text = "profileId,originalTransactionId\n\"p1,1\n"
        for index in 0..<40 { text += "p\(index),\(index + 1)\n" }
        let records = try #require(try readEveryWay(Array(text.utf8), name: "quote.csv", maxRecordBytes: 64))
        #expect(records.first?.asRejected?.reason == .malformedCSV)
        #expect(records.count == 41)
        #expect(records.last == row("p39", "40", line: 42))
    }

    @Test func oneByteReadsOfAGzipFile() throws {
        var text = "profileId,originalTransactionId\r\n"
        for index in 0..<500 { text += "p\(index),\(index + 1)\r\n" }
        let path = try directory.writeGzip("small.csv.gz", Array(text.utf8))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let records = try #require(try readEveryWay(bytes, name: "again.csv.gz", maxRecordBytes: 1 << 20))
        #expect(records.count == 500)
        #expect(records.allSatisfy { $0.asRow != nil })
    }
}
