import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// The exports people bring to a migration, run through the built binary against the simulator.
/// The files are the checked-in samples and fixtures (scripts/make-input-fixtures.sh and
/// scripts/make-purchase-fixtures.sh write them as the real tools do).
@Suite("exports people have, end to end")
struct ExportInputTests {
    /// The six pairs every export sample holds; the simulator ends them as four restored, one
    /// nothing_to_restore (id ending in 0) and one profile_not_found (profile starting "unknown").
    static let subscriptionPairs: Set<Pair> = [
        Pair("5f0c8a7e-1b2d-4c3e-9f4a-0d1e2f3a4b5c", "2000000512345671"),
        Pair("8e1d2c3b-4a59-4687-b9a0-c1d2e3f4a5b6", "2000000512345682"),
        Pair("0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "2000000512345693"),
        Pair("c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f", "2000000512345700"),
        Pair("unknown-7b6a5c4d-3e2f-4a1b-9c8d", "2000000512345714"),
        Pair("1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", "2000000512345725"),
    ]

    static func repositoryFile(_ path: String) -> String { Locations.packageRoot + "/" + path }

    /// Runs one input to the end; checks the exit status and returns what happened.
    func run(_ input: String, _ extra: [String] = [], status: Int32 = 0) throws -> (
        finished: Finished, journal: JournalView?, requests: Int
    ) {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let finished = try botsi(
            runArguments([input], workspace, simulator, extra), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == status && !finished.killedBySignal, "stderr: \(finished.stderr)")
        return (finished, JournalView.read(workspace.journal), simulator.stats().requests)
    }

    @Test(arguments: [
        "samples/excel-semicolon.csv", "samples/excel-unicode-text.txt", "samples/export.tsv",
        "samples/subscriptions.json",
    ])
    func anExportIsReadAsItIsAndEveryPairRestored(sample: String) throws {
        let (finished, journal, requests) = try run(Self.repositoryFile(sample))
        #expect(requests == 6)
        #expect(journal?.finalPairs == Self.subscriptionPairs, "stderr: \(finished.stderr)")
        #expect(journal?.rejections.isEmpty == true)
        #expect(finished.stderr.contains("6 rows read"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("restored: 4"), "stderr: \(finished.stderr)")
    }

    /// Issue 19, item 16: the header a spreadsheet user writes, refused before.
    @Test func aHeaderWrittenAsPeopleWriteItIsRead() throws {
        let workspace = Workspace()
        let rows = Self.subscriptionPairs.sorted { $0.profileId < $1.profileId }
            .map { "4,99;\($0.profileId);\($0.transactionId)" }
        let input = workspace.write(
            "people.csv", "Price;profile_id;Original Transaction ID\n" + rows.joined(separator: "\n") + "\n")
        let (finished, journal, requests) = try run(input)
        #expect(requests == 6)
        #expect(journal?.finalPairs == Self.subscriptionPairs, "stderr: \(finished.stderr)")
    }

    @Test func aZeroByteExportExits0WithAWarning() throws {
        let (finished, _, requests) = try run(Self.repositoryFile("Tests/Fixtures/inputs/empty.csv"))
        #expect(requests == 0)
        #expect(finished.stderr.contains("0 rows read"), "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains("warning: input '") && finished.stderr.contains("empty.csv' is empty (0 bytes)"),
            "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("failed or interrupted export"), "stderr: \(finished.stderr)")
        // Issue 19, item 15: a warning says who warns, and comes before the summary, not inside it;
        // the summary does not ask for the input files that were named.
        let lines = finished.stderr.split(separator: "\n").map(String.init)
        let warning = try #require(lines.firstIndex { $0.contains("is empty (0 bytes)") })
        let summary = try #require(lines.firstIndex { $0.hasPrefix("run finished in") })
        #expect(lines[warning].hasPrefix("botsi-restore: warning: input '"), "stderr: \(finished.stderr)")
        #expect(warning < summary, "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains("name input files"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("the input held no row"), "stderr: \(finished.stderr)")
    }

    @Test func aHeaderOnlyExportExits0AndSaysSoPlainly() throws {
        let (finished, _, requests) = try run(Self.repositoryFile("Tests/Fixtures/inputs/header-only.csv"))
        #expect(requests == 0)
        #expect(finished.stderr.contains("has a header and no rows: nothing to send"), "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains("warning:"), "stderr: \(finished.stderr)")
    }

    @Test func anExcelWorkbookExits65WithTheExportAdviceAndNothingSent() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let valid = workspace.csv(Pair.generate(3), name: "valid.csv")
        let workbook = Self.repositoryFile("Tests/Fixtures/inputs/subscriptions.xlsx")
        let finished = try botsi(
            runArguments([valid, workbook], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 65, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("subscriptions.xlsx"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("export it as CSV (UTF-8)"), "stderr: \(finished.stderr)")
        #expect(!finished.stderr.contains("--format"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
        #expect(!FileManager.default.fileExists(atPath: workspace.journal))
    }

    @Test func twoColumnsForTheProfileExit65NamingBoth() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let input = workspace.write(
            "both.csv", "profileId,profile_id,originalTransactionId\np-1,p-2,2000000000000001\n")
        let finished = try botsi(runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 65, "stderr: \(finished.stderr)")
        #expect(
            finished.stderr.contains("'profileId' (column 1) and 'profile_id' (column 2)"),
            "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("--profile-column"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 0)
    }

    @Test func receiptsAreSentAsEveryPurchasesOriginalTransactionId() throws {
        let (finished, journal, requests) = try run(Self.repositoryFile("samples/receipts.csv"))
        let expected: Set<Pair> = [
            Pair("receipt-profile-1", "2000000600000101"), Pair("receipt-profile-1", "2000000600000112"),
            Pair("receipt-profile-2", "2000000600000123"), Pair("receipt-profile-4", "2000000600000123"),
        ]
        #expect(requests == 4)
        #expect(journal?.finalPairs == expected, "stderr: \(finished.stderr)")
        #expect(
            Set(journal?.rejections.map(\.code) ?? []) == ["receipt_without_purchases", "invalid_receipt"],
            "stderr: \(finished.stderr)")
        #expect(
            journal?.items[Pair("receipt-profile-1", "2000000600000112")]?.source.hasSuffix("receipts.csv:2") == true)
    }

    @Test func signedTransactionsAreSentAsTheirOriginalTransactionId() throws {
        let (finished, journal, requests) = try run(Self.repositoryFile("samples/signed-transactions.jsonl"))
        let expected: Set<Pair> = [
            Pair("jws-profile-1", "2000000600000011"), Pair("jws-profile-2", "2000000600000022"),
            Pair("jws-profile-3", "2000000600000033"), Pair("jws-profile-5", "2000000600000177"),
        ]
        #expect(requests == 4)
        #expect(journal?.finalPairs == expected, "stderr: \(finished.stderr)")
        #expect(journal?.rejections.map(\.code) == ["invalid_signed_transaction"], "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("rejected by input checks (invalid_signed_transaction): 1"))
    }
}

/// The input flags, through the built binary.
@Suite("input flags, end to end")
struct InputFlagTests {
    func run(_ input: String, _ extra: [String], status: Int32 = 0) throws -> (
        finished: Finished, journal: JournalView?, requests: Int
    ) {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let finished = try botsi(
            runArguments([input], workspace, simulator, extra), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == status && !finished.killedBySignal, "stderr: \(finished.stderr)")
        return (finished, JournalView.read(workspace.journal), simulator.stats().requests)
    }

    @Test func aHeaderlessDumpIsReadByPosition() throws {
        let input = ExportInputTests.repositoryFile("samples/no-header.csv")
        let (finished, journal, requests) = try run(
            input, ["--no-header", "--profile-column", "1", "--transaction-column", "2"])
        #expect(requests == 6)
        #expect(journal?.finalPairs == ExportInputTests.subscriptionPairs, "stderr: \(finished.stderr)")
        #expect(journal?.items.values.map(\.source).contains { $0.hasSuffix("no-header.csv:1") } == true)
    }

    @Test func bundleAndEnvironmentRejectOtherAppsAndEnvironments() throws {
        let input = ExportInputTests.repositoryFile("samples/signed-transactions.jsonl")
        let (finished, journal, requests) = try run(
            input, ["--bundle-id", "com.example.botsi", "--environment", "production"])
        #expect(requests == 2)
        #expect(
            journal?.finalPairs == [
                Pair("jws-profile-1", "2000000600000011"), Pair("jws-profile-5", "2000000600000177"),
            ],
            "stderr: \(finished.stderr)")
        #expect(
            Set(journal?.rejections.map(\.code) ?? []) == [
                "wrong_environment", "wrong_bundle_id", "invalid_signed_transaction",
            ])
        #expect(finished.stderr.contains("rejected by input checks (wrong_environment): 1"), "\(finished.stderr)")
    }

    @Test func theEncodingFlagReadsAWindows1252Id() throws {
        let workspace = Workspace()
        let path = workspace.file("excel.csv")
        let bytes =
            Array("profileId;originalTransactionId;Preis\r\nm".utf8) + [0xFC]
            + Array("ller;2000000000000002;\"4,99 ".utf8) + [0x80] + Array("\"\r\n".utf8)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))

        // Its one row rejected: the file read with the wrong encoding is unusable as a whole, 65.
        let plain = try run(path, [], status: 65)
        #expect(plain.requests == 0)
        #expect(plain.journal?.rejections.map(\.code) == ["invalid_profile_id"])
        #expect(plain.journal?.rejections.first?.message?.contains("--encoding windows-1252") == true)

        let decoded = try run(path, ["--encoding", "windows-1252", "--delimiter", ";"])
        #expect(decoded.requests == 1)
        #expect(decoded.journal?.finalPairs == [Pair("müller", "2000000000000002")], "\(decoded.finished.stderr)")
    }

    /// The issue's reproduction: `c1`, `c\u{200B}1`, `c\u{200E}1`, `c\u{200F}1`, `c\u{2060}1`,
    /// `\u{FEFF}c1` (and U+061C, U+00AD, U+180E, U+034F, a tag, U+2028) on one transaction were
    /// twelve requests, twelve `restored` rows and one "conflict group" whose rows all printed `c1`.
    /// Now one request for `c1`; the others are rejected as `invalid_profile_id` naming the code
    /// point, and every report shows them escaped.
    @Test func idsThatDifferOnlyByInvisibleCharactersAreRejectedNotSentAsPairsOfTheirOwn() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let invisible = [
            "\u{200B}", "\u{200E}", "\u{200F}", "\u{2060}", "\u{061C}", "\u{00AD}", "\u{180E}", "\u{034F}", "\u{E0041}",
            "\u{2028}", "\u{FE0F}",
        ]
        let rows =
            [("c1", "2000000000000005")] + invisible.map { ("c\($0)1", "2000000000000005") } + [
                ("\u{FEFF}c1", "2000000000000005")
            ]
        let input = workspace.csv("ids.csv", rows: rows)
        let finished = try botsi(
            runArguments([input], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 1)
        #expect(!finished.stderr.contains("claimed by several profiles"), "stderr: \(finished.stderr)")
        let view = try #require(JournalView.read(workspace.journal))
        #expect(view.items.keys.map(\.profileId) == ["c1"])
        // The byte-order mark begins its line: it is not part of the id, and that row is `c1` again.
        #expect(view.rejections.count == invisible.count, "\(view.rejections.map(\.profileId))")
        #expect(view.rejections.allSatisfy { $0.code == "invalid_profile_id" })
        for named in ["U+200B ZERO WIDTH SPACE", "U+200E LEFT-TO-RIGHT MARK", "U+E0041 TAG LATIN CAPITAL LETTER A"] {
            #expect(view.rejections.contains { $0.message?.contains(named) == true }, "\(named)")
        }
        for format in ["table", "csv", "jsonl"] {
            let report = try botsi(
                ["report", "--journal", workspace.journal, "--format", format], key: nil, in: workspace, timeout: 20)
            #expect(report.status == 0, "stderr: \(report.stderr)")
            for scalar in invisible + ["\u{FEFF}"] {
                #expect(!report.stdout.unicodeScalars.contains(scalar.unicodeScalars.first!), "\(format) shows it raw")
            }
        }
        let table = try botsi(
            ["report", "--journal", workspace.journal, "--format", "table"], key: nil, in: workspace, timeout: 20)
        #expect(table.stdout.contains(#"c\u200E1"#) && table.stdout.contains(#"c\uDB40\uDC411"#), "\(table.stdout)")
    }

    @Test(arguments: [
        (["--delimiter", "ab"], "'--delimiter'"), (["--encoding", "ebcdic"], "'--encoding'"),
        (["--environment", "staging"], "'--environment'"), (["--format", "xlsx"], "'--format'"),
        (["--no-header", "--profile-column", "profileId"], "1-based column position"),
        (["--no-header", "--transaction-column", "1"], "different columns"),
    ])
    func badInputFlagsExit64NamingTheOption(extra: [String], named: String) throws {
        let workspace = Workspace()
        let input = workspace.csv(Pair.generate(2))
        let finished = try botsi(
            ["run", input, "--journal", workspace.journal] + extra, key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 64, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(named), "stderr: \(finished.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.journal))
    }
}
