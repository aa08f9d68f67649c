import BotsiBasics
import BotsiJournal
import Foundation
import Testing

@testable import BotsiRestore

/// The page's parts that need no browser: the histogram's error bound, the buckets, the numbers,
/// the escaping and the page's size at the model's every cap.
@Suite("report --format html: model and page")
struct HTMLReportModelTests {
    @Test func percentilesFromTheHistogramAreWithinOnePercent() {
        for seed in [1, 2, 3] as [UInt64] {
            var random = SplitMix64(seed: seed)
            var histogram = LatencyHistogram()
            var values: [Double] = []
            for _ in 0..<20_000 {
                // Latencies from 0.1 ms to 20 s, spread over every decade.
                let value = 0.1 * pow(10, Double(random.next() % 1_000_000) / 1_000_000 * 5.3)
                values.append(value)
                histogram.add(value)
            }
            values.sort()
            for fraction in [0.01, 0.5, 0.9, 0.99, 0.999] {
                let exact = values[Int((fraction * Double(values.count)).rounded(.up)) - 1]
                let estimate = histogram.percentile(fraction) ?? .nan
                #expect(abs(estimate - exact) / exact <= 0.01, "seed \(seed) p\(fraction): \(estimate) for \(exact)")
            }
            #expect(histogram.maximum == values.last && histogram.count == values.count)
        }
        #expect(LatencyHistogram.relativeError <= 0.01)
        #expect(LatencyHistogram().percentile(0.5) == nil)
    }

    @Test func mergedHistogramsEqualOneOfEverySample() {
        var one = LatencyHistogram()
        var left = LatencyHistogram()
        var right = LatencyHistogram()
        for index in 0..<1000 {
            let value = Double(index % 97) * 3.7 + 0.2
            one.add(value)
            if index % 2 == 0 { left.add(value) } else { right.add(value) }
        }
        left.merge(right)
        #expect(left == one)
    }

    @Test func aMinuteAndThreeDaysBothFitTheBuckets() {
        let start: Int64 = 1_800_000_000_000
        let minute = SeriesBuilder(start: start, end: start + 60_000)
        #expect(minute.width == 1000)
        let days = SeriesBuilder(start: start, end: start + 3 * 86_400_000)
        #expect(days.width == 1_800_000)
        for span: Int64 in [1, 999, 59_999, 3_600_000, 7 * 86_400_000, 400 * 86_400_000] {
            var builder = SeriesBuilder(start: start, end: start + span)
            builder.add(
                AttemptSample(
                    startedAtMilliseconds: start, durationMilliseconds: 5, httpStatus: 200, outcome: .status(.restored))
            )
            builder.add(
                AttemptSample(
                    startedAtMilliseconds: start + span, durationMilliseconds: nil, httpStatus: 429, outcome: .retry))
            let series = builder.finish(rateOption: nil, concurrencyOption: nil)
            #expect(series.buckets.count <= HTMLReportLimits.buckets && !series.buckets.isEmpty, "span \(span)")
            #expect(series.buckets.reduce(0) { $0 + $1.total } == 2)
            #expect(series.buckets.last?.requests[RequestClass.throttled.rawValue] == 1, "the last attempt lands last")
            let covered = series.buckets.reduce(0) { $0 + $1.seconds }
            #expect(abs(covered - Double(max(span, 1)) / 1000) < 0.001, "span \(span): \(covered) s covered")
        }
    }

    @Test func numbersAreWrittenForPeople() {
        #expect(HTMLNumbers.count(12345) == "12,345")
        #expect(HTMLNumbers.count(1_234_567) == "1,234,567")
        #expect(HTMLNumbers.count(999) == "999")
        #expect(HTMLNumbers.count(1, "row", "rows") == "1 row")
        #expect(HTMLNumbers.count(1200, "row", "rows") == "1,200 rows")
        #expect(HTMLNumbers.count(0, "row", "rows") == "0 rows")
        #expect(HTMLNumbers.milliseconds(0.42) == "0.4 ms")
        #expect(HTMLNumbers.milliseconds(850) == "850 ms")
        #expect(HTMLNumbers.milliseconds(1234) == "1.2 s")
        #expect(HTMLNumbers.duration(200) == "3 min 20 s")
        #expect(HTMLNumbers.duration(7500) == "2 h 05 min")
        #expect(HTMLNumbers.duration(3 * 86400 + 4 * 3600) == "3 d 4 h")
        #expect(HTMLNumbers.percent(1, of: 8) == "12.5%")
        #expect(HTMLNumbers.time("2026-11-29T16:40:00.123Z") == "2026-11-29 16:40:00 UTC")
    }

    @Test func everyTextIsEscapedForTextAndAttributes() {
        var bytes: [UInt8] = []
        HTMLText.escape("<a href='x' title=\"y\">&\u{202E}\u{1B}</a>", into: &bytes)
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;&amp;\\u202E\\u001B&lt;/a&gt;")
    }

    @Test func theStyleBlockIsTheOneTheContentSecurityPolicyAllows() {
        let page = String(decoding: HTMLPage.render(Self.model(journals: 1, hostile: "x")), as: UTF8.self)
        #expect(page.contains("default-src &#39;none&#39;; style-src &#39;sha256-\(HTMLPage.styleHash)&#39;;"))
        #expect(!page.contains(" style=\""), "a style attribute would need 'unsafe-inline'")
        #expect(page.components(separatedBy: "<style>").count == 2)
    }

    /// Every list at its cap, every journal text at its longest and made of what escapes the most
    /// (a tag character is 12 bytes once escaped): the page still stays under 1.5 MB.
    @Test(arguments: [1, HTMLReportLimits.journals]) func thePageStaysUnderItsBoundAtEveryCap(journals: Int) {
        let hostile = String(repeating: "\u{E0041}", count: 400)
        let page = HTMLPage.render(Self.model(journals: journals, hostile: hostile))
        #expect(page.count < 1_500_000, "\(page.count) bytes for \(journals) journals")
        #expect(!String(decoding: page, as: UTF8.self).unicodeScalars.contains("\u{E0041}"))
    }

    static func model(journals count: Int, hostile: String) -> HTMLReportModel {
        typealias Limits = HTMLReportLimits
        let many = count > 1
        let journals = (0..<count).map { index in
            var journal = JournalVerdict(
                path: "/var/lib/botsi-restore/journals/shard-\(index).sqlite",
                statuses: Dictionary(uniqueKeysWithValues: ItemStatus.allCases.map { ($0, 123_456) }))
            journal.owed = (0..<50).map { StatusCodeCount(status: .pending, code: hostile + "\($0)", count: 9) }
            journal.inputRejections = [hostile: 3]
            var run = LatestRun(id: 7, startedAt: "2026-11-29T16:40:00.123Z", state: "stopped", exitWords: "exit")
            run.stopMessage = hostile
            journal.latestRun = run
            journal.nextStep = hostile
            journal.nextCommand = "botsi-restore run --journal x --base-url " + hostile
            return journal
        }
        var model = HTMLReportModel(generatedAt: Date(), toolVersion: "test", journals: journals, runScope: hostile)
        var series = RunSeries(startMilliseconds: 0, bucketMilliseconds: 1_800_000, buckets: [])
        series.buckets = (0..<Limits.buckets).map { index in
            var bucket = SeriesBucket(seconds: 1800)
            bucket.requests = RequestClass.allCases.map { $0.rawValue * 1000 + index }
            (bucket.p50, bucket.p90, bucket.p99) = (12.5, 80.25, 2500.125)
            (bucket.sendRateLimit, bucket.concurrency) = (33.3, 16)
            return bucket
        }
        series.hasPacerSamples = true
        model.series = series
        for value in stride(from: 0.05, to: 3_600_000, by: 997) { model.latency.add(value) }
        model.attemptsPerRow = Dictionary(uniqueKeysWithValues: (1...40).map { ($0, $0 * 1000) })
        model.outcomes = (0..<Limits.outcomeGroups).map {
            AttemptOutcomeCount(outcome: .retry, httpStatus: 500 + $0, code: hostile, count: 1000 - $0)
        }
        model.outcomesLeftOut = 5
        let example = ExampleRow(
            profileId: hostile, originalTransactionId: hostile, status: .failed, code: hostile, source: hostile,
            message: hostile)
        let groups = many ? Limits.shardGroups : Limits.failureGroups
        let examples = many ? Limits.shardExamples : Limits.examples
        let group = RowGroup(
            status: .failed, code: hostile, count: 5, examples: Array(repeating: example, count: examples))
        model.attention = journals.prefix(Limits.attentionJournals).map { journal in
            var attention = JournalAttention(path: journal.path)
            attention.failures = Array(repeating: group, count: groups)
            attention.failureGroupCount = 99
            attention.rejections = Array(repeating: group, count: groups)
            attention.rejectionGroupCount = 99
            attention.conflicts = Array(
                repeating: ClaimGroup(
                    originalTransactionId: hostile, profiles: 9,
                    claims: Array(repeating: example, count: many ? 2 : Limits.claimsPerGroup)),
                count: many ? Limits.shardGroups : Limits.conflictGroups)
            var changes = ChangeSummary(earlierRun: 6, laterRun: 7)
            for kind in ChangeKind.allCases {
                changes.counts[kind] = 10
                changes.examples[kind] = Array(
                    repeating: ChangeExample(
                        profileId: hostile, originalTransactionId: hostile, before: hostile, after: hostile),
                    count: many ? 1 : Limits.changeExamples)
            }
            attention.changes = changes
            return attention
        }
        model.history = (0..<Limits.historyRuns).map { index in
            var line = RunLine(id: Int64(index + 1), startedAt: "2026-11-29T16:40:00.123Z", state: hostile)
            line.statuses = ["restored": 1000, "pending": 5]
            line.exitCode = 75
            line.durationSeconds = 3600
            return HistoryRun(journal: index % count, line: line, options: hostile)
        }
        return model
    }
}
