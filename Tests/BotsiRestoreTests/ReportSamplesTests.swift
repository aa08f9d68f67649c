import BotsiInput
import Foundation
import Testing

/// The repository's root, found from this file, so the tests read the shipped files themselves.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// Every record the real reader yields for a shipped sample.
func readSample(_ name: String, columns: ColumnNames = .init()) throws -> [InputRecord] {
    let reader = try InputReader(path: repositoryRoot + "/samples/" + name, format: nil, columns: columns)
    defer { reader.close() }
    var records: [InputRecord] = []
    while let record = try reader.next() { records.append(record) }
    return records
}

@Suite struct ReportSamplesTests {
    static let pairs = [
        ("5f0c8a7e-1b2d-4c3e-9f4a-0d1e2f3a4b5c", "2000000512345671"),
        ("8e1d2c3b-4a59-4687-b9a0-c1d2e3f4a5b6", "2000000512345682"),
        ("0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "2000000512345693"),
        ("c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f", "2000000512345700"),
        ("unknown-7b6a5c4d-3e2f-4a1b-9c8d", "2000000512345714"),
        ("1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", "2000000512345725"),
    ]

    @Test(arguments: ["subscriptions.csv", "subscriptions.jsonl", "subscriptions.csv.gz"])
    func subscriptionSamplesReadAsTheSameSixPairs(name: String) throws {
        let records = try readSample(name)
        let rows = records.compactMap { record -> InputRow? in
            if case .row(let row) = record { return row }
            return nil
        }
        #expect(rows.count == records.count, "no row of \(name) may be rejected")
        #expect(rows.map(\.profileId) == Self.pairs.map(\.0))
        #expect(rows.map(\.originalTransactionId) == Self.pairs.map(\.1))
    }

    @Test func theOtherPlatformsExportReadsWithTheColumnFlags() throws {
        let columns = ColumnNames(profile: "app_user_id", transaction: "store_original_transaction_id")
        let records = try readSample("revenuecat-export.csv", columns: columns)
        let rows = records.compactMap { record -> InputRow? in
            if case .row(let row) = record { return row }
            return nil
        }
        #expect(rows.count == 4)
        #expect(rows.count == records.count)
        #expect(rows.map(\.originalTransactionId) == Array(Self.pairs.prefix(4).map(\.1)))
        // Without the flags the export has neither of the default columns.
        #expect(throws: InputError.self) { _ = try readSample("revenuecat-export.csv") }
    }

    @Test func theMessyCSVHasOneRowPerRejectionReasonAReaderCanHit() throws {
        let records = try readSample("messy.csv")
        var reasons: [RejectionReason] = []
        var rows = 0
        for record in records {
            switch record {
            case .row: rows += 1
            case .rejected(let rejected): reasons.append(rejected.reason)
            }
        }
        #expect(rows == 2)
        // line_too_long needs a line over 1 MiB and malformed_json a JSON-lines file: see samples/README.md.
        let expected: [RejectionReason] = [
            .missingProfileId, .missingTransactionId, .invalidProfileId, .invalidTransactionId, .scientificNotation,
            .malformedCSV,
        ]
        #expect(reasons == expected)
        #expect(Set(reasons).count == reasons.count)
    }

    @Test func theMessyJSONLinesFileHasOneMalformedLine() throws {
        let records = try readSample("messy.jsonl")
        let reasons = records.compactMap { record -> RejectionReason? in
            if case .rejected(let rejected) = record { return rejected.reason }
            return nil
        }
        #expect(reasons == [.malformedJSON])
        #expect(records.count == 3)
        #expect(records.map(\.line) == [1, 2, 3])
    }
}
