// swift-tools-version:6.0
import PackageDescription

// One-way data flow: BotsiCLI -> BotsiRestore (Run, Report) -> {BotsiInput, BotsiAPI, BotsiJournal}.
// Input, API and Journal never import each other; only the CLI and the tests import the simulator.
// BotsiBasics and BotsiFiles sit below all of them and import none of them.
let package = Package(
    name: "botsi-restore",
    products: [
        .executable(name: "botsi-restore", targets: ["botsi-restore"]),
        .library(name: "BotsiRestore", targets: ["BotsiRestore"]),
        .library(name: "BotsiSimulator", targets: ["BotsiSimulator"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // App Store receipts (PKCS#7, ASN.1) are parsed by OpenSSL's libcrypto, not by hand.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Shared by every target: the one copy of small helpers, and how files are touched.
        .target(name: "BotsiBasics"),
        .target(name: "BotsiFiles", dependencies: ["BotsiBasics"]),

        .target(name: "BotsiInput", dependencies: ["CZlib", "CCrypto", "BotsiBasics"]),
        .target(name: "BotsiAPI", dependencies: ["CCurl", "BotsiBasics"]),
        .target(name: "BotsiJournal", dependencies: ["CSQLite", "BotsiBasics", "BotsiFiles"]),
        .target(
            name: "BotsiRestore", dependencies: ["BotsiInput", "BotsiAPI", "BotsiJournal", "BotsiBasics", "BotsiFiles"]),
        .target(name: "BotsiSimulator", dependencies: ["BotsiBasics"]),
        .target(
            name: "BotsiCLI",
            dependencies: ["BotsiRestore", "BotsiJournal", "BotsiSimulator", "BotsiBasics", "BotsiFiles"]),
        .executableTarget(name: "botsi-restore", dependencies: ["BotsiCLI"]),
        // Prints the generated documents (scripts/docs.sh); not shipped.
        .executableTarget(name: "botsi-docs", dependencies: ["BotsiCLI", "BotsiRestore"]),

        // The one temp-directory helper, runner harness and simulator launcher of every test target.
        .target(
            name: "BotsiTestSupport", dependencies: ["BotsiRestore", "BotsiJournal", "BotsiSimulator"],
            path: "Tests/BotsiTestSupport"),
        .testTarget(name: "BotsiBasicsTests", dependencies: ["BotsiBasics"]),
        .testTarget(name: "BotsiInputTests", dependencies: ["BotsiInput", "BotsiBasics", "BotsiTestSupport"]),
        .testTarget(name: "BotsiAPITests", dependencies: ["BotsiAPI", "BotsiSimulator", "BotsiTestSupport"]),
        .testTarget(name: "BotsiFilesTests", dependencies: ["BotsiFiles", "BotsiBasics", "BotsiTestSupport"]),
        .testTarget(name: "BotsiJournalTests", dependencies: ["BotsiJournal", "BotsiTestSupport"]),
        .testTarget(name: "BotsiRestoreTests", dependencies: ["BotsiRestore", "BotsiSimulator", "BotsiBasics", "BotsiTestSupport"]),
        .testTarget(name: "BotsiSimulatorTests", dependencies: ["BotsiSimulator", "BotsiTestSupport"]),
        .testTarget(name: "BotsiCLITests", dependencies: ["BotsiCLI", "BotsiBasics"]),
        .testTarget(name: "EndToEndTests", dependencies: ["BotsiSimulator", "BotsiJournal", "BotsiBasics", "CSQLite", "BotsiTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
