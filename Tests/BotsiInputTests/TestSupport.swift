import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiInput

extension Workspace {
    /// Compresses `bytes` with the system's gzip into `name`.
    @discardableResult
    func writeGzip(_ name: String, _ bytes: [UInt8]) throws -> String {
        let plain = write(name + ".plain", bytes)
        let output = try runProgram("/usr/bin/env", ["gzip", "-c", "-n", plain]).requireSuccess().outputBytes
        try FileManager.default.removeItem(atPath: plain)
        return write(name, Array(output))
    }
}

func readAll(
    _ path: String, format: InputFormat? = nil, columns: ColumnNames = .init(), maxRecordBytes: Int = 1 << 20
) throws -> [InputRecord] {
    try readAll(path, format: format, options: InputOptions(columns: columns), maxRecordBytes: maxRecordBytes)
}

func readAll(
    _ path: String, format: InputFormat?, options: InputOptions, maxRecordBytes: Int = 1 << 20
) throws -> [InputRecord] {
    let reader = try InputReader(path: path, format: format, options: options, maxRecordBytes: maxRecordBytes)
    defer { reader.close() }
    var records: [InputRecord] = []
    while let record = try reader.next() { records.append(record) }
    return records
}

/// Every record of `bytes` read as a file named `name`, through reads of at most `readLimit`
/// bytes, and the reader (for `noRows` and the delimiter it chose).
func readBytes(
    _ bytes: [UInt8], name: String, format: InputFormat? = nil, options: InputOptions = .init(),
    maxRecordBytes: Int = 1 << 20, readLimit: Int = .max
) throws -> (records: [InputRecord], reader: InputReader) {
    let reader = try InputReader(
        raw: RawFile(bytes: bytes, name: name), format: format, options: options, maxRecordBytes: maxRecordBytes,
        readLimit: readLimit)
    defer { reader.close() }
    var records: [InputRecord] = []
    while let record = try reader.next() { records.append(record) }
    return (records, reader)
}

/// The repository's root, found from this file.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// A fixture made by scripts/make-purchase-fixtures.sh, as bytes.
func purchaseFixture(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: repositoryRoot + "/Tests/Fixtures/purchases/" + name)))
}

/// Expects that opening (or reading) fails with `kind`, and returns the error.
@discardableResult
func expectInputError(
    _ kind: InputError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> InputError? {
    do {
        try body()
        Issue.record("expected an InputError of kind \(kind)", sourceLocation: sourceLocation)
        return nil
    } catch let error as InputError {
        #expect(error.kind == kind, "\(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension InputRecord {
    var asRow: InputRow? {
        if case .row(let row) = self { return row }
        return nil
    }

    var asRejected: RejectedRow? {
        if case .rejected(let rejected) = self { return rejected }
        return nil
    }
}

func row(_ profileId: String, _ transactionId: String, line: Int) -> InputRecord {
    .row(InputRow(profileId: profileId, originalTransactionId: transactionId, line: line))
}
