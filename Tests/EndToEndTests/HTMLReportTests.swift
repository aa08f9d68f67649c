import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// `report --format html` opened in Debian's headless Chromium: pages written by the built binary
/// from real runs against the simulator, checked through the DOM the browser built.
@Suite("report --format html, in a browser", .serialized)
struct HTMLReportTests {
    static let chartIDs = [
        "chart-requests", "chart-pace", "chart-latency", "chart-latency-histogram", "chart-attempts",
        "chart-outcomes", "chart-history",
    ]
    static let hostileIDs = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>"]

    /// Two runs with faults, 429s, retries, refused input rows, a conflict held, hostile ids.
    static func twoRuns(_ workspace: Workspace, _ simulator: Simulator, journal: String, extra: [String] = [])
        throws
    {
        var first = Pair.generate(40, prefix: "p").map { "\($0.profileId),\($0.transactionId)" }
        first += [
            "unknown-1,2000000000000031", "n-1,2000000000000040", "c-1,2000000000000052", "c-2,2000000000000052",
            // Hostile ids in a conflict group, which the page lists with its profiles.
            "<script>alert(1)</script>,2000000000000052", "\"\"\"><img src=x onerror=alert(1)>\",2000000000000052",
            "p\u{202E}evil,2000000000000068", "p-sheet,2.00000000000001E+15", ",2000000000000070",
        ]
        let one = workspace.write(
            "first.csv", "profileId,originalTransactionId\n" + first.joined(separator: "\n") + "\n")
        let run1 = try botsi(
            arguments([one], journal, simulator, ["--max-attempts", "2"] + extra), key: Simulator.defaultKey,
            in: workspace)
        #expect([0, 75].contains(run1.status), "run 1: \(run1.stderr)")
        let second =
            (0..<10).map { "q-\($0),\(2_000_000_000_000_100 + $0)" } + [
                "c-3,2000000000000052"
            ]
        let two = workspace.write(
            "second.csv", "profileId,originalTransactionId\n" + second.joined(separator: "\n") + "\n")
        let run2 = try botsi(
            arguments([two], journal, simulator, ["--on-conflict", "hold", "--max-attempts", "3"] + extra),
            key: Simulator.defaultKey, in: workspace)
        #expect([0, 75].contains(run2.status), "run 2: \(run2.stderr)")
    }

    static func arguments(_ inputs: [String], _ journal: String, _ simulator: Simulator, _ extra: [String]) -> [String]
    {
        ["run"] + inputs + [
            "--journal", journal, "--base-url", simulator.baseURL, "--backoff-base", "0.01", "--backoff-cap", "0.05",
            "--retry-after-cap", "0.05", "--timeout", "10",
        ] + extra
    }

    static func faultySimulator() throws -> Simulator {
        try startSimulator {
            $0.faultRate = 0.25
            $0.faults = [.internalError, .unavailable, .reset, .tooManyRequests]
            $0.limitRate = 200
            $0.latencyMilliseconds = 2
            $0.jitterMilliseconds = 8
            $0.seed = 5
        }
    }

    /// `status --format json`'s row counts by status.
    static func statusCounts(_ journal: String, _ workspace: Workspace) throws -> (
        statuses: [String: Int], rejected: Int
    ) {
        let status = try botsi(["status", "--journal", journal, "--format", "json"], key: nil, in: workspace)
        #expect(status.status == 0, "status: \(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let rejected = (object["rejected"] as? [String: Int] ?? [:]).values.reduce(0, +)
        return (object["statuses"] as? [String: Int] ?? [:], rejected)
    }

    static func page(_ arguments: [String], _ workspace: Workspace, name: String) throws -> String {
        let output = workspace.file(name)
        let report = try botsi(["report", "--format", "html", "-o", output] + arguments, key: nil, in: workspace)
        #expect(report.status == 0, "report: \(report.stderr)")
        let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        #expect(size > 0 && size < 1_500_000, "the page is \(size) bytes")
        return output
    }

    /// What every page must hold, whatever its journal: no console message, each status's count as
    /// `status` gives it, each chart with its title, description and data table, no active element.
    static func checkPage(
        _ browser: HeadlessBrowser, _ path: String, statuses: [String: Int], inputRejections: Int,
        totals: Bool = false
    ) throws {
        let before = browser.messages.count
        try browser.open("file://" + path)
        let messages = browser.messages.dropFirst(before)
        #expect(messages.isEmpty, "the browser reported: \(Array(messages))")
        let attribute = totals ? "data-total" : "data-status"
        let shown = try #require(
            try browser.evaluate(
                "Object.fromEntries([...document.querySelectorAll('[\(attribute)]')].map(e => "
                    + "[e.getAttribute('\(attribute)'), e.textContent]))") as? [String: String])
        for status in ItemStatus.allCases {
            let count = shown[status.rawValue].map { Int($0.replacingOccurrences(of: ",", with: "")) }
            #expect(
                count == statuses[status.rawValue] ?? 0,
                "\(status): the page says \(shown[status.rawValue] ?? "nothing")")
        }
        let refused = try browser.evaluate("document.querySelector('[data-input-rejections]').textContent") as? String
        #expect(refused.flatMap { Int($0.replacingOccurrences(of: ",", with: "")) } == inputRejections)
        for id in chartIDs {
            let chart =
                try browser.evaluate(
                    """
                    (() => { const f = document.getElementById('\(id)'); if (!f) return null;
                      const svg = f.querySelector('svg.chart');
                      return [svg ? svg.querySelector('title').textContent : '', svg ? svg.querySelector('desc').textContent : '',
                        svg ? svg.getAttribute('aria-labelledby') : '', f.querySelectorAll('table.data tbody tr').length]; })()
                    """) as? [Any]
            let parts = try #require(chart, "chart \(id) is missing")
            #expect((parts[0] as? String).map { !$0.isEmpty } == true, "\(id) has no <title>")
            #expect((parts[1] as? String).map { !$0.isEmpty } == true, "\(id) has no <desc>")
            #expect((parts[2] as? String) == "\(id)-title \(id)-desc", "\(id) is not labelled by them")
            #expect((parts[3] as? Int ?? 0) > 0, "\(id) has no data table rows")
        }
        // A first-day review: the latency table dated every interval 1970-01-01 (no series start).
        let epoch = try browser.evaluate("document.body.textContent.includes('1970-01-01')") as? Bool
        #expect(epoch == false, "the page shows a time at the epoch")
        let active =
            try browser.evaluate(
                """
                document.querySelectorAll('script, img, iframe, object, embed, link, form, base, meta[http-equiv=refresh]').length
                  + [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on')
                      || /^\\s*javascript:/i.test(a.value))).length
                """) as? Int
        #expect(active == 0, "the page holds active elements or handlers")
    }

    @Test(.enabled(if: HeadlessBrowser.path != nil, HeadlessBrowser.missing))
    func pagesFromRealRunsAgreeWithStatusAndShowHostileIdsAsText() throws {
        let workspace = Workspace()
        let simulator = try Self.faultySimulator()
        defer { simulator.stop() }
        try Self.twoRuns(workspace, simulator, journal: workspace.journal)
        let (statuses, rejected) = try Self.statusCounts(workspace.journal, workspace)
        #expect(
            statuses["held"] == 1 && rejected >= 3,
            "the fixture lacks a held row or refused rows: \(statuses), \(rejected)")
        let latest = try Self.page(["--journal", workspace.journal], workspace, name: "latest.html")
        let first = try Self.page(["--journal", workspace.journal, "--run", "1"], workspace, name: "run1.html")

        let browser = try HeadlessBrowser(profile: workspace.path)
        defer { browser.close() }
        try browser.setViewport(width: 1200, height: 900)
        try Self.checkPage(browser, latest, statuses: statuses, inputRejections: rejected)
        let text = try #require(try browser.evaluate("document.body.innerText") as? String)
        for id in Self.hostileIDs { #expect(text.contains(id), "\(id) is not on the page as text") }
        #expect(text.contains("p\\u202Eevil"), "the bidi override is not shown as a visible escape")
        #expect(!text.unicodeScalars.contains("\u{202E}"), "a raw bidi override reached the page")
        let history = try browser.evaluate("document.querySelectorAll('#chart-history table.data tbody tr').length")
        #expect(history as? Int == 2, "the history lists \(history ?? "nothing") runs, not 2")
        let changes = try browser.evaluate("document.querySelector('h4.changes').textContent") as? String
        #expect(changes?.contains("run 2 against run 1") == true, "changes: \(changes ?? "none")")

        // Print: every chart fits an A4 page's width (186 mm at 96 dpi is 703 px) and none is split.
        try browser.emulateMedia("print")
        try browser.setViewport(width: 703, height: 1000)
        let overflowing =
            try browser.evaluate(
                """
                [...document.querySelectorAll('figure.chart')].filter(f => f.getBoundingClientRect().right > 703.5
                  || getComputedStyle(f).breakInside !== 'avoid').map(f => f.id)
                """) as? [String]
        #expect(overflowing == [], "charts cut in print: \(overflowing ?? [])")
        let tables = try browser.evaluate("getComputedStyle(document.querySelector('details.data')).display")
        #expect(tables as? String == "none", "data tables print: \(tables ?? "")")
        // Dark, on screen, when the reader asks for it; light otherwise.
        try browser.emulateMedia("screen", features: ["prefers-color-scheme": "dark"])
        let dark = try browser.evaluate("getComputedStyle(document.body).backgroundColor") as? String
        try browser.emulateMedia("screen", features: ["prefers-color-scheme": "light"])
        let light = try browser.evaluate("getComputedStyle(document.body).backgroundColor") as? String
        #expect(
            dark == "rgb(13, 17, 23)" && light == "rgb(255, 255, 255)", "dark \(dark ?? "?"), light \(light ?? "?")")

        try browser.setViewport(width: 1200, height: 900)
        try Self.checkPage(browser, first, statuses: statuses, inputRejections: rejected)
        let scope = try browser.evaluate("document.querySelector('header .sub').textContent") as? String
        #expect(scope?.contains("run 1") == true && scope?.contains("latest") == false, "scope: \(scope ?? "")")
    }

    @Test(.enabled(if: HeadlessBrowser.path != nil, HeadlessBrowser.missing)) func anEmptyJournalAndTheShardsOfOneJob()
        throws
    {
        let workspace = Workspace()
        let empty = workspace.file("empty.sqlite")
        try Journal(path: empty, create: true).close()
        let emptyPage = try Self.page(["--journal", empty], workspace, name: "empty.html")

        let simulator = try Self.faultySimulator()
        defer { simulator.stop() }
        let shards = [workspace.file("shard-0.sqlite"), workspace.file("shard-1.sqlite")]
        for (index, shard) in shards.enumerated() {
            try Self.twoRuns(workspace, simulator, journal: shard, extra: ["--shard", "\(index)/2"])
        }
        var totals: [String: Int] = [:]
        var rejected = 0
        for shard in shards {
            let counts = try Self.statusCounts(shard, workspace)
            totals.merge(counts.statuses, uniquingKeysWith: +)
            rejected += counts.rejected
        }
        let job = try Self.page(["--journal", shards[0], "--journal", shards[1]], workspace, name: "job.html")
        // status reads the shards together too: each one's status, then the totals.
        let both = try botsi(
            ["status", "--journal", shards[0], "--journal", shards[1], "--format", "json"], key: nil, in: workspace)
        let object = try JSONSerialization.jsonObject(with: Data(both.stdout.utf8)) as? [String: Any]
        #expect(object?["statuses"] as? [String: Int] == totals, "status of both: \(both.stdout) \(both.stderr)")
        #expect((object?["journals"] as? [Any])?.count == 2)
        let text = try botsi(["status", "--journal", shards[0], "--journal", shards[1]], key: nil, in: workspace)
        #expect(text.stdout.contains("all 2 journals: 0 running"), "status: \(text.stdout)")

        let browser = try HeadlessBrowser(profile: workspace.path)
        defer { browser.close() }
        try browser.setViewport(width: 1200, height: 900)
        try Self.checkPage(browser, emptyPage, statuses: [:], inputRejections: 0)
        try Self.checkPage(browser, job, statuses: totals, inputRejections: rejected)
        try Self.checkPage(browser, job, statuses: totals, inputRejections: rejected, totals: true)
        let rows = try browser.evaluate("document.querySelectorAll('#shards tr[data-shard]').length")
        #expect(rows as? Int == 2, "a row per shard: \(rows ?? "none")")
    }

    /// docs/images/report-html.png: the top of the demo's page, as README.md and docs/reports.md
    /// show it. Written when missing or when BOTSI_UPDATE_SCREENSHOT=1; otherwise the new one must
    /// have the checked-in one's size (the same layout), so the docs cannot drift far from the page.
    static let screenshotPath = Locations.packageRoot + "/docs/images/report-html.png"

    @Test(.enabled(if: HeadlessBrowser.path != nil, HeadlessBrowser.missing))
    func theDemoEndsWithItsPageWhoseScreenshotTheDocsShow() throws {
        let workspace = Workspace()
        let demo = try botsi(
            ["demo", "--keep-journal", workspace.file("demo.sqlite")], key: nil, in: workspace,
            workingDirectory: Locations.packageRoot, timeout: 180)
        #expect(demo.status == 0, "demo: \(demo.stderr)")
        let line = demo.stderr.split(separator: "\n").first { $0.hasPrefix("demo: the run as a page:") }
        let printed = line.map {
            $0.dropFirst("demo: the run as a page:".count).split(separator: " ").first.map(String.init)
        }
        let page = workspace.file("demo.html")
        #expect(printed == page, "the demo does not name its page: \(demo.stderr)")
        let (statuses, rejected) = try Self.statusCounts(workspace.file("demo.sqlite"), workspace)

        let browser = try HeadlessBrowser(profile: workspace.path)
        defer { browser.close() }
        try browser.setViewport(width: 1100, height: 1500)
        try Self.checkPage(browser, page, statuses: statuses, inputRejections: rejected)
        let shot = try browser.screenshot(width: 1100, height: 1500)
        let update = ProcessInfo.processInfo.environment["BOTSI_UPDATE_SCREENSHOT"] == "1"
        if update || !FileManager.default.fileExists(atPath: Self.screenshotPath) {
            try FileManager.default.createDirectory(
                atPath: (Self.screenshotPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try shot.write(to: URL(fileURLWithPath: Self.screenshotPath))
        }
        let checkedIn = try #require(FileManager.default.contents(atPath: Self.screenshotPath))
        let sizes = (Self.pngSize(checkedIn), Self.pngSize(shot))
        #expect(
            sizes.0 != nil && sizes.0?.0 == sizes.1?.0 && sizes.0?.1 == sizes.1?.1,
            "docs/images/report-html.png is \(String(describing: sizes.0)), the page \(String(describing: sizes.1))")
        #expect(shot.count > 50_000, "the screenshot is nearly empty (\(shot.count) bytes)")
    }

    /// Width and height from a PNG's header.
    static func pngSize(_ data: Data) -> (Int, Int)? {
        let bytes = [UInt8](data.prefix(24))
        guard bytes.count == 24, bytes[12..<16].elementsEqual("IHDR".utf8) else { return nil }
        func number(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (number(16), number(20))
    }
}
