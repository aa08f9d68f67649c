import BotsiBasics
import BotsiJournal
import Foundation

/// "What needs a person": failures by code, refused input rows, conflict groups and what changed
/// since the run before, each a few rows deep and ending in the command that lists them all.
extension HTMLSections {
    static func attention(_ page: inout HTMLWriter, _ model: HTMLReportModel) {
        page.raw("<section id=\"attention\">\n<h2>What needs a person</h2>\n")
        if model.journals.count > model.attention.count {
            page.element(
                "p", ["class": "note"],
                "The lists below cover the first \(model.attention.count) of \(model.journals.count) journals; "
                    + "the commands list the others'.", limit: 400)
        }
        for attention in model.attention {
            if model.journals.count > 1 {
                page.element("h3", ["class": "journal"], attention.path, limit: HTMLReportLimits.textScalars)
            }
            failures(&page, attention)
            rejections(&page, attention)
            conflicts(&page, attention)
            changes(&page, attention)
        }
        page.raw("</section>\n")
    }

    private static func report(_ path: String, _ arguments: [String]) -> String {
        RunAdvice.reportCommand(journalPath: path, arguments)
    }

    /// `<h4>` with the list's name and total.
    private static func listHeading(_ page: inout HTMLWriter, _ words: String, kind: String) {
        page.open("h4", ["class": kind])
        page.text(words, limit: 400)
        page.close("h4")
    }

    private static func failures(_ page: inout HTMLWriter, _ attention: JournalAttention) {
        let total = attention.failures.reduce(0) { $0 + $1.count }
        listHeading(&page, "Failed, rejected and owed rows by code", kind: "failures")
        guard !attention.failures.isEmpty else {
            page.element("p", ["class": "none"], "None: no row failed, was rejected by the server, or is owed.")
            return
        }
        exampleTable(&page, attention.failures, codeHeader: "code")
        if attention.failureGroupCount > attention.failures.count {
            page.element(
                "p", ["class": "note"],
                "and \(attention.failureGroupCount - attention.failures.count) smaller groups besides these "
                    + "\(HTMLNumbers.count(total, "row", "rows")).", limit: 400)
        }
        page.element("p", "All of them:")
        command(
            &page,
            report(
                attention.path,
                [
                    "--status", "failed", "--status", "rejected", "--status", "pending", "--status", "in_flight",
                    "--format", "csv",
                ]))
    }

    private static func rejections(_ page: inout HTMLWriter, _ attention: JournalAttention) {
        listHeading(&page, "Input rows the checks refused, by reason", kind: "rejections")
        guard !attention.rejections.isEmpty else {
            page.element("p", ["class": "none"], "None: every input row passed the checks.")
            return
        }
        exampleTable(&page, attention.rejections, codeHeader: "reason")
        if attention.rejectionGroupCount > attention.rejections.count {
            page.element(
                "p", ["class": "note"],
                "and \(attention.rejectionGroupCount - attention.rejections.count) more reasons.", limit: 400)
        }
        page.element("p", "All of them (with the rows the server rejected):")
        command(&page, report(attention.path, ["--status", "rejected", "--format", "csv"]))
    }

    /// Groups with their count and examples: status or reason, code, rows, then the examples.
    private static func exampleTable(_ page: inout HTMLWriter, _ groups: [RowGroup], codeHeader: String) {
        page.raw("<table class=\"examples\"><thead><tr><th scope=\"col\">status</th>")
        page.element("th", ["scope": "col"], codeHeader)
        page.raw(
            """
            <th scope="col" class="num">rows</th><th scope="col">profileId</th>\
            <th scope="col">originalTransactionId</th><th scope="col">source</th><th scope="col">message</th>\
            </tr></thead><tbody>

            """)
        for group in groups {
            let rows = max(group.examples.count, 1)
            for (index, example) in (group.examples.isEmpty ? [nil] : group.examples.map { $0 }).enumerated() {
                page.raw("<tr>")
                if index == 0 {
                    page.element("td", ["rowspan": String(rows)], group.status.rawValue)
                    page.open("td", ["rowspan": String(rows)])
                    page.element("code", group.code ?? "(none)", limit: HTMLReportLimits.textScalars)
                    page.close("td")
                    page.element("td", ["rowspan": String(rows), "class": "num"], HTMLNumbers.count(group.count))
                }
                page.element("td", example?.profileId ?? "", limit: HTMLReportLimits.textScalars)
                page.element("td", example?.originalTransactionId ?? "", limit: HTMLReportLimits.textScalars)
                page.element("td", example?.source ?? "", limit: HTMLReportLimits.textScalars)
                page.element("td", example?.message ?? "", limit: HTMLReportLimits.messageScalars)
                page.raw("</tr>\n")
            }
        }
        page.raw("</tbody></table>\n")
    }

    private static func conflicts(_ page: inout HTMLWriter, _ attention: JournalAttention) {
        listHeading(
            &page, "Transactions claimed by several profiles: \(HTMLNumbers.count(attention.conflictGroupCount))",
            kind: "conflicts")
        guard !attention.conflicts.isEmpty else {
            page.element("p", ["class": "none"], "None: no original transaction is claimed by two profiles.")
            return
        }
        page.raw(
            """
            <table class="examples conflicts"><thead><tr><th scope="col">originalTransactionId</th>\
            <th scope="col" class="num">profiles</th><th scope="col">profileId</th><th scope="col">status</th>\
            <th scope="col">code</th><th scope="col">source</th></tr></thead><tbody>

            """)
        for group in attention.conflicts {
            for (index, claim) in group.claims.enumerated() {
                page.raw("<tr>")
                if index == 0 {
                    page.element(
                        "td", ["rowspan": String(group.claims.count)], group.originalTransactionId,
                        limit: HTMLReportLimits.textScalars)
                    page.element(
                        "td", ["rowspan": String(group.claims.count), "class": "num"], HTMLNumbers.count(group.profiles)
                    )
                }
                page.element("td", claim.profileId, limit: HTMLReportLimits.textScalars)
                page.element("td", claim.status.rawValue)
                page.element("td", claim.code ?? "", limit: HTMLReportLimits.textScalars)
                page.element("td", claim.source, limit: HTMLReportLimits.textScalars)
                page.raw("</tr>\n")
            }
        }
        page.raw("</tbody></table>\n")
        page.element(
            "p",
            "\(HTMLNumbers.count(attention.conflictRowCount, "row", "rows")) in "
                + "\(HTMLNumbers.count(attention.conflictGroupCount, "group", "groups")); each restore links the profiles of its transaction. All of them:",
            limit: 400)
        command(&page, report(attention.path, ["--conflicts", "--format", "table"]))
    }

    private static func changes(_ page: inout HTMLWriter, _ attention: JournalAttention) {
        guard let changes = attention.changes else {
            listHeading(&page, "Changes since the run before", kind: "changes")
            page.element("p", ["class": "none"], "The journal's first run: nothing to compare with.")
            return
        }
        listHeading(
            &page,
            "Rows that changed in run \(changes.laterRun) against run \(changes.earlierRun): "
                + HTMLNumbers.count(changes.total), kind: "changes")
        guard changes.total > 0 else {
            page.element("p", ["class": "none"], "None: every row the run sent ended as it was before.")
            return
        }
        page.raw(
            """
            <table class="examples changes"><thead><tr><th scope="col">change</th><th scope="col" class="num">rows</th>\
            <th scope="col">profileId</th><th scope="col">originalTransactionId</th><th scope="col">before</th>\
            <th scope="col">after</th></tr></thead><tbody>

            """)
        for kind in ChangeKind.allCases {
            guard let count = changes.counts[kind], count > 0 else { continue }
            let examples = changes.examples[kind] ?? []
            for (index, example) in examples.enumerated() {
                page.raw("<tr>")
                if index == 0 {
                    page.open("td", ["rowspan": String(examples.count)])
                    page.element("code", kind.rawValue)
                    page.close("td")
                    page.element("td", ["rowspan": String(examples.count), "class": "num"], HTMLNumbers.count(count))
                }
                page.element("td", example.profileId, limit: HTMLReportLimits.textScalars)
                page.element("td", example.originalTransactionId, limit: HTMLReportLimits.textScalars)
                page.element("td", example.before, limit: HTMLReportLimits.textScalars)
                page.element("td", example.after, limit: HTMLReportLimits.textScalars)
                page.raw("</tr>\n")
            }
        }
        page.raw("</tbody></table>\n<p>All of them:</p>\n")
        command(
            &page,
            report(
                attention.path,
                [
                    "--changes", "--run", String(changes.laterRun), "--since-run", String(changes.earlierRun),
                    "--format",
                    "table",
                ]))
    }
}
