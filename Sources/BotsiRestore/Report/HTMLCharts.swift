import Foundation

/// The page's charts: inline SVG drawn here, no library and no script. Each is a `<figure>` with a
/// `<title>` and `<desc>` for screen readers, a legend in words, and its numbers in a data table
/// beside it; series differ by pattern or dash as well as by colour, so they read without colour.
enum HTMLChart {
    static let width = 720.0
    static let height = 250.0
    static let left = 64.0
    static let right = 60.0
    static let top = 14.0
    static let bottom = 36.0
    static var plotWidth: Double { width - left - right }
    static var plotHeight: Double { height - top - bottom }

    /// One stacked or drawn series: its name, its CSS class (colour and pattern) and its values.
    struct Series {
        var label: String
        var style: StaticString
        var values: [Double?]
    }

    /// The patterns every chart's bars fill with (`url(#k0)` …), defined once per page.
    static func patterns(_ page: inout HTMLWriter) {
        page.raw(
            """
            <svg class="defs" aria-hidden="true" width="0" height="0"><defs>\
            <pattern id="k0" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k0" width="8" height="8"/></pattern>\
            <pattern id="k1" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k1" width="8" height="8"/>\
            <path class="hatch" d="M0,8 L8,0 M-2,2 L2,-2 M6,10 L10,6"/></pattern>\
            <pattern id="k2" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k2" width="8" height="8"/>\
            <circle class="dot" cx="4" cy="4" r="1.4"/></pattern>\
            <pattern id="k3" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k3" width="8" height="8"/>\
            <path class="hatch" d="M0,0 L8,8 M0,8 L8,0"/></pattern>\
            <pattern id="k4" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k4" width="8" height="8"/>\
            <path class="hatch" d="M0,4 L8,4"/></pattern>\
            <pattern id="k5" width="8" height="8" patternUnits="userSpaceOnUse"><rect class="k5" width="8" height="8"/>\
            <path class="hatch" d="M4,0 L4,8"/></pattern>\
            </defs></svg>
            """)
    }

    /// `<figure>` with the SVG drawn by `draw`, the legend, and the data table `table` writes.
    static func figure(
        _ page: inout HTMLWriter, id: String, title: String, description: String, legend: [Series] = [],
        viewHeight: Double = height, draw: (inout HTMLWriter) -> Void, table: (inout HTMLWriter) -> Void
    ) {
        page.open("figure", ["class": "chart", "id": id])
        page.element("figcaption", title)
        page.open(
            "svg",
            [
                "class": "chart", "viewBox": "0 0 \(Int(width)) \(Int(viewHeight))", "role": "img",
                "aria-labelledby": "\(id)-title \(id)-desc", "preserveAspectRatio": "xMidYMid meet",
            ])
        page.element("title", ["id": "\(id)-title"], title)
        page.element("desc", ["id": "\(id)-desc"], description, limit: 2000)
        draw(&page)
        page.close("svg")
        if !legend.isEmpty {
            page.raw("<ul class=\"legend\">")
            for series in legend {
                page.raw("<li>")
                swatch(&page, series.style)
                page.text(series.label)
                page.raw("</li>")
            }
            page.raw("</ul>")
        }
        page.open("details", ["class": "data"])
        page.element("summary", "Data table: " + title)
        page.open("table", ["class": "data", "aria-label": title])
        table(&page)
        page.close("table")
        page.close("details")
        page.close("figure")
    }

    /// A legend's sample of a series: the pattern of a bar, or the dash of a line.
    private static func swatch(_ page: inout HTMLWriter, _ style: StaticString) {
        page.raw("<svg class=\"swatch\" width=\"22\" height=\"12\" aria-hidden=\"true\">")
        if style.utf8Start.pointee == UInt8(ascii: "k") {
            page.empty("rect", ["x": "0", "y": "0", "width": "22", "height": "12", "fill": "url(#\(style))"])
        } else {
            page.empty("line", ["x1": "0", "y1": "6", "x2": "22", "y2": "6", "class": "\(style)"])
        }
        page.raw("</svg>")
    }

    /// A maximum worth an axis: 1, 2 or 5 times a power of ten at or above `value`, and its ticks.
    static func axis(_ value: Double) -> (top: Double, ticks: [Double]) {
        guard value > 0, value.isFinite else { return (1, [0, 0.5, 1]) }
        let power = pow(10, floor(log10(value)))
        let top = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= value * 0.999 } ?? 10 * power
        let steps = top / power == 2 ? 4 : 5
        return (top, (0...steps).map { top * Double($0) / Double(steps) })
    }

    static func y(_ value: Double, top: Double) -> Double {
        Self.top + plotHeight * (1 - min(max(value / top, 0), 1))
    }

    static func number(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }

    /// The y axis: grid lines with labels, and the axis's name.
    static func yAxis(
        _ page: inout HTMLWriter, top scale: Double, ticks: [Double], label: String, right: Bool = false,
        format: (Double) -> String = HTMLNumbers.decimal
    ) {
        for tick in ticks {
            let y = number(Self.y(tick, top: scale))
            if !right {
                page.empty(
                    "line", ["class": "grid", "x1": number(left), "x2": number(width - Self.right), "y1": y, "y2": y])
            }
            page.element(
                "text",
                [
                    "class": "tick", "x": number(right ? width - Self.right + 6 : left - 6), "y": y,
                    "text-anchor": right ? "start" : "end", "dominant-baseline": "middle",
                ], format(tick))
        }
        page.element(
            "text",
            [
                "class": "axis-label", "x": number(right ? width - 12 : 12), "y": number(Self.top + plotHeight / 2),
                "text-anchor": "middle",
                "transform":
                    "rotate(\(right ? 90 : -90) \(number(right ? width - 12 : 12)) \(number(Self.top + plotHeight / 2)))",
            ], label)
    }

    /// The time axis of a run: elapsed time at whole steps.
    static func timeAxis(_ page: inout HTMLWriter, seconds: Double) {
        let steps: [Double] = [
            1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172_800,
        ]
        let step = steps.first { seconds / $0 <= 8 } ?? (seconds / 8 / 86400).rounded(.up) * 86400
        var tick = 0.0
        while tick <= seconds + 0.001 {
            let x = number(left + plotWidth * tick / max(seconds, 0.001))
            page.empty(
                "line",
                ["class": "axis", "x1": x, "x2": x, "y1": number(top + plotHeight), "y2": number(top + plotHeight + 4)])
            page.element(
                "text", ["class": "tick", "x": x, "y": number(top + plotHeight + 16), "text-anchor": "middle"],
                HTMLNumbers.duration(tick))
            tick += step
        }
        page.element(
            "text",
            [
                "class": "axis-label", "x": number(left + plotWidth / 2), "y": number(height - 4),
                "text-anchor": "middle",
            ],
            "time since the start")
        page.empty(
            "line",
            [
                "class": "axis", "x1": number(left), "x2": number(width - right), "y1": number(top + plotHeight),
                "y2": number(top + plotHeight),
            ])
    }

    /// Bars stacked per slot, the series in order from the bottom.
    static func stackedBars(
        _ page: inout HTMLWriter, _ series: [Series], slots: Int, top: Double, maxSlotWidth: Double = .infinity
    ) {
        let slotWidth = min(plotWidth / Double(max(slots, 1)), maxSlotWidth)
        let gap = slotWidth > 4 ? min(slotWidth * 0.15, 3) : 0
        for slot in 0..<slots {
            var base = 0.0
            for line in series {
                guard let value = line.values[slot], value > 0 else { continue }
                let y0 = y(base, top: top)
                let y1 = y(base + value, top: top)
                base += value
                page.empty(
                    "rect",
                    [
                        "x": number(left + Double(slot) * slotWidth + gap / 2), "y": number(y1),
                        "width": number(max(slotWidth - gap, 0.5)), "height": number(max(y0 - y1, 0.3)),
                        "fill": "url(#\(line.style))", "class": "bar",
                    ])
            }
        }
    }

    /// Lines through the slots' middles, broken where a value is missing, each named at its end.
    static func lines(_ page: inout HTMLWriter, _ series: [Series], slots: Int, top: Double, endLabels: Bool = true) {
        let slotWidth = plotWidth / Double(max(slots, 1))
        for line in series {
            var runs: [[String]] = [[]]
            var last: (Double, Double)?
            for slot in 0..<slots {
                guard let value = line.values[slot] else {
                    if !(runs.last?.isEmpty ?? true) { runs.append([]) }
                    continue
                }
                let point = (left + (Double(slot) + 0.5) * slotWidth, y(value, top: top))
                runs[runs.count - 1].append("\(number(point.0)),\(number(point.1))")
                last = point
            }
            for points in runs where !points.isEmpty {
                // A lone point is drawn as a short dash, so it shows.
                let drawn = points.count == 1 ? [points[0], points[0]] : points
                page.empty(
                    "polyline", ["class": "\(line.style)", "points": drawn.joined(separator: " "), "fill": "none"])
            }
            if endLabels, let last {
                page.element(
                    "text",
                    [
                        "class": "line-label", "x": number(min(last.0 + 4, width - right + 2)), "y": number(last.1),
                        "dominant-baseline": "middle",
                    ], line.label, limit: 24)
            }
        }
    }

    /// Bars over named categories, with each count written above its bar.
    static func categoryBars(_ page: inout HTMLWriter, labels: [String], values: [Int], style: StaticString) {
        let (scale, ticks) = axis(Double(values.max() ?? 0))
        yAxis(&page, top: scale, ticks: ticks, label: "rows") { HTMLNumbers.count(Int($0)) }
        let slot = plotWidth / Double(max(labels.count, 1))
        for (index, label) in labels.enumerated() {
            let x = left + Double(index) * slot
            let y0 = y(0, top: scale)
            let y1 = y(Double(values[index]), top: scale)
            if values[index] > 0 {
                page.empty(
                    "rect",
                    [
                        "x": number(x + slot * 0.15), "y": number(y1), "width": number(slot * 0.7),
                        "height": number(max(y0 - y1, 0.5)), "fill": "url(#\(style))", "class": "bar",
                    ])
            }
            page.element(
                "text",
                ["class": "value", "x": number(x + slot / 2), "y": number(y1 - 4), "text-anchor": "middle"],
                HTMLNumbers.count(values[index]))
            page.element(
                "text",
                [
                    "class": "tick", "x": number(x + slot / 2), "y": number(Self.top + plotHeight + 16),
                    "text-anchor": "middle",
                ],
                label, limit: 16)
        }
        page.empty(
            "line",
            [
                "class": "axis", "x1": number(left), "x2": number(width - right), "y1": number(Self.top + plotHeight),
                "y2": number(Self.top + plotHeight),
            ])
    }
}

extension HTMLChart {
    /// Horizontal bars, one row per label, for lists too long to stand under vertical bars.
    static func horizontalBars(_ page: inout HTMLWriter, labels: [String], values: [Int], styles: [StaticString]) {
        let rowHeight = 18.0
        let labelWidth = 300.0
        let barWidth = width - labelWidth - 90
        let scale = Double(max(values.max() ?? 1, 1))
        for (index, label) in labels.enumerated() {
            let y = 8 + Double(index) * rowHeight
            page.element(
                "text",
                [
                    "class": "tick", "x": number(labelWidth - 8), "y": number(y + rowHeight / 2),
                    "text-anchor": "end", "dominant-baseline": "middle",
                ], label, limit: 48)
            let length = max(barWidth * Double(values[index]) / scale, 0.5)
            page.empty(
                "rect",
                [
                    "x": number(labelWidth), "y": number(y + 3), "width": number(length),
                    "height": number(rowHeight - 6), "fill": "url(#\(styles[index]))", "class": "bar",
                ])
            page.element(
                "text",
                [
                    "class": "value", "x": number(labelWidth + length + 6), "y": number(y + rowHeight / 2),
                    "dominant-baseline": "middle",
                ], HTMLNumbers.count(values[index]))
        }
    }

    /// The height a `horizontalBars` chart of `rows` rows needs.
    static func horizontalBarsHeight(rows: Int) -> Double { 16 + Double(max(rows, 1)) * 18 }

    /// What an empty chart says in its middle.
    static func emptyNote(_ page: inout HTMLWriter, _ words: String) {
        page.element(
            "text",
            [
                "class": "empty-chart", "x": number(width / 2), "y": number(top + plotHeight / 2),
                "text-anchor": "middle",
            ], words)
    }
}
