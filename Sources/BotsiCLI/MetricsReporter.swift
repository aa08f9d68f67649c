import BotsiAPI
import BotsiFiles
import BotsiJournal
import BotsiRestore
import Dispatch
import Foundation
import Synchronization

/// `--metrics-file` and `--metrics-push`: the run's figures in Prometheus text format, written
/// every `interval` while it runs and at its end, and pushed to a Pushgateway at its end. Neither
/// ever changes how the run ends: a failure is a warning.
final class MetricsReporter: Sendable {
    let file: String?
    let pushURL: String?
    let journalPath: String
    /// The run's inputs, which the file must never replace (nor the journal).
    let inputs: [String]
    let rateOption: Double?
    /// The run's proxy options: the push takes the route the run's requests would.
    let proxy: ProxySetting
    let interval: Double
    let warn: @Sendable (String) -> Void
    private let lastWrite = Mutex<Double?>(nil)
    /// Writes happen here, off the runner's queue, one at a time.
    private let queue = DispatchQueue(label: "botsi-restore.metrics")

    /// How long a push may take before the run ends without it.
    static let pushTimeout: Double = 5

    init?(
        file: String?, pushURL: String?, options: RunOptions, interval: Double,
        warn: @escaping @Sendable (String) -> Void
    ) {
        guard file != nil || pushURL != nil else { return nil }
        self.file = file
        self.pushURL = pushURL
        journalPath = options.journalPath
        inputs = options.inputs
        // `--rate`, or this shard's share of `--job-rate`: the cap shows as the limit either way.
        rateOption = options.rateCap
        proxy = ProxySetting(proxy: options.proxy, noProxy: options.noProxy)
        self.interval = interval
        self.warn = warn
    }

    var journalName: String { URL(fileURLWithPath: journalPath).lastPathComponent }

    /// The Pushgateway grouping: job="botsi-restore", journal=<the journal's file name>.
    static func pushTarget(base: String, journalName: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let name = journalName.addingPercentEncoding(withAllowedCharacters: allowed) ?? journalName
        return "\(base)/metrics/job/botsi-restore/journal/\(name)"
    }

    /// A progress tick: writes the file when `interval` has passed since the last write.
    func progress(_ progress: RunProgress) {
        guard file != nil else { return }
        let due = lastWrite.withLock { last -> Bool in
            guard last.map({ progress.elapsed - $0 >= interval }) ?? true else { return false }
            last = progress.elapsed
            return true
        }
        guard due else { return }
        let metrics = RunMetrics(journal: journalName, progress: progress, rateOption: rateOption)
        queue.async { [self] in writeFile(withJournalFacts(metrics).exposition()) }
    }

    /// The end of the run (`summary` nil when it could not start): the file, then the push.
    func finish(summary: RunSummary?, exitCode: Int32) {
        var metrics = RunMetrics(journal: journalName)
        if let summary { metrics = RunMetrics(journal: journalName, summary: summary, rateOption: rateOption) }
        metrics.exitCode = exitCode
        queue.sync { [self] in
            let text = withJournalFacts(metrics).exposition()
            writeFile(text)
            if let pushURL {
                let target = Self.pushTarget(base: pushURL, journalName: journalName)
                if let failure = TextPut.put(
                    url: target, body: text, contentType: "text/plain; version=0.0.4", timeout: Self.pushTimeout,
                    proxy: proxy)
                {
                    warn(
                        "warning: could not push the metrics to the Pushgateway (--metrics-push): \(failure); "
                            + "the run's exit status is unchanged")
                }
            }
        }
    }

    private func withJournalFacts(_ metrics: RunMetrics) -> RunMetrics {
        var metrics = metrics
        // Read-only and in one transaction, so it is safe while the run writes the journal.
        if let journal = try? Journal(path: journalPath, create: false, readOnly: true) {
            defer { journal.close() }
            if let facts = try? journal.metricsFacts(isSuccess: RunMetrics.isSuccess) { metrics.add(facts) }
        }
        return metrics
    }

    /// The journal (under any name, with its side files) and every input of the run.
    static func protectedFiles(journal: String, inputs: [String]) -> ProtectedFiles {
        var protected = ProtectedFiles()
        protected.add(journalAt: journal)
        for input in inputs { protected.add(inputAt: input, as: "the input \(input == "-" ? "stdin" : input)") }
        return protected
    }

    private func writeFile(_ text: String) {
        guard let file else { return }
        // Taken at each write: the journal a first run creates exists only from its start.
        let protected = Self.protectedFiles(journal: journalPath, inputs: inputs)
        do {
            // 0644, the one exception to 0600: node_exporter's textfile collector reads it, and it holds no secret.
            let output = try OutputFile(path: file, role: "metrics file", mode: 0o644, protecting: protected)
            output.write(text)
            try output.commit()
        } catch {
            warn("warning: \(error.message)")
        }
    }
}
