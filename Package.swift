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

        .testTarget(name: "BotsiBasicsTests", dependencies: ["BotsiBasics"]),
        .testTarget(name: "BotsiInputTests", dependencies: ["BotsiInput", "BotsiBasics"]),
        .testTarget(name: "BotsiAPITests", dependencies: ["BotsiAPI", "BotsiSimulator"]),
        .testTarget(name: "BotsiFilesTests", dependencies: ["BotsiFiles"]),
        .testTarget(name: "BotsiJournalTests", dependencies: ["BotsiJournal"]),
        .testTarget(name: "BotsiRestoreTests", dependencies: ["BotsiRestore", "BotsiSimulator", "BotsiBasics"]),
        .testTarget(name: "BotsiSimulatorTests", dependencies: ["BotsiSimulator"]),
        .testTarget(name: "BotsiCLITests", dependencies: ["BotsiCLI", "BotsiBasics"]),
        .testTarget(name: "EndToEndTests", dependencies: ["BotsiSimulator", "BotsiJournal", "BotsiBasics", "CSQLite"]),
    ],
    swiftLanguageModes: [.v6]
)
