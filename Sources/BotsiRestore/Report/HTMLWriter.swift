import BotsiBasics

/// The one choke point between text and the page: every text and every attribute value goes
/// through `escape`, so no journal text (an id, a message, server text, a file name) can become
/// markup. Markup itself is only ever a `StaticString` in this file's callers' source: nothing
/// read at run time can reach `raw`.
enum HTMLText {
    /// `text` for HTML text and double- or single-quoted attribute values alike: `& < > " '` as
    /// character references, and every control, bidi control and invisible character first made a
    /// visible escape (`\u202E`), as every other output shows them.
    static func escape(_ text: String, into bytes: inout [UInt8]) {
        for byte in VisibleText.escaped(text).utf8 {
            switch byte {
            case UInt8(ascii: "&"): bytes.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): bytes.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): bytes.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\""): bytes.append(contentsOf: "&quot;".utf8)
            case UInt8(ascii: "'"): bytes.append(contentsOf: "&#39;".utf8)
            default: bytes.append(byte)
            }
        }
    }

    /// At most `limit` scalars of `text`, then `…`: a cell stays a cell whatever a journal holds.
    static func shortened(_ text: String, limit: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(limit))) + "…"
    }
}

/// Writes a page: markup from string literals, everything else escaped by `HTMLText`.
struct HTMLWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(1 << 18) }

    /// Markup as written in the source.
    mutating func raw(_ markup: StaticString) {
        markup.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Text, escaped, cut at `limit` scalars: a sentence of ours by default; a cell of journal text
    /// passes `HTMLReportLimits.textScalars`.
    mutating func text(_ value: String, limit: Int = HTMLReportLimits.sentenceScalars) {
        HTMLText.escape(HTMLText.shortened(value, limit: limit), into: &bytes)
    }

    /// `<tag name="value" …>`, each value escaped.
    mutating func open(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:]) {
        raw("<")
        raw(tag)
        attributeList(attributes)
        raw(">")
    }

    mutating func close(_ tag: StaticString) {
        raw("</")
        raw(tag)
        raw(">")
    }

    /// `<tag>text</tag>`.
    mutating func element(_ tag: StaticString, _ text: String, limit: Int = HTMLReportLimits.sentenceScalars) {
        element(tag, [:], text, limit: limit)
    }

    /// `<tag …>text</tag>`.
    mutating func element(
        _ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String>, _ text: String,
        limit: Int = HTMLReportLimits.sentenceScalars
    ) {
        open(tag, attributes)
        self.text(text, limit: limit)
        close(tag)
    }

    /// `<tag …/>`, for SVG shapes.
    mutating func empty(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String>) {
        raw("<")
        raw(tag)
        attributeList(attributes)
        raw("/>")
    }

    private mutating func attributeList(_ attributes: KeyValuePairs<StaticString, String>) {
        for (name, value) in attributes {
            raw(" ")
            raw(name)
            raw("=\"")
            HTMLText.escape(value, into: &bytes)
            raw("\"")
        }
    }
}

/// Numbers as people read them: `12,345`, `12.5`, `850 ms`, `1.2 s`, `3 min 20 s`.
enum HTMLNumbers {
    /// A count and its noun, singular for one: "1 row", "1,200 rows".
    static func count(_ value: Int, _ singular: String, _ plural: String) -> String {
        "\(count(value)) \(value == 1 ? singular : plural)"
    }

    /// A whole number with thousands separated by commas.
    static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    /// One decimal when below 100 and not whole; grouped otherwise.
    static func decimal(_ value: Double) -> String {
        guard value.isFinite else { return "?" }
        let rounded = value.rounded()
        if abs(value) >= 100 || abs(value - rounded) < 0.05 { return count(Int(rounded)) }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }

    /// A latency: `0.4 ms`, `85 ms`, `1.2 s`, `12 s`, then as `duration`.
    static func milliseconds(_ value: Double) -> String {
        guard value.isFinite else { return "?" }
        if value < 10 { return decimal(value) + " ms" }
        if value < 1000 { return count(Int(value.rounded())) + " ms" }
        return duration(value / 1000)
    }

    /// Time that passed: `0.5 s`, `42 s`, `3 min 20 s`, `2 h 05 min`, `3 d 4 h`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 60 { return decimal(seconds) + " s" }
        let whole = Int(min(seconds, 1e15).rounded())
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if whole < 3600 { return "\(whole / 60) min \(two(whole % 60)) s" }
        if whole < 86400 { return "\(whole / 3600) h \(two(whole % 3600 / 60)) min" }
        return "\(count(whole / 86400)) d \(whole % 86400 / 3600) h"
    }

    /// `12.5%` of `whole`; `0%` when there is no whole.
    static func percent(_ part: Int, of whole: Int) -> String {
        whole > 0 ? decimal(Double(part) * 100 / Double(whole)) + "%" : "0%"
    }

    /// A journal timestamp as `2026-11-29 16:40:00 UTC`; other text as it is.
    static func time(_ timestamp: String) -> String {
        let scalars = Array(timestamp.unicodeScalars)
        guard scalars.count >= 19, scalars[10] == "T" else { return timestamp }
        return String(String.UnicodeScalarView(scalars[0..<10])) + " "
            + String(String.UnicodeScalarView(scalars[11..<19])) + " UTC"
    }
}
