import BotsiBasics
import BotsiJournal
import Foundation
import Testing

@testable import BotsiRestore

/// What the page shows, read from its markup: the numbers and words of each section, which notes
/// and lists appear, the charts' scales and the geometry that carries meaning (a bar's height, a
/// line's break), and the decisions of the histogram and the series underneath.
@Suite struct HTMLPageTests {
    static func render(_ model: HTMLReportModel) -> String { String(decoding: HTMLPage.render(model), as: UTF8.self) }

    /// The markup of one chart's `<figure>`.
    static func figure(_ page: String, _ id: String) -> String {
        guard let start = page.range(of: "<figure class=\"chart\" id=\"\(id)\">") else { return "" }
        let rest = page[start.lowerBound...]
        return String(rest[..<(rest.range(of: "</figure>")?.upperBound ?? rest.endIndex)])
    }

    static func occurrences(_ text: String, _ piece: String) -> Int { text.components(separatedBy: piece).count - 1 }

    static func written(_ draw: (inout HTMLWriter) -> Void) -> String {
        var writer = HTMLWriter()
        draw(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func journal(_ path: String = "/j/journal.sqlite", _ statuses: [ItemStatus: Int] = [.restored: 3])
        -> JournalVerdict
    {
        JournalVerdict(path: path, statuses: statuses)
    }

    static func model(_ journals: [JournalVerdict] = [journal()]) -> HTMLReportModel {
        var model = HTMLReportModel(
            generatedAt: Date(timeIntervalSince1970: 1_800_000_000), toolVersion: "test", journals: journals,
            runScope: "run 2, the latest")
        model.attention = journals.prefix(HTMLReportLimits.attentionJournals).map { JournalAttention(path: $0.path) }
        return model
    }

    // MARK: The histogram and the series

    @Test func theHistogramKeepsItsEndsAndRanks() {
        var huge = LatencyHistogram()
        huge.add(1e10)
        #expect(huge.percentile(0.5) == 1e10, "beyond an hour a latency lands in the last bucket")
        var negative = LatencyHistogram()
        negative.add(-1)
        #expect(negative.count == 0 && negative.minimum == nil, "a negative latency is no latency")
        var three = LatencyHistogram()
        for value in [5.0, 1, 10, 100] { three.add(value) }
        #expect(three.minimum == 1 && three.maximum == 100)
        var ranks = LatencyHistogram()
        for value in [1.0, 10, 100] { ranks.add(value) }
        let median = ranks.percentile(0.5) ?? 0
        #expect(abs(median - 10) / 10 < 0.011, "the median of 1, 10, 100 is 10, not \(median)")
        var one = LatencyHistogram()
        one.add(100)
        #expect(one.percentile(0.5) == 100 && one.percentile(0.99) == 100, "one sample is its own percentiles")
        // 119.95 ms lies in the lower half of its bucket, whose middle (121.1 ms) is above it.
        var below = LatencyHistogram()
        below.add(119.95)
        #expect(below.percentile(0.5) == 119.95, "a percentile is never above the slowest reply")
    }

    static let start: Int64 = 1_800_000_000_000

    @Test func theSeriesPicksItsWidthAndCount() {
        let empty = SeriesBuilder(start: Self.start, end: Self.start).finish(rateOption: nil, concurrencyOption: nil)
        #expect(empty.buckets.count == 1, "a run of no length still has its one interval")
        let exact = SeriesBuilder(start: Self.start, end: Self.start + 200_000)
        #expect(exact.width == 1000, "200 s fits 200 buckets of a second")
        #expect(exact.finish(rateOption: nil, concurrencyOption: nil).buckets.count == 200)
        let minute = SeriesBuilder(start: Self.start, end: Self.start + 60_000)
        #expect(minute.finish(rateOption: nil, concurrencyOption: nil).buckets.count == 60)
        let long = SeriesBuilder(start: Self.start, end: Self.start + 400 * 86_400_000)
        #expect(long.width == 2 * 86_400_000, "400 days in 200 buckets: two days each")
        var early = SeriesBuilder(start: Self.start, end: Self.start + 3000)
        early.add(
            AttemptSample(
                startedAtMilliseconds: Self.start - 5000, durationMilliseconds: nil, httpStatus: 200,
                outcome: .status(.restored)))
        #expect(early.finish(rateOption: nil, concurrencyOption: nil).buckets.first?.total == 1)
    }

    @Test func pacerSamplesHoldUntilTheNextAndPercentilesArePerBucket() {
        var builder = SeriesBuilder(start: Self.start, end: Self.start + 4000)
        builder.add(PacerSample(atMilliseconds: Self.start + 1500, sendRateLimit: 20, concurrency: 8))
        builder.add(PacerSample(atMilliseconds: Self.start + 3200, sendRateLimit: nil, concurrency: 4))
        for value in 1...10 {
            builder.add(
                AttemptSample(
                    startedAtMilliseconds: Self.start, durationMilliseconds: Double(value), httpStatus: 200,
                    outcome: .status(.restored)))
        }
        let series = builder.finish(rateOption: 50, concurrencyOption: 16)
        #expect(series.hasPacerSamples)
        #expect(series.buckets.map(\.sendRateLimit) == [nil, 20, 20, nil])
        #expect(series.buckets.map(\.concurrency) == [nil, 8, 8, 4])
        let first = series.buckets[0]
        #expect(first.p50.map { abs($0 - 5) / 5 < 0.011 } == true, "p50 \(first.p50 ?? 0)")
        #expect(first.p90.map { abs($0 - 9) / 9 < 0.011 } == true, "p90 \(first.p90 ?? 0)")
        #expect(first.p99.map { abs($0 - 10) / 10 < 0.011 } == true, "p99 \(first.p99 ?? 0)")
        let none = SeriesBuilder(start: Self.start, end: Self.start + 4000).finish(
            rateOption: nil, concurrencyOption: nil)
        #expect(!none.hasPacerSamples)
    }

    @Test func eachAttemptIsClassedAsTheChartStacksIt() {
        let cases: [(AttemptOutcome, Int?, RequestClass)] = [
            (.retry, 429, .throttled), (.status(.restored), 429, .throttled), (.retry, 428, .failed),
            (.status(.failed), 503, .failed), (.status(.rejected), 400, .failed), (.retry, 408, .transient),
            (.retry, 500, .transient), (.retry, 499, .failed), (.retry, 404, .failed), (.retry, nil, .transient),
            (.status(.nothingToRestore), 200, .nothingToRestore), (.status(.profileNotFound), 404, .notFound),
            (.status(.restored), 200, .restored),
        ]
        for (outcome, status, expected) in cases {
            #expect(RequestClass.of(outcome: outcome, httpStatus: status) == expected, "\(outcome) \(status ?? 0)")
        }
    }

    // MARK: Numbers and text

    @Test func numbersAtTheirBoundaries() {
        #expect(HTMLNumbers.decimal(100.4) == "100")
        #expect(HTMLNumbers.decimal(12.25) == "12.3")
        #expect(HTMLNumbers.milliseconds(1000) == "1 s")
        #expect(HTMLNumbers.milliseconds(999.4) == "999 ms")
        #expect(HTMLNumbers.duration(59.5) == "59.5 s")
        #expect(HTMLNumbers.duration(60) == "1 min 00 s")
        #expect(HTMLNumbers.duration(610) == "10 min 10 s")
        #expect(HTMLNumbers.duration(3600) == "1 h 00 min")
        #expect(HTMLNumbers.duration(86400) == "1 d 0 h")
        #expect(HTMLNumbers.percent(0, of: 0) == "0%")
        #expect(HTMLNumbers.time("2026-11-29T16:40:00") == "2026-11-29 16:40:00 UTC")
        #expect(HTMLNumbers.time("2026-11-29") == "2026-11-29")
        #expect(HTMLText.shortened("abc", limit: 3) == "abc")
        #expect(HTMLText.shortened("abcd", limit: 3) == "abc…")
    }

    @Test func attributesAreEscapedWhole() {
        let long = String(repeating: "a", count: 100) + "'&"
        let markup = Self.written { $0.element("p", ["title": long], "t") }
        #expect(markup == "<p title=\"\(String(repeating: "a", count: 100))&#39;&amp;\">t</p>")
    }

    @Test func runOptionsAndExitStatusInWords() {
        #expect(HTMLRunOptions("{}").words == "new and owed rows · no rate cap")
        #expect(
            HTMLRunOptions(#"{"shardIndex": 0, "shardCount": 1, "concurrency": 4}"#).words
                == "new and owed rows · no rate cap · concurrency 4")
        #expect(
            HTMLRunOptions(#"{"shardIndex": 1, "shardCount": 2, "adaptive": false}"#).words
                == "new and owed rows · no rate cap · not adaptive · shard 1/2")
        #expect(HTMLRunOptions(#"{"onConflict": "hold", "rate": 40}"#).words == "hold conflicts · rate 40/s")
        #expect(HTMLExitWords.describe(nil, state: "running") == "still running")
        #expect(HTMLExitWords.describe(nil, state: "killed") == "no exit status: the run was killed or crashed")
    }

    @Test func thePageLiesBesideItsJournal() {
        #expect(HTMLReportAdvice.pagePath(forJournal: "migration.sqlite") == "migration.html")
        #expect(HTMLReportAdvice.pagePath(forJournal: "/var/j/migration.sqlite") == "/var/j/migration.html")
    }

    // MARK: Charts

    @Test func axesAreRoundAndValuesStayInThePlot() {
        #expect(HTMLChart.axis(0) == (1, [0, 0.5, 1]))
        #expect(HTMLChart.axis(2) == (2, [0, 0.5, 1, 1.5, 2]))
        #expect(HTMLChart.axis(3) == (5, [0, 1, 2, 3, 4, 5]))
        #expect(HTMLChart.axis(10).top == 10)
        #expect(HTMLChart.y(2, top: 1) == HTMLChart.top, "a value above the axis stops at its top")
        #expect(HTMLChart.y(0, top: 1) == HTMLChart.top + HTMLChart.plotHeight)
        let left = Self.written { HTMLChart.yAxis(&$0, top: 2, ticks: [0, 1, 2], label: "rows") }
        #expect(Self.occurrences(left, "class=\"grid\"") == 3)
        let right = Self.written { HTMLChart.yAxis(&$0, top: 2, ticks: [0, 1, 2], label: "rows", right: true) }
        #expect(Self.occurrences(right, "class=\"grid\"") == 0, "the right axis draws no second grid")
        let time = Self.written { HTMLChart.timeAxis(&$0, seconds: 8) }
        #expect(Self.occurrences(time, "class=\"tick\"") == 9, "8 s: a tick each second, both ends")
        #expect(time.contains(">8 s</text>"))
    }

    @Test func barsStackAndLinesBreak() {
        let stacked = Self.written {
            HTMLChart.stackedBars(
                &$0,
                [
                    .init(label: "a", style: "k0", values: [1, 0]), .init(label: "b", style: "k1", values: [1, nil]),
                ], slots: 2, top: 2)
        }
        #expect(Self.occurrences(stacked, "<rect") == 2, "a zero draws no bar")
        #expect(stacked.contains("y=\"114\"") && stacked.contains("y=\"14\""), "the second bar sits on the first")
        let broken = Self.written {
            HTMLChart.lines(&$0, [.init(label: "p50", style: "l-p50", values: [1, nil, 1])], slots: 3, top: 2)
        }
        #expect(Self.occurrences(broken, "<polyline") == 2, "a missing value breaks the line")
        #expect(broken.contains("points=\"163.3,114 163.3,114\""), "a lone point is drawn as a dash")
        #expect(broken.contains("class=\"line-label\""))
        let unlabelled = Self.written {
            HTMLChart.lines(&$0, [.init(label: "x", style: "l-p50", values: [1])], slots: 1, top: 2, endLabels: false)
        }
        #expect(!unlabelled.contains("line-label"))
        let categories = Self.written { HTMLChart.categoryBars(&$0, labels: ["a", "b"], values: [0, 3], style: "k0") }
        #expect(Self.occurrences(categories, "<rect") == 1)
        let horizontal = Self.written {
            HTMLChart.horizontalBars(&$0, labels: ["a", "b"], values: [4, 2], styles: ["k0", "k1"])
        }
        #expect(horizontal.contains("width=\"330\"") && horizontal.contains("width=\"165\""))
        #expect(HTMLChart.horizontalBarsHeight(rows: 0) == 34 && HTMLChart.horizontalBarsHeight(rows: 3) == 70)
    }

    @Test func legendsShowPatternsForBarsAndDashesForLines() {
        let one = Self.written {
            HTMLChart.figure(
                &$0, id: "f", title: "t", description: "d", legend: [.init(label: "a", style: "k3", values: [])],
                draw: { _ in }, table: { _ in })
        }
        #expect(one.contains("<ul class=\"legend\"><li><svg class=\"swatch\""))
        #expect(one.contains("fill=\"url(#k3)\""))
        let line = Self.written {
            HTMLChart.figure(
                &$0, id: "f", title: "t", description: "d", legend: [.init(label: "a", style: "l-p90", values: [])],
                draw: { _ in }, table: { _ in })
        }
        #expect(line.contains("<line x1=\"0\" y1=\"6\" x2=\"22\" y2=\"6\" class=\"l-p90\"/>"))
    }

    // MARK: Sections

    static func seriesModel(pacer: Bool) -> HTMLReportModel {
        var model = model()
        var series = RunSeries(startMilliseconds: start, bucketMilliseconds: 2000, buckets: [])
        series.buckets = (0..<2).map { index in
            var bucket = SeriesBucket(seconds: 2)
            bucket.requests = [3, 1, 0, 0, 0, index == 0 ? 0 : 4]
            if index == 0 { (bucket.p50, bucket.p90, bucket.p99) = (10, 20, 500) }
            if pacer { (bucket.sendRateLimit, bucket.concurrency) = (20, 8) }
            return bucket
        }
        series.hasPacerSamples = pacer
        series.rateOption = 50
        series.concurrencyOption = 16
        model.series = series
        return model
    }

    @Test func theOverTimeChartsShowTheSeries() {
        let page = Self.render(Self.seriesModel(pacer: true))
        #expect(page.contains("4 s in 2 intervals of 2 s each."))
        let requests = Self.figure(page, "chart-requests")
        #expect(requests.contains("restored: 6, nothing to restore: 2, profile not found: 0"))
        #expect(requests.contains("429 too many requests: 4; peak 4 per second."))
        #expect(Self.occurrences(requests, "class=\"bar\"") == 5)
        #expect(requests.contains("y=\"154\""), "3 restored in 2 s on an axis to 5 a second: 30% up")
        let utc = { (offset: Int64) in
            HTMLNumbers.time(Timestamp.string(Date(timeIntervalSince1970: Double(Self.start + offset) / 1000)))
        }
        #expect(requests.contains("<tr><th scope=\"row\">0 s</th><td>\(utc(0))</td>"))
        #expect(requests.contains("<tr><th scope=\"row\">2 s</th><td>\(utc(2000))</td>"))
        let latency = Self.figure(page, "chart-latency")
        #expect(latency.contains("the highest p99 is 500 ms"))
        #expect(Self.occurrences(latency, "<tr><th scope=\"row\">") == 1, "an interval without replies has no row")
        let pace = Self.figure(page, "chart-pace")
        #expect(pace.contains("<td class=\"num\">2</td><td class=\"num\">20</td><td class=\"num\">8</td>"))
        // Concurrency 8 on a right axis to 10 drawn against the left one to 20: at 16, 80% up.
        #expect(pace.contains("class=\"l-conc\" points=\"213,54 511,54\""))
        #expect(!pace.contains("line-label"))
        #expect(!page.contains("keeps no record of the pacer"))
        let options = Self.render(Self.seriesModel(pacer: false))
        #expect(
            Self.figure(options, "chart-pace").contains(
                "<td class=\"num\">2</td><td class=\"num\">50</td><td class=\"num\">16</td>"))
        #expect(options.contains("keeps no record of the pacer"))
    }

    @Test func theDistributionsCountEveryReply() {
        var model = Self.model()
        for value in [1.5, 50, 119.95] { model.latency.add(value) }
        model.attemptsPerRow = [1: 5]
        model.outcomes = [
            AttemptOutcomeCount(outcome: .status(.restored), httpStatus: 200, code: nil, count: 9),
            AttemptOutcomeCount(outcome: .retry, httpStatus: nil, code: "timeout", count: 1),
        ]
        var page = Self.render(model)
        var spread = Self.model()
        for value in 1...100 { spread.latency.add(Double(value)) }
        let percentiles = [0.5, 0.9, 0.99].map { HTMLNumbers.milliseconds(spread.latency.percentile($0) ?? 0) }
        #expect(percentiles == ["50 ms", "90 ms", "99 ms"])
        #expect(
            Self.render(spread).contains(
                "<td>100</td><td class=\"num\">50 ms</td><td class=\"num\">90 ms</td>"
                    + "<td class=\"num\">99 ms</td><td class=\"num\">100 ms</td>"))
        let histogram = Self.figure(page, "chart-latency-histogram")
        #expect(histogram.contains("<tr><th scope=\"row\">1.5 ms</th><td>2 ms</td><td class=\"num\">1</td></tr>"))
        #expect(histogram.contains("<tr><th scope=\"row\">100 ms</th><td>120 ms</td><td class=\"num\">1</td></tr>"))
        #expect(
            Self.figure(page, "chart-attempts").contains("Rows sent once, twice and more in the run: 1: 5, 2: 0, 3: 0.")
        )
        let outcomes = Self.figure(page, "chart-outcomes")
        #expect(outcomes.contains("The run&#39;s 10 requests by what came back, largest first.</desc>"))
        model.outcomesLeftOut = 2
        model.attemptsPerRow = [2: 1, 10: 2, 12: 1]
        page = Self.render(model)
        #expect(
            Self.figure(page, "chart-outcomes").contains(
                "The run&#39;s 12 requests by what came back, largest first; 2 in smaller groups."))
        #expect(
            Self.figure(page, "chart-attempts").contains(
                ": 1: 0, 2: 1, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0, 10+: 3."))
    }

    @Test func latencyRangesAreRoundAndCoverEveryReply() {
        var wide = LatencyHistogram()
        for value in [1.0, 100] { wide.add(value) }
        #expect(
            HTMLSections.latencyEdges(wide)
                == [
                    1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120,
                ].map { $0 * 1.0 })
        var narrow = LatencyHistogram()
        for value in [1.5, 9.0] { narrow.add(value) }
        #expect(HTMLSections.latencyEdges(narrow) == [1.5, 2, 2.5, 3, 4, 5, 6, 8, 10])
    }

    @Test func attentionListsWhatNeedsAPerson() {
        var model = Self.model()
        let example = ExampleRow(
            profileId: "p1", originalTransactionId: "t1", status: .failed, code: nil, source: "in.csv:2",
            message: String(repeating: "m", count: 100))
        var attention = JournalAttention(path: "/j/journal.sqlite")
        attention.failures = [RowGroup(status: .failed, code: nil, count: 4, examples: [example])]
        attention.failureGroupCount = 1
        attention.rejections = [RowGroup(status: .rejected, code: "bad id", count: 2, examples: [example])]
        attention.rejectionGroupCount = 1
        attention.conflicts = [ClaimGroup(originalTransactionId: "t9", profiles: 2, claims: [example, example])]
        attention.conflictGroupCount = 1
        attention.changes = ChangeSummary(earlierRun: 6, laterRun: 7)
        model.attention = [attention]
        var page = Self.render(model)
        #expect(!page.contains("The lists below cover"))
        #expect(!page.contains("<h3 class=\"journal\">"))
        #expect(!page.contains("smaller groups besides") && !page.contains("more reasons."))
        #expect(page.contains("<td rowspan=\"1\">failed</td><td rowspan=\"1\"><code>(none)</code></td>"))
        #expect(page.contains("<td>\(String(repeating: "m", count: 100))</td>"))
        #expect(page.contains("--status failed --status rejected --status pending --status in_flight --format csv"))
        #expect(page.contains("<table class=\"examples conflicts\">"))
        #expect(page.contains("Rows that changed in run 7 against run 6: 0"))
        #expect(page.contains("None: every row the run sent ended as it was before."))
        #expect(!page.contains("<table class=\"examples changes\">"))

        attention.failureGroupCount = 5
        attention.failures.append(RowGroup(status: .pending, code: "http_503", count: 3, examples: []))
        attention.rejectionGroupCount = 4
        attention.changes?.counts[.new] = 1
        attention.changes?.examples[.new] = [
            ChangeExample(profileId: "p2", originalTransactionId: "t2", before: "not sent yet", after: "restored")
        ]
        model.attention = [attention]
        page = Self.render(model)
        #expect(page.contains("and 3 smaller groups besides these 7 rows."))
        #expect(page.contains("and 3 more reasons."))
        #expect(page.contains("--changes --run 7 --since-run 6 --format table"))

        var two = Self.model([Self.journal("/j/a.sqlite"), Self.journal("/j/b.sqlite")])
        two.attention = [JournalAttention(path: "/j/a.sqlite")]
        page = Self.render(two)
        #expect(page.contains("The lists below cover the first 1 of 2 journals"))
        #expect(page.contains("<h3 class=\"journal\">/j/a.sqlite</h3>"))
    }

    @Test func theVerdictSaysWhatIsOwedHeldAndRefused() {
        var journal = Self.journal("/j/journal.sqlite", [.restored: 3, .held: 0])
        journal.firstStartedAt = "2026-11-29T16:40:00Z"
        journal.lastActivityAt = "2026-11-29T16:43:20Z"
        journal.mergedShards = ["shard-0.sqlite: run 2, finished"]
        var run = LatestRun(id: 2, startedAt: "2026-11-29T16:40:00Z", state: "stopped", exitWords: "words")
        run.stopMessage = "the key was refused"
        journal.latestRun = run
        var page = Self.render(Self.model([journal]))
        #expect(page.contains("<p class=\"headline\">3 rows: 3 restored, none owed.</p>"))
        #expect(page.contains("<tr class=\"status-held zero\">"))
        #expect(page.contains("<code>pending</code> <span class=\"words\">pending (owed)</span></th>"))
        #expect(page.contains("<code>restored</code></th>"))
        #expect(page.contains("to 2026-11-29 16:43:20 UTC (3 min 20 s)</dd>"))
        #expect(page.contains("<dd data-fact=\"shards\">merged from 1 shard journal;"))
        #expect(page.contains("<dd data-fact=\"stop\">the key was refused</dd>"))
        #expect(page.contains("<p class=\"next\">nothing to do.</p>"))

        journal.statuses = [.restored: 3, .inFlight: 2, .held: 1]
        journal.inputRejections = ["bad id": 4]
        journal.owed = (0..<40).map { StatusCodeCount(status: .pending, code: "c\($0)", count: 3) }
        journal.nextStep = "resume"
        journal.nextCommand = "botsi-restore run"
        page = Self.render(Self.model([journal]))
        #expect(
            page.contains(
                "<p class=\"headline owed\">6 rows: 3 restored, 2 still owed, 1 held for review; 4 input rows refused "
                    + "by the checks.</p>"))
        #expect(page.contains("<li><code>pending (c0)</code>: 3 rows</li>"))
        #expect(!page.contains("more codes"))
        #expect(page.contains("<p class=\"next\">resume:</p>"))
        journal.owed.append(StatusCodeCount(status: .pending, code: "c40", count: 1))
        journal.selectionLeft = true
        journal.statuses = [.restored: 3]
        page = Self.render(Self.model([journal]))
        #expect(page.contains("and 1 more codes"))
        #expect(page.contains(", none pending (the selection the latest run stopped in is not finished);"))

        let sixteen = (0..<16).map { Self.journal("/j/\($0).sqlite") }
        #expect(!Self.render(Self.model(sixteen)).contains("more journals; status gives each one&#39;s"))
        let seventeen = (0..<17).map { Self.journal("/j/\($0).sqlite") }
        #expect(Self.render(Self.model(seventeen)).contains("and 1 more journals; status gives each one&#39;s"))
    }

    @Test func theShardsAndHistoryListEveryJournalAndRun() {
        var first = Self.journal("/j/a.sqlite")
        first.runCount = 1
        var run = LatestRun(id: 7, startedAt: "2026-11-29T16:40:00Z", state: "stopped", exitWords: "")
        run.exitCode = 75
        first.latestRun = run
        var second = Self.journal("/j/b.sqlite")
        second.runCount = 1
        var model = Self.model([first, second])
        var line = RunLine(id: 7, startedAt: "2026-11-29T16:40:00Z", state: "stopped")
        line.statuses = [
            "restored": 11, "nothing_to_restore": 12, "profile_not_found": 13, "failed": 2, "rejected": 3, "pending": 4,
            "in_flight": 6,
        ]
        line.rejectedInput = 17
        line.requests = 19
        model.history = [
            HistoryRun(journal: 0, line: line, options: "o"), HistoryRun(journal: 1, line: line, options: "o"),
        ]
        let page = Self.render(model)
        #expect(page.contains("<td>run 7: stopped, exit 75</td>"))
        #expect(page.contains("Every run (2); the same as:"))
        let history = Self.figure(page, "chart-history")
        #expect(history.contains("<thead><tr><th scope=\"col\">journal</th><th scope=\"col\">run</th>"))
        #expect(
            history.contains(
                "<td class=\"num\">11</td><td class=\"num\">12</td><td class=\"num\">13</td><td class=\"num\">5</td>"
                    + "<td class=\"num\">10</td><td class=\"num\">17</td><td class=\"num\">19</td>"))
        #expect(model.totalInputRejections == 0)
        model.journals[0].inputRejections = ["a": 3, "b": 2]
        #expect(model.totalInputRejections == 5)
    }
}
