import BotsiBasics
import BotsiJournal
import BotsiRestore
import Foundation

extension ReportCommand {
    /// `--format html`: one page for people, from one journal or the shards of one job, read-only
    /// (also while runs hold them). `--run` picks the run the charts show (one journal only).
    static func html(_ settings: ReportSettings) throws -> Int32 {
        try refuse(
            [
                ("--status", !settings.statuses.isEmpty), ("--code", !settings.codes.isEmpty),
                ("--since", settings.since != nil), ("--changes", settings.changes),
                ("--since-run", settings.sinceRun != nil), ("--conflicts", settings.conflicts),
                ("--columns", settings.columns != nil),
            ],
            with: "--format html")
        let paths = settings.allJournals
        guard paths.count <= HTMLReportLimits.journals else {
            throw UsageError(
                message: "--format html reads at most \(HTMLReportLimits.journals) journals at once, \(paths.count) "
                    + "were given; merge some shards first (botsi-restore merge)")
        }
        if paths.count > 1, let run = settings.run, run != "latest" {
            throw UsageError(
                message: "--run \(run) names a run of one journal; with several journals the page shows the "
                    + "latest run of each")
        }
        return try withReportOutput(settings, journals: paths) { journals, sink in
            try Journal.checkNamedOnce(Array(zip(paths, journals)).map { (path: $0.0, journal: $0.1) })
            let runID = try settings.run.map { try resolveRun($0, journal: journals[0]) }
            let model = try HTMLReportReader.read(
                Array(zip(paths, journals)).map { (path: $0.0, journal: $0.1) }, runID: paths.count > 1 ? nil : runID,
                now: Date(), toolVersion: CLI.version)
            sink.write(bytes: HTMLPage.render(model))
        }
    }
}
