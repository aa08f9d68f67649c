import Foundation
import Testing

@testable import BotsiInput

/// The files real tools write (made byte for byte by scripts/make-input-fixtures.sh and
/// scripts/make-purchase-fixtures.sh), read as a user would run them.
@Suite struct ExportFileTests {
    static let profiles = [
        "5f0c8a7e-1b2d-4c3e-9f4a-0d1e2f3a4b5c", "8e1d2c3b-4a59-4687-b9a0-c1d2e3f4a5b6",
        "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f",
        "unknown-7b6a5c4d-3e2f-4a1b-9c8d", "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b",
    ]
    static let ids = [
        "2000000512345671", "2000000512345682", "2000000512345693", "2000000512345700", "2000000512345714",
        "2000000512345725",
    ]

    static func rows(lines: [Int]) -> [InputRecord] {
        zip(zip(profiles, ids), lines).map { pair, line in row(pair.0, pair.1, line: line) }
    }

    func read(_ path: String, options: InputOptions = .init()) throws -> (records: [InputRecord], reader: InputReader) {
        let reader = try InputReader(path: repositoryRoot + "/" + path, format: nil, options: options)
        defer { reader.close() }
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        return (records, reader)
    }

    @Test func excelsSemicolonCSVInWindows1252() throws {
        let (records, reader) = try read("samples/excel-semicolon.csv")
        #expect(reader.delimiter == UInt8(ascii: ";"))
        #expect(records == Self.rows(lines: Array(2...7)))
    }

    @Test func excelsUnicodeText() throws {
        // Row 3's note spans two lines, so the rows after it sit one line lower.
        let (records, reader) = try read("samples/excel-unicode-text.txt")
        #expect(reader.delimiter == ASCII.tab)
        #expect(records == Self.rows(lines: [2, 3, 4, 6, 7, 8]))
    }

    @Test func aDatabasesTabDump() throws {
        #expect(try read("samples/export.tsv").records == Self.rows(lines: Array(2...7)))
    }

    @Test func aDumpWithoutAHeader() throws {
        let options = InputOptions(hasHeader: false, positions: ColumnPositions(profile: 1, transaction: 2))
        #expect(try read("samples/no-header.csv", options: options).records == Self.rows(lines: Array(1...6)))
        expectInputError(.missingColumns) { _ = try read("samples/no-header.csv") }
    }

    @Test func anAPIsPrettyPrintedJSONArray() throws {
        #expect(try read("samples/subscriptions.json").records == Self.rows(lines: [2, 7, 12, 17, 22, 27]))
    }

    @Test func anExcelWorkbookIsRefusedWithTheExportAdvice() throws {
        let error = expectInputError(.notTabular) { _ = try read("Tests/Fixtures/inputs/subscriptions.xlsx") }
        #expect(error?.message.contains("an Excel workbook (.xlsx), not text") == true)
        #expect(error?.message.contains("export it as CSV (UTF-8)") == true)
    }

    @Test func emptyExportsAreZeroRows() throws {
        let (empty, emptyReader) = try read("Tests/Fixtures/inputs/empty.csv")
        #expect(empty.isEmpty && emptyReader.noRows == .zeroBytes)
        let (headerOnly, headerReader) = try read("Tests/Fixtures/inputs/header-only.csv")
        #expect(headerOnly.isEmpty && headerReader.noRows == .headerOnly)
    }

    @Test func signedTransactionsSample() throws {
        let records = try read("samples/signed-transactions.jsonl").records
        #expect(
            records.map { $0.asRow?.originalTransactionId ?? $0.asRejected!.reason.rawValue } == [
                "2000000600000011", "2000000600000022", "2000000600000033", "invalid_signed_transaction",
                "2000000600000177",
            ])
        let checked = try read(
            "samples/signed-transactions.jsonl",
            options: InputOptions(bundleId: "com.example.botsi", environment: .production)
        ).records
        #expect(
            checked.map { $0.asRow?.originalTransactionId ?? $0.asRejected!.reason.rawValue } == [
                "2000000600000011", "wrong_environment", "wrong_bundle_id", "invalid_signed_transaction",
                "2000000600000177",
            ])
    }

    @Test func receiptsSample() throws {
        let records = try read("samples/receipts.csv").records
        let outcomes = records.map { record -> String in
            switch record {
            case .row(let row): "\(row.line):\(row.originalTransactionId)"
            case .rejected(let rejected): "\(rejected.line):\(rejected.reason.rawValue)"
            }
        }
        #expect(outcomes.count == 6)
        #expect(Set(outcomes.prefix(2)) == ["2:2000000600000101", "2:2000000600000112"])
        #expect(
            Array(outcomes.dropFirst(2).prefix(3)) == [
                "3:2000000600000123", "4:receipt_without_purchases", "5:2000000600000123",
            ])
        #expect(outcomes.last?.hasSuffix(":invalid_receipt") == true)
        #expect(records.last!.line > 6, "the wrapped receipt spans lines")
    }
}
