import BotsiBasics
import BotsiInput
import BotsiJournal
import Foundation

/// `report --format html`: one self-contained page drawn from an `HTMLReportModel`. No script, no
/// request for anything outside the file (its Content-Security-Policy forbids both), every text
/// escaped by `HTMLText`, charts drawn by `HTMLChart`.
public enum HTMLPage {
    /// The page's bytes (UTF-8).
    public static func render(_ model: HTMLReportModel) -> [UInt8] {
        var page = HTMLWriter()
        page.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        page.empty("meta", ["http-equiv": "Content-Security-Policy", "content": contentSecurityPolicy])
        page.raw(
            """

            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light dark">
            <meta name="referrer" content="no-referrer">

            """)
        page.empty("meta", ["name": "generator", "content": "botsi-restore \(model.toolVersion)"])
        page.raw("\n")
        page.element("title", "botsi-restore report: " + model.journals.map(\.path).joined(separator: ", "))
        page.raw("\n<style>")
        page.raw(HTMLStyle.css)
        page.raw("</style>\n</head>\n<body>\n")
        HTMLChart.patterns(&page)
        header(&page, model)
        page.raw("<main>\n")
        verdict(&page, model)
        HTMLSections.overTime(&page, model)
        HTMLSections.distributions(&page, model)
        HTMLSections.attention(&page, model)
        HTMLSections.history(&page, model)
        page.raw("</main>\n<footer>")
        page.text(
            "Written by botsi-restore \(model.toolVersion) at \(HTMLNumbers.time(Timestamp.string(model.generatedAt))) "
                + "from the journal, read-only. Everything on this page is in this file: it loads nothing, runs no "
                + "script, and prints on A4 or Letter.", limit: 1000)
        page.raw("</footer>\n</body>\n</html>\n")
        return page.bytes
    }

    /// Nothing but the page's own style block, by its hash: no script, no style attribute, no load
    /// from anywhere (images only as `data:` URLs), no form, no base URL.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'sha256-\(styleHash)'; img-src data:; base-uri 'none'; form-action 'none'"

    static let styleHash: String = {
        var hash = SHA256()
        HTMLStyle.css.withUTF8Buffer { hash.update(UnsafeRawBufferPointer($0)) }
        return Data(hash.finalize()).base64EncodedString()
    }()

    private static func header(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<header>\n<h1>")
        if model.journals.count == 1 {
            page.text("Restore report: " + URL(fileURLWithPath: model.journals.first?.path ?? "").lastPathComponent)
        } else {
            page.text("Restore report: \(model.journals.count) shards of one job")
        }
        page.raw("</h1>\n<p class=\"sub\">")
        page.text("Generated \(HTMLNumbers.time(Timestamp.string(model.generatedAt))); charts show \(model.runScope).")
        page.raw("</p>\n</header>\n")
    }

    /// The statuses in the order `status` prints them.
    static var statusOrder: [ItemStatus] { StatusReport.order }

    static func statusWords(_ status: ItemStatus) -> String {
        switch status {
        case .restored: "restored"
        case .nothingToRestore: "nothing to restore"
        case .profileNotFound: "profile not found"
        case .rejected: "rejected by the server"
        case .failed: "failed"
        case .pending: "pending (owed)"
        case .inFlight: "in flight (owed)"
        case .held: "held (claimed by another profile)"
        }
    }

    private static func verdict(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<section id=\"verdict\">\n<h2>Verdict</h2>\n")
        let totals = model.totalStatuses
        let rows = totals.values.reduce(0, +)
        let owed = (totals[.pending] ?? 0) + (totals[.inFlight] ?? 0)
        page.open("p", ["class": owed > 0 ? "headline owed" : "headline"])
        var words = "\(HTMLNumbers.count(rows, "row", "rows")): \(HTMLNumbers.count(totals[.restored] ?? 0)) restored"
        let selectionLeft = model.journals.contains(where: \.selectionLeft)
        words +=
            owed > 0
            ? ", \(HTMLNumbers.count(owed)) still owed"
            : selectionLeft ? ", none pending (the selection the latest run stopped in is not finished)" : ", none owed"
        if let held = totals[.held], held > 0 { words += ", \(HTMLNumbers.count(held)) held for review" }
        if model.totalInputRejections > 0 {
            words += "; \(HTMLNumbers.count(model.totalInputRejections)) input rows refused by the checks"
        }
        page.text(words + ".", limit: 1000)
        page.close("p")
        if model.journals.count == 1, let journal = model.journals.first {
            facts(&page, journal)
        } else {
            HTMLSections.shardTable(&page, model)
        }
        page.raw("<h3>Rows by status</h3>\n<table class=\"statuses\" id=\"statuses\"><thead><tr>")
        page.raw("<th scope=\"col\">status</th><th scope=\"col\" class=\"num\">rows</th>")
        page.raw("<th scope=\"col\" class=\"num\">share</th></tr></thead><tbody>\n")
        for status in statusOrder {
            let count = totals[status] ?? 0
            page.open("tr", ["class": count > 0 ? "status-\(status.rawValue)" : "status-\(status.rawValue) zero"])
            page.open("th", ["scope": "row"])
            page.element("code", status.rawValue)
            let words = statusWords(status)
            if words != status.rawValue.replacingOccurrences(of: "_", with: " ") {
                page.raw(" <span class=\"words\">")
                page.text(words)
                page.raw("</span>")
            }
            page.close("th")
            page.element("td", ["class": "num", "data-status": status.rawValue], HTMLNumbers.count(count))
            page.element("td", ["class": "num"], HTMLNumbers.percent(count, of: rows))
            page.raw("</tr>\n")
        }
        page.raw("<tr><th scope=\"row\">refused by the input checks (not in the journal's rows)</th>")
        page.element(
            "td", ["class": "num", "data-input-rejections": ""], HTMLNumbers.count(model.totalInputRejections))
        page.raw("<td></td></tr>\n</tbody></table>\n")
        owedAndNext(&page, model)
        page.raw("</section>\n")
    }

    /// One journal's facts: span, runs, the latest run and how it ended.
    private static func facts(_ page: inout HTMLWriter, _ journal: JournalVerdict) {
        page.raw("<dl class=\"facts\">\n")
        fact(&page, "journal", journal.path)
        if let first = journal.firstStartedAt, let last = journal.lastActivityAt {
            var span = "\(HTMLNumbers.time(first)) to \(HTMLNumbers.time(last))"
            if let start = Timestamp.date(first), let end = Timestamp.date(last) {
                span += " (\(HTMLNumbers.duration(max(end.timeIntervalSince(start), 0))))"
            }
            fact(&page, "time span", span)
        } else {
            fact(&page, "time span", "no run yet")
        }
        fact(&page, "runs", HTMLNumbers.count(journal.runCount))
        if !journal.mergedShards.isEmpty {
            fact(
                &page, "shards",
                "merged from \(Basics.count(journal.mergedShards.count, "shard journal", "shard journals")); "
                    + "the latest run of each: \(journal.mergedShards.joined(separator: ", ")). The latest run "
                    + "below is one shard's.", key: "shards", limit: HTMLReportLimits.factScalars)
        }
        if let run = journal.latestRun {
            var words = "run \(run.id): \(run.state), started \(HTMLNumbers.time(run.startedAt))"
            if let duration = run.durationSeconds { words += ", \(HTMLNumbers.duration(duration)) long" }
            fact(&page, "latest run", words)
            let exit = run.exitCode.map { "exit \($0): \(run.exitWords)" } ?? run.exitWords
            fact(&page, "exit status", exit, key: "exit")
            if let stop = run.stopMessage { fact(&page, "stopped because", stop, key: "stop") }
            fact(
                &page, "requests",
                "\(HTMLNumbers.count(run.requests, "request", "requests")), \(HTMLNumbers.count(run.retries)) of them retried"
            )
        }
        page.raw("</dl>\n")
    }

    static func fact(
        _ page: inout HTMLWriter, _ name: String, _ value: String, key: String? = nil,
        limit: Int = HTMLReportLimits.messageScalars
    ) {
        page.element("dt", name)
        if let key {
            page.element("dd", ["data-fact": key], value, limit: limit)
        } else {
            page.element("dd", value, limit: limit)
        }
        page.raw("\n")
    }

    /// Why rows are owed, and what to do next with the command that does it.
    private static func owedAndNext(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        let owed = model.journals.flatMap { journal in journal.owed.map { (journal.path, $0) } }
        if !owed.isEmpty {
            page.raw("<h3>Owed rows and why</h3>\n<ul class=\"owed\">\n")
            for (path, count) in owed.prefix(40) {
                page.raw("<li>")
                if model.journals.count > 1 { page.text(path + ": ") }
                page.element(
                    "code", count.status.rawValue + (count.code.map { " (\($0))" } ?? ""),
                    limit: HTMLReportLimits.textScalars)
                page.text(": \(HTMLNumbers.count(count.count, "row", "rows"))")
                page.raw("</li>\n")
            }
            if owed.count > 40 { page.element("li", "and \(owed.count - 40) more codes") }
            page.raw("</ul>\n")
        }
        page.raw("<h3>Next</h3>\n")
        for journal in model.journals.prefix(HTMLReportLimits.nextJournals) {
            page.open("p", ["class": "next"])
            if model.journals.count > 1 { page.text(journal.path + ": ") }
            page.text(
                journal.nextStep + (journal.nextCommand == nil ? "." : ":"), limit: HTMLReportLimits.messageScalars)
            page.close("p")
            if let command = journal.nextCommand { HTMLSections.command(&page, command) }
        }
        if model.journals.count > HTMLReportLimits.nextJournals {
            let paths = model.journals.map { RunAdvice.shellQuoted($0.path) }
            page.element(
                "p", ["class": "note"],
                "and \(model.journals.count - HTMLReportLimits.nextJournals) more journals; status gives each one's:")
            HTMLSections.command(
                &page, "botsi-restore status " + paths.map { "--journal " + $0 }.joined(separator: " "))
        }
    }
}

/// Where people are pointed at the page: `status`, a run's summary and the demo name this command.
public enum HTMLReportAdvice {
    /// The page beside the journal: `migration.sqlite` → `migration.html`.
    public static func pagePath(forJournal journal: String) -> String {
        let url = URL(fileURLWithPath: journal)
        let name = url.deletingPathExtension().lastPathComponent + ".html"
        let directory = (journal as NSString).deletingLastPathComponent
        return directory.isEmpty ? name : directory + "/" + name
    }

    /// `botsi-restore report --journal J --format html --output J.html`.
    public static func command(journalPath: String, output: String? = nil) -> String {
        RunAdvice.reportCommand(
            journalPath: journalPath,
            ["--format", "html", "--output", output ?? pagePath(forJournal: journalPath)])
    }
}
