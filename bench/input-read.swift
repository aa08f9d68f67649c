// Times BotsiInput reading a large input (not a test: timings on a shared machine are noise).
//
// Build and run from the repository root:
//   swift build -c release --target BotsiInput
//   swiftc -O bench/input-read.swift -I .build/release/Modules \
//       -Xcc -fmodule-map-file=Sources/CZlib/module.modulemap \
//       -Xcc -fmodule-map-file=Sources/CCrypto/module.modulemap \
//       .build/release/BotsiInput.build/*.o -lz -lcrypto -o .build/input-read
//   .build/input-read [--encoding NAME] [FILE ...]
// Without a file it writes a 1,000,000-row CSV (about 54 MB) to a temporary directory and
// reads that. Prints rows, rejections, bytes, wall time and rate for each file. With
// /usr/bin/time -v it gives the readers' peak memory for each input form (bench/make_export.py).
import BotsiInput
import Foundation

func generatedCSV() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("botsi-input-bench.csv").path
    var text = "profileId,originalTransactionId\n"
    text.reserveCapacity(55_000_000)
    for index in 0..<1_000_000 {
        text += UUID().uuidString.lowercased() + "," + String(2_000_000_000_000_000 + index) + "\n"
    }
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    return path
}

var arguments = Array(CommandLine.arguments.dropFirst())
var options = InputOptions()
if arguments.first == "--encoding", arguments.count > 1 {
    options.encoding = InputEncoding(rawValue: arguments[1])
    arguments.removeFirst(2)
}
let generated = arguments.isEmpty ? try generatedCSV() : nil
defer { if let generated { try? FileManager.default.removeItem(atPath: generated) } }
let paths = generated.map { [$0] } ?? arguments
for path in paths {
    let start = DispatchTime.now().uptimeNanoseconds
    let reader = try InputReader(path: path, format: nil, options: options)
    var rows = 0
    var rejected = 0
    while let record = try reader.next() {
        if case .row = record { rows += 1 } else { rejected += 1 }
    }
    let digest = reader.sha256Hex
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    print(
        "\(path): \(rows) rows, \(rejected) rejected, \(reader.bytesRead) bytes, "
            + String(format: "%.3f s, %.0f rows/s, sha256 %@", seconds, Double(rows + rejected) / seconds, digest))
}
