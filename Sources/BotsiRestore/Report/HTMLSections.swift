import BotsiBasics
import BotsiJournal
import Foundation

/// The page's sections after the verdict: the run over time, distributions, what needs a person,
/// the run history. Each draws from the model only.
enum HTMLSections {
    static func command(_ page: inout HTMLWriter, _ command: String) {
        page.raw("<pre class=\"command\"><code>")
        page.text(command, limit: HTMLReportLimits.commandScalars)
        page.raw("</code></pre>\n")
    }

    // MARK: Over time

    static func overTime(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<section id=\"over-time\">\n<h2>Over time</h2>\n")
        let buckets = model.series?.buckets ?? []
        let width = Double(model.series?.bucketMilliseconds ?? 1000) / 1000
        let span = buckets.reduce(0) { $0 + $1.seconds }
        page.open("p", ["class": "note"])
        if buckets.isEmpty {
            page.text("The charts show \(model.runScope), which sent no request: there is nothing to draw yet.")
        } else {
            page.text(
                "The charts show \(model.runScope): \(HTMLNumbers.duration(span)) in \(buckets.count) intervals of "
                    + "\(HTMLNumbers.duration(width)) each.")
        }
        page.close("p")
        requestsChart(&page, model, buckets: buckets, width: width)
        HTMLPaceChart.draw(&page, model, buckets: buckets, span: span)
        latencyChart(&page, model.series, buckets: buckets, width: width, span: span)
        page.raw("</section>\n")
    }

    static let classStyles: [StaticString] = ["k0", "k1", "k2", "k3", "k4", "k5"]

    private static func requestsChart(
        _ page: inout HTMLWriter, _ model: HTMLReportModel, buckets: [SeriesBucket], width: Double
    ) {
        let series = RequestClass.allCases.map { kind in
            HTMLChart.Series(
                label: kind.label, style: classStyles[kind.rawValue],
                values: buckets.map { $0.seconds > 0 ? Double($0.requests[kind.rawValue]) / $0.seconds : 0 })
        }
        let totals = RequestClass.allCases.map { kind in buckets.reduce(0) { $0 + $1.requests[kind.rawValue] } }
        let peak = buckets.map { $0.seconds > 0 ? Double($0.total) / $0.seconds : 0 }.max() ?? 0
        var description = "Requests per second, stacked by outcome. "
        description += RequestClass.allCases.map { "\($0.label): \(HTMLNumbers.count(totals[$0.rawValue]))" }
            .joined(separator: ", ")
        description += "; peak \(HTMLNumbers.decimal(peak)) per second."
        HTMLChart.figure(
            &page, id: "chart-requests", title: "Requests per second by outcome", description: description,
            legend: series,
            draw: { page in
                let (top, ticks) = HTMLChart.axis(peak)
                HTMLChart.yAxis(&page, top: top, ticks: ticks, label: "requests per second")
                HTMLChart.timeAxis(&page, seconds: buckets.reduce(0) { $0 + $1.seconds })
                if buckets.isEmpty { HTMLChart.emptyNote(&page, "no request in this run") }
                HTMLChart.stackedBars(&page, series, slots: buckets.count, top: top)
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">from</th><th scope=\"col\">UTC</th>")
                for kind in RequestClass.allCases { page.element("th", ["scope": "col", "class": "num"], kind.label) }
                page.raw("<th scope=\"col\" class=\"num\">total</th><th scope=\"col\" class=\"num\">per second</th>")
                page.raw("</tr></thead><tbody>\n")
                for (index, bucket) in buckets.enumerated() {
                    bucketHeader(&page, model.series, index: index, width: width)
                    for count in bucket.requests { page.element("td", ["class": "num"], HTMLNumbers.count(count)) }
                    page.element("td", ["class": "num"], HTMLNumbers.count(bucket.total))
                    page.element(
                        "td", ["class": "num"],
                        HTMLNumbers.decimal(bucket.seconds > 0 ? Double(bucket.total) / bucket.seconds : 0))
                    page.raw("</tr>\n")
                }
                if buckets.isEmpty { page.raw("<tr><td colspan=\"10\">no request in this run</td></tr>\n") }
                page.raw("</tbody>")
            })
    }

    /// A data table row's first two cells: time since the start, and the UTC time of day.
    static func bucketHeader(_ page: inout HTMLWriter, _ series: RunSeries?, index: Int, width: Double) {
        page.raw("<tr>")
        page.element("th", ["scope": "row"], HTMLNumbers.duration(Double(index) * width))
        let start = Double((series?.startMilliseconds ?? 0) + Int64(index) * (series?.bucketMilliseconds ?? 0)) / 1000
        page.element("td", HTMLNumbers.time(Timestamp.string(Date(timeIntervalSince1970: start))))
    }

    private static func latencyChart(
        _ page: inout HTMLWriter, _ runSeries: RunSeries?, buckets: [SeriesBucket], width: Double, span: Double
    ) {
        let series = [
            HTMLChart.Series(label: "p50", style: "l-p50", values: buckets.map(\.p50)),
            HTMLChart.Series(label: "p90", style: "l-p90", values: buckets.map(\.p90)),
            HTMLChart.Series(label: "p99", style: "l-p99", values: buckets.map(\.p99)),
        ]
        let peak = buckets.compactMap(\.p99).max() ?? 0
        HTMLChart.figure(
            &page, id: "chart-latency", title: "Latency per interval: p50, p90, p99",
            description: "Reply latency in milliseconds per interval: the median (solid), p90 (dashed) and p99 "
                + "(dotted); the highest p99 is \(HTMLNumbers.milliseconds(peak)).",
            legend: series,
            draw: { page in
                let (top, ticks) = HTMLChart.axis(peak)
                HTMLChart.yAxis(&page, top: top, ticks: ticks, label: "milliseconds")
                HTMLChart.timeAxis(&page, seconds: span)
                if buckets.isEmpty { HTMLChart.emptyNote(&page, "no reply in this run") }
                HTMLChart.lines(&page, series, slots: buckets.count, top: top)
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">from</th><th scope=\"col\">UTC</th>")
                page.raw("<th scope=\"col\" class=\"num\">p50</th><th scope=\"col\" class=\"num\">p90</th>")
                page.raw("<th scope=\"col\" class=\"num\">p99</th></tr></thead><tbody>\n")
                for (index, bucket) in buckets.enumerated() where bucket.p50 != nil {
                    bucketHeader(&page, runSeries, index: index, width: width)
                    for value in [bucket.p50, bucket.p90, bucket.p99] {
                        page.element("td", ["class": "num"], value.map(HTMLNumbers.milliseconds) ?? "")
                    }
                    page.raw("</tr>\n")
                }
                if buckets.allSatisfy({ $0.p50 == nil }) {
                    page.raw("<tr><td colspan=\"5\">no reply in this run</td></tr>\n")
                }
                page.raw("</tbody>")
            })
    }

    // MARK: Shards

    static func shardTable(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<h3>Shards</h3>\n<table class=\"shards\" id=\"shards\"><thead><tr><th scope=\"col\">journal</th>")
        page.raw("<th scope=\"col\" class=\"num\">runs</th><th scope=\"col\">latest run</th>")
        for status in HTMLPage.statusOrder {
            page.element("th", ["scope": "col", "class": "num"], status.rawValue)
        }
        page.raw("<th scope=\"col\" class=\"num\">input refused</th></tr></thead><tbody>\n")
        for (index, journal) in model.journals.enumerated() {
            page.open("tr", ["data-shard": String(index)])
            page.element("th", ["scope": "row"], journal.path, limit: HTMLReportLimits.textScalars)
            page.element("td", ["class": "num"], HTMLNumbers.count(journal.runCount))
            let latest = journal.latestRun.map { run in
                "run \(run.id): \(run.state)" + (run.exitCode.map { ", exit \($0)" } ?? "")
            }
            page.element("td", latest ?? "no run yet", limit: HTMLReportLimits.textScalars)
            for status in HTMLPage.statusOrder {
                page.element("td", ["class": "num"], HTMLNumbers.count(journal.statuses[status] ?? 0))
            }
            page.element("td", ["class": "num"], HTMLNumbers.count(journal.inputRejections.values.reduce(0, +)))
            page.raw("</tr>\n")
        }
        let totals = model.totalStatuses
        page.raw("<tr class=\"total\"><th scope=\"row\">all shards</th>")
        page.element("td", ["class": "num"], HTMLNumbers.count(model.journals.reduce(0) { $0 + $1.runCount }))
        page.raw("<td></td>")
        for status in HTMLPage.statusOrder {
            page.element("td", ["class": "num", "data-total": status.rawValue], HTMLNumbers.count(totals[status] ?? 0))
        }
        page.element("td", ["class": "num"], HTMLNumbers.count(model.totalInputRejections))
        page.raw("</tr>\n</tbody></table>\n")
    }

    // MARK: Run history

    static func history(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<section id=\"history\">\n<h2>Run history</h2>\n")
        let runs = model.history
        let total = model.journals.reduce(0) { $0 + $1.runCount }
        page.open("p", ["class": "note"])
        page.text(
            runs.count < total
                ? "The newest \(runs.count) of \(HTMLNumbers.count(total, "run", "runs")); every run is listed by:"
                : "Every run (\(runs.count)); the same as:")
        page.close("p")
        for journal in model.journals.prefix(HTMLReportLimits.attentionJournals) {
            command(&page, "botsi-restore runs --journal " + RunAdvice.shellQuoted(journal.path))
        }
        let kinds: [(String, StaticString, (RunLine) -> Int)] = [
            ("restored", "k0", { $0.count(.restored) }),
            ("nothing to restore", "k1", { $0.count(.nothingToRestore) }),
            ("profile not found", "k2", { $0.count(.profileNotFound) }),
            ("failed or rejected", "k3", { $0.count(.failed) + $0.count(.rejected) }),
            ("pending", "k4", { $0.count(.pending) + $0.count(.inFlight) }),
            ("held", "k5", { $0.count(.held) }),
        ]
        let series = kinds.map { kind in
            HTMLChart.Series(label: kind.0, style: kind.1, values: runs.map { Double(kind.2($0.line)) })
        }
        let peak = runs.map { run in Double(kinds.reduce(0) { $0 + $1.2(run.line) }) }.max() ?? 0
        HTMLChart.figure(
            &page, id: "chart-history", title: "Rows each run worked on, by the status they ended in",
            description:
                "One bar per run, oldest on the left, \(HTMLNumbers.count(runs.count, "run", "runs")); the data table lists each.",
            legend: series,
            draw: { page in
                let (top, ticks) = HTMLChart.axis(peak)
                HTMLChart.yAxis(&page, top: top, ticks: ticks, label: "rows") { HTMLNumbers.count(Int($0)) }
                if runs.isEmpty { HTMLChart.emptyNote(&page, "no run yet") }
                HTMLChart.stackedBars(&page, series, slots: runs.count, top: top, maxSlotWidth: 48)
                let step = max(1, runs.count / 12)
                for (index, run) in runs.enumerated() where index % step == 0 {
                    let x = HTMLChart.left + (Double(index) + 0.5) * min(HTMLChart.plotWidth / Double(runs.count), 48)
                    page.element(
                        "text",
                        [
                            "class": "tick", "x": HTMLChart.number(x),
                            "y": HTMLChart.number(HTMLChart.top + HTMLChart.plotHeight + 16), "text-anchor": "middle",
                        ], "run \(run.line.id)")
                }
            },
            table: { page in historyTable(&page, model) })
        page.raw("</section>\n")
    }

    private static func historyTable(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        let shards = model.journals.count > 1
        page.raw("<thead><tr>")
        if shards { page.raw("<th scope=\"col\">journal</th>") }
        page.raw(
            """
            <th scope="col">run</th><th scope="col">started</th><th scope="col" class="num">duration</th>\
            <th scope="col">state</th><th scope="col" class="num">exit</th><th scope="col" class="num">restored</th>\
            <th scope="col" class="num">nothing</th><th scope="col" class="num">not found</th>\
            <th scope="col" class="num">failed</th><th scope="col" class="num">pending</th>\
            <th scope="col" class="num">input refused</th><th scope="col" class="num">requests</th>\
            <th scope="col">options</th></tr></thead><tbody>

            """)
        for run in model.history {
            let line = run.line
            page.raw("<tr>")
            if shards { page.element("td", model.journals[run.journal].path, limit: HTMLReportLimits.textScalars) }
            page.element("th", ["scope": "row"], String(line.id))
            page.element("td", HTMLNumbers.time(line.startedAt))
            page.element("td", ["class": "num"], line.durationSeconds.map(HTMLNumbers.duration) ?? "?")
            page.element("td", line.state, limit: HTMLReportLimits.textScalars)
            page.element("td", ["class": "num"], line.exitCode.map(String.init) ?? "–")
            for count in [
                line.count(.restored), line.count(.nothingToRestore), line.count(.profileNotFound),
                line.count(.failed) + line.count(.rejected), line.count(.pending) + line.count(.inFlight),
                line.rejectedInput, line.requests,
            ] {
                page.element("td", ["class": "num"], HTMLNumbers.count(count))
            }
            page.element("td", run.options, limit: HTMLReportLimits.textScalars)
            page.raw("</tr>\n")
        }
        if model.history.isEmpty { page.raw("<tr><td colspan=\"13\">no run yet</td></tr>\n") }
        page.raw("</tbody>")
    }
}
