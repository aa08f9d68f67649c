import BotsiCLI
import BotsiRestore
import Foundation

// Prints a generated document to stdout; scripts/docs.sh writes or checks them.
let documents: [String: () -> String] = [
    "lifecycle": LifecycleDocument.markdown,
    "man": ManPage.roff,
]
let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let render = documents[name] else {
    FileHandle.standardError.write(
        Data("usage: botsi-docs \(documents.keys.sorted().joined(separator: "|"))\n".utf8))
    exit(64)
}
FileHandle.standardOutput.write(Data(render().utf8))
