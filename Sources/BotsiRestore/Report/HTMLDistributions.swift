import BotsiBasics
import BotsiJournal
import Foundation

/// The send rate the run reached, the limit its pacer set and the concurrency in force.
enum HTMLPaceChart {
    static func draw(_ page: inout HTMLWriter, _ model: HTMLReportModel, buckets: [SeriesBucket], span: Double) {
        let pacer = model.series?.hasPacerSamples ?? false
        let achieved = buckets.map { $0.seconds > 0 ? Double($0.total) / $0.seconds : 0 }
        let rateOption = model.series?.rateOption
        let concurrencyOption = model.series?.concurrencyOption
        let limits: [Double?] = pacer ? buckets.map(\.sendRateLimit) : buckets.map { _ in rateOption }
        let concurrency: [Double?] =
            pacer
            ? buckets.map { $0.concurrency.map(Double.init) } : buckets.map { _ in concurrencyOption.map(Double.init) }
        let top = HTMLChart.axis(max(achieved.max() ?? 0, limits.compactMap { $0 }.max() ?? 0))
        let right = HTMLChart.axis(concurrency.compactMap { $0 }.max() ?? 1)
        let series = [
            HTMLChart.Series(label: "requests sent per second", style: "l-rate", values: achieved),
            HTMLChart.Series(
                label: pacer ? "send-rate limit" : "--rate as given", style: pacer ? "l-limit" : "l-option",
                values: limits),
            HTMLChart.Series(
                label: pacer ? "concurrency (right axis)" : "--concurrency as given (right axis)", style: "l-conc",
                values: concurrency.map { $0.map { $0 * top.top / right.top } }),
        ]
        let description =
            pacer
            ? "The rate the run sent at, the send-rate limit in force (adaptive throttling's, else --rate or the "
                + "shard's share of --job-rate), and the concurrency in force."
            : "The rate the run sent at. This journal does not keep the pacer's rate limit or concurrency over time "
                + "(only the run's options): the other lines are the run's --rate and --concurrency as given."
        HTMLChart.figure(
            &page, id: "chart-pace", title: "Send rate, rate limit and concurrency", description: description,
            legend: series,
            draw: { page in
                HTMLChart.yAxis(&page, top: top.top, ticks: top.ticks, label: "requests per second")
                HTMLChart.yAxis(&page, top: right.top, ticks: right.ticks, label: "concurrency", right: true)
                HTMLChart.timeAxis(&page, seconds: span)
                if buckets.isEmpty { HTMLChart.emptyNote(&page, "no request in this run") }
                HTMLChart.lines(&page, series, slots: buckets.count, top: top.top, endLabels: false)
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">from</th><th scope=\"col\">UTC</th>")
                page.raw("<th scope=\"col\" class=\"num\">sent per second</th>")
                page.element("th", ["scope": "col", "class": "num"], pacer ? "rate limit" : "--rate")
                page.element("th", ["scope": "col", "class": "num"], pacer ? "concurrency" : "--concurrency")
                page.raw("</tr></thead><tbody>\n")
                let width = Double(model.series?.bucketMilliseconds ?? 1000) / 1000
                for index in buckets.indices {
                    HTMLSections.bucketHeader(&page, model.series, index: index, width: width)
                    page.element("td", ["class": "num"], HTMLNumbers.decimal(achieved[index]))
                    page.element("td", ["class": "num"], limits[index].map(HTMLNumbers.decimal) ?? "none")
                    page.element("td", ["class": "num"], concurrency[index].map { HTMLNumbers.count(Int($0)) } ?? "")
                    page.raw("</tr>\n")
                }
                if buckets.isEmpty { page.raw("<tr><td colspan=\"5\">no request in this run</td></tr>\n") }
                page.raw("</tbody>")
            })
        if !pacer {
            page.element(
                "p", ["class": "note"],
                "This journal keeps no record of the pacer over time; a journal that does shows the send-rate limit "
                    + "adaptive throttling set and the concurrency in force, interval by interval.", limit: 1000)
        }
    }
}

extension HTMLSections {
    // MARK: Distributions

    static func distributions(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<section id=\"distributions\">\n<h2>Distributions</h2>\n<h3>Latency</h3>\n")
        let latency = model.latency
        page.raw("<table class=\"percentiles\" id=\"latency-percentiles\"><thead><tr>")
        page.raw("<th scope=\"col\">replies</th><th scope=\"col\" class=\"num\">p50</th>")
        page.raw("<th scope=\"col\" class=\"num\">p90</th><th scope=\"col\" class=\"num\">p99</th>")
        page.raw("<th scope=\"col\" class=\"num\">max</th></tr></thead><tbody><tr>")
        page.element("td", HTMLNumbers.count(latency.count))
        for fraction in [0.5, 0.9, 0.99] {
            page.element("td", ["class": "num"], latency.percentile(fraction).map(HTMLNumbers.milliseconds) ?? "–")
        }
        page.element("td", ["class": "num"], latency.maximum.map(HTMLNumbers.milliseconds) ?? "–")
        page.raw("</tr></tbody></table>\n")
        page.element(
            "p", ["class": "note"],
            "Percentiles come from a histogram of logarithmic buckets each 2% wide: each is within "
                + "\(HTMLNumbers.decimal(LatencyHistogram.relativeError * 100))% of the exact value; the maximum is "
                + "exact.", limit: 1000)
        latencyHistogram(&page, latency)
        attemptsChart(&page, model.attemptsPerRow)
        outcomesChart(&page, model)
        page.raw("</section>\n")
    }

    /// Round edges from below the fastest reply to above the slowest: the finest of three ladders
    /// (1-2-5, 1-1.5-2-3-5-7, or ten steps a decade) that gives at most 30 ranges.
    static func latencyEdges(_ latency: LatencyHistogram) -> [Double] {
        guard let low = latency.minimum, let high = latency.maximum else { return [] }
        let ladders: [[Double]] = [
            [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8], [1, 1.5, 2, 3, 5, 7], [1, 2, 5],
        ]
        var edges: [Double] = []
        for ladder in ladders {
            edges = []
            var decade = pow(10, floor(log10(max(low, LatencyHistogram.lowest))))
            var step = 0
            while edges.last.map({ $0 <= high }) ?? true {
                edges.append(decade * ladder[step])
                step += 1
                if step == ladder.count {
                    step = 0
                    decade *= 10
                }
            }
            // Only the last edge at or below the fastest reply is kept.
            if let first = edges.lastIndex(where: { $0 <= low }) { edges.removeFirst(first) }
            if edges.count <= 31 { break }
        }
        return edges
    }

    private static func latencyHistogram(_ page: inout HTMLWriter, _ latency: LatencyHistogram) {
        let edges = latencyEdges(latency)
        var counts = edges.isEmpty ? [] : latency.counts(between: edges)
        if counts.count >= 2 {
            // What falls below the first edge or at the last one joins its neighbour.
            counts[1] += counts[0]
            counts[counts.count - 2] += counts[counts.count - 1]
            counts = Array(counts[1..<(counts.count - 1)])
        }
        let labels = edges.dropLast().map(HTMLNumbers.milliseconds)
        HTMLChart.figure(
            &page, id: "chart-latency-histogram", title: "Latency distribution",
            description: "Replies by latency, in ranges 1, 2 and 5 times a power of ten milliseconds wide.",
            draw: { page in
                if counts.isEmpty { HTMLChart.emptyNote(&page, "no reply in this run") }
                HTMLChart.categoryBars(&page, labels: labels, values: counts, style: "k0")
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">from</th><th scope=\"col\">below</th>")
                page.raw("<th scope=\"col\" class=\"num\">replies</th></tr></thead><tbody>\n")
                for (index, count) in counts.enumerated() {
                    page.raw("<tr>")
                    page.element("th", ["scope": "row"], HTMLNumbers.milliseconds(edges[index]))
                    page.element("td", HTMLNumbers.milliseconds(edges[index + 1]))
                    page.element("td", ["class": "num"], HTMLNumbers.count(count))
                    page.raw("</tr>\n")
                }
                if counts.isEmpty { page.raw("<tr><td colspan=\"3\">no reply in this run</td></tr>\n") }
                page.raw("</tbody>")
            })
    }

    private static func attemptsChart(_ page: inout HTMLWriter, _ perRow: [Int: Int]) {
        let most = min(max(perRow.keys.max() ?? 0, 3), 10)
        let labels = (1...most).map { $0 == 10 ? "10+" : String($0) }
        let values = (1...most).map { attempts in
            attempts == 10 ? perRow.filter { $0.key >= 10 }.values.reduce(0, +) : perRow[attempts] ?? 0
        }
        page.raw("<h3>Attempts per row</h3>\n")
        HTMLChart.figure(
            &page, id: "chart-attempts", title: "Rows by the number of requests the run made for them",
            description: "Rows sent once, twice and more in the run: "
                + zip(labels, values).map { "\($0): \(HTMLNumbers.count($1))" }.joined(separator: ", ") + ".",
            draw: { page in
                if perRow.isEmpty { HTMLChart.emptyNote(&page, "no row sent in this run") }
                HTMLChart.categoryBars(&page, labels: labels, values: values, style: "k4")
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">requests</th><th scope=\"col\" class=\"num\">rows</th>")
                page.raw("</tr></thead><tbody>\n")
                for (label, value) in zip(labels, values) {
                    page.raw("<tr>")
                    page.element("th", ["scope": "row"], label)
                    page.element("td", ["class": "num"], HTMLNumbers.count(value))
                    page.raw("</tr>\n")
                }
                page.raw("</tbody>")
            })
    }

    private static func outcomesChart(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        let groups = model.outcomes
        let total = groups.reduce(0) { $0 + $1.count } + model.outcomesLeftOut
        let labels = groups.map { group in
            [group.httpStatus.map(String.init) ?? "no reply", group.code, group.outcome.rawValue].compactMap { $0 }
                .joined(separator: " · ")
        }
        page.raw("<h3>Outcomes by HTTP status and code</h3>\n")
        HTMLChart.figure(
            &page, id: "chart-outcomes", title: "Requests by HTTP status, code and outcome",
            description: "The run's \(HTMLNumbers.count(total, "request", "requests")) by what came back, largest first"
                + (model.outcomesLeftOut > 0
                    ? "; \(HTMLNumbers.count(model.outcomesLeftOut)) in smaller groups." : "."),
            legend: RequestClass.allCases.map {
                HTMLChart.Series(label: $0.label, style: classStyles[$0.rawValue], values: [])
            },
            viewHeight: HTMLChart.horizontalBarsHeight(rows: groups.count),
            draw: { page in
                if groups.isEmpty { HTMLChart.emptyNote(&page, "no request in this run") }
                HTMLChart.horizontalBars(
                    &page, labels: labels, values: groups.map(\.count),
                    styles: groups.map {
                        classStyles[RequestClass.of(outcome: $0.outcome, httpStatus: $0.httpStatus).rawValue]
                    })
            },
            table: { page in
                page.raw("<thead><tr><th scope=\"col\">HTTP status</th><th scope=\"col\">code</th>")
                page.raw("<th scope=\"col\">outcome</th><th scope=\"col\" class=\"num\">requests</th>")
                page.raw("<th scope=\"col\" class=\"num\">share</th></tr></thead><tbody>\n")
                for group in groups {
                    page.raw("<tr>")
                    page.element("th", ["scope": "row"], group.httpStatus.map(String.init) ?? "no reply")
                    page.element("td", group.code ?? "", limit: HTMLReportLimits.textScalars)
                    page.element("td", group.outcome.rawValue)
                    page.element("td", ["class": "num"], HTMLNumbers.count(group.count))
                    page.element("td", ["class": "num"], HTMLNumbers.percent(group.count, of: total))
                    page.raw("</tr>\n")
                }
                if model.outcomesLeftOut > 0 {
                    page.raw("<tr><th scope=\"row\">other</th><td></td><td></td>")
                    page.element("td", ["class": "num"], HTMLNumbers.count(model.outcomesLeftOut))
                    page.element("td", ["class": "num"], HTMLNumbers.percent(model.outcomesLeftOut, of: total))
                    page.raw("</tr>\n")
                }
                if groups.isEmpty { page.raw("<tr><td colspan=\"5\">no request in this run</td></tr>\n") }
                page.raw("</tbody>")
            })
    }
}
