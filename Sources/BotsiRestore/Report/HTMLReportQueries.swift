import BotsiBasics
import BotsiJournal
import Foundation

/// Fills an `HTMLReportModel` from journals opened read-only: every journal read behind the page
/// happens here (through `status`'s snapshot, `runs`' lines, `--changes`, and the queries of
/// BotsiJournal's HTMLReportQueries.swift). Streams: what it holds is bounded by the model's caps
/// and the series' buckets, never by the number of rows or attempts.
public enum HTMLReportReader {
    /// `runID`: the run to chart (one journal only); nil for the latest run of each journal.
    public static func read(
        _ journals: [(path: String, journal: Journal)], runID: Int64?, now: Date, toolVersion: String
    ) throws -> HTMLReportModel {
        var verdicts: [JournalVerdict] = []
        var chosen: [(journal: Journal, run: RunRecord)] = []
        var history: [HistoryRun] = []
        for (index, entry) in journals.enumerated() {
            let (verdict, runs) = try verdict(of: entry.journal, path: entry.path, now: now)
            verdicts.append(verdict)
            history += try historyRuns(entry.journal, runs: runs, index: index, now: now)
            if let run = try runID.map(entry.journal.runRecord(id:)) ?? runs.last {
                chosen.append((entry.journal, run))
            }
        }
        let scope: String
        if journals.count > 1 {
            scope = "the latest run of each of the \(journals.count) journals"
        } else if let run = chosen.first?.run {
            scope = "run \(run.id)" + (run.id == verdicts.first?.latestRun?.id ? ", the latest" : "")
        } else {
            scope = "no run yet"
        }
        var model = HTMLReportModel(
            generatedAt: now, toolVersion: toolVersion, journals: verdicts, runScope: scope)
        model.history = Array(
            history.sorted { ($0.line.startedAt, $0.journal) < ($1.line.startedAt, $1.journal) }
                .suffix(HTMLReportLimits.historyRuns))
        try fillRunFigures(&model, chosen, now: now)
        for (index, entry) in journals.prefix(HTMLReportLimits.attentionJournals).enumerated() {
            let run = chosen.first { $0.journal === entry.journal }?.run
            model.attention.append(
                try attention(entry.journal, path: verdicts[index].path, run: run, shards: journals.count > 1))
        }
        return model
    }

    /// What `status` says of the journal, from the same snapshot, and its newest runs.
    private static func verdict(of journal: Journal, path: String, now: Date) throws -> (JournalVerdict, [RunRecord]) {
        // Looked at first: a live run's attempts are not walked (`Journal.snapshot`).
        let holder = journal.runLockHolder()
        let snapshot = try journal.snapshot(
            recentSince: now.addingTimeInterval(-StatusReport.recentWindow), runLockHeld: holder != nil)
        let status = StatusReport(journalPath: path, snapshot: snapshot, holder: holder, now: now)
        var statuses: [ItemStatus: Int] = [:]
        for count in snapshot.items { statuses[count.status, default: 0] += count.count }
        var verdict = JournalVerdict(path: path, statuses: statuses)
        verdict.runCount = snapshot.runCount
        verdict.owed = snapshot.items.filter { $0.status == .pending || $0.status == .inFlight }
        verdict.inputRejections = snapshot.rejections
        let (runs, _, first) = try journal.latestRuns(limit: HTMLReportLimits.historyRuns)
        verdict.firstStartedAt = first
        verdict.mergedShards = status.mergedShardWords(fileNames: true)
        if let run = snapshot.latestRun {
            verdict.selectionLeft = !status.isAlive && status.selectionLeft(run)
            let state: String
            switch status.liveness {
            case .running: state = "running"
            case .vanished: state = "killed"
            case .ended, .none: state = run.state.rawValue
            }
            var latest = LatestRun(
                id: run.id, startedAt: run.startedAt, state: state,
                exitWords: HTMLExitWords.describe(run.exitCode, state: state))
            latest.endedAt = run.endedAt
            latest.exitCode = run.exitCode
            latest.stopMessage = run.counts.stopMessage
            latest.requests = status.requests
            latest.retries = status.retries
            latest.durationSeconds = status.elapsedSeconds
            verdict.latestRun = latest
            verdict.lastActivityAt =
                [run.endedAt, snapshot.activity.lastAttemptAt].compactMap { $0 }.max()
                ?? run.startedAt
            (verdict.nextStep, verdict.nextCommand) = nextStep(status, run: run, statuses: statuses, path: path)
        } else {
            verdict.nextStep = "no run has used this journal yet"
        }
        return (verdict, runs)
    }

    /// The advice `status` gives, and what it leaves to the summary (a fix first, held rows).
    private static func nextStep(
        _ status: StatusReport, run: RunRecord, statuses: [ItemStatus: Int], path: String
    ) -> (String, String?) {
        if status.isAlive {
            return ("a run is in progress: watch it", RunAdvice.statusCommand(journalPath: path))
        }
        let fix = status.fixFirst(run, onPage: true)
        // Rows another split left to other shards: the latest run's command never sends them.
        let otherShards =
            status.otherShardsPending > 0
            ? "the journal owes \(Basics.count(status.otherShardsPending, "row", "rows")) of other shards than its latest run's, which "
                + "runs with its --shard never send (status gives the command)" : nil
        if case var what = status.workLeft(run), !what.isEmpty {
            // Its command is another (`run -`): status gives it.
            if status.standardInputAdvice != nil {
                what.append("pipe the rest of the standard input a run stopped in again (status gives the command)")
            }
            var words = what.joined(separator: " and ")
            if status.nextLead != "with" { words += " " + status.nextLead }
            // A shard's broken export is not among the rows owed: the command does not mend it. Named
            // first and short (by its file's name), as the page cuts a long step.
            let broken = status.brokenShardRuns.map {
                "shard \(RunAdvice.shellQuoted(($0.shard as NSString).lastPathComponent))'s latest run exited 65 "
                    + "on a broken input (its status says what to fix); "
            }.joined()
            let others = otherShards.map { "; \($0)" } ?? ""
            return (broken + (fix.map { "\($0); then \(words)" } ?? words) + others, status.nextCommand(run))
        }
        if let advice = StatusReport.rejectedInputAdvice(run, journalPath: path) {
            return (advice, nil)
        }
        if let (words, command) = status.otherShardsAdvice(run) { return (words, command) }
        if !status.brokenShards.isEmpty { return (status.brokenShards.joined(separator: "; "), nil) }
        if let held = statuses[.held], held > 0 {
            return (
                "review the \(Basics.count(held, "held row", "held rows")) (claimed by another profile), then send \(held == 1 ? "it" : "them")"
                    + (status.isMerged ? " " + status.nextLead : ""),
                status.releaseAdvice(run)
            )
        }
        if let fix { return (fix, nil) }
        if !status.goneInputs.isEmpty {
            return (RunAdvice.goneInputs(status.goneInputs, paths: status.goneInputCommandPaths), nil)
        }
        if let (words, command) = status.standardInputAdvice { return (words, command) }
        return ("nothing to do: every row the journal knows is final", nil)
    }

    private static func historyRuns(_ journal: Journal, runs: [RunRecord], index: Int, now: Date) throws
        -> [HistoryRun]
    {
        let unsummed = runs.filter { $0.counts.statuses == nil }.map(\.id)
        let outcomes = try journal.attemptOutcomes(runIDs: unsummed)
        // As `runs` counts them: a run without a summary by its rows as they stand.
        let holder = journal.runLockHolder()
        let lines = RunLine.make(
            runs: runs, attemptOutcomes: outcomes,
            unrecorded: try RunLine.Unrecorded(journal, runs: runs, holder: holder),
            holder: holder, now: now)
        return zip(runs, lines).map { run, line in
            HistoryRun(journal: index, line: line, options: HTMLRunOptions(run.options).words)
        }
    }

    /// The over-time series and the distributions, over the chosen run of each journal.
    private static func fillRunFigures(
        _ model: inout HTMLReportModel, _ chosen: [(journal: Journal, run: RunRecord)], now: Date
    ) throws {
        var spans: [(Int64, Int64)] = []
        for (journal, run) in chosen {
            guard let span = try journal.attemptSpan(runID: run.id) else { continue }
            let started = Timestamp.date(run.startedAt).map { Int64($0.timeIntervalSince1970 * 1000) } ?? span.first
            let ended = run.endedAt.flatMap(Timestamp.date).map { Int64($0.timeIntervalSince1970 * 1000) }
            spans.append((min(started, span.first), max(ended ?? span.last, span.last)))
        }
        guard let start = spans.map(\.0).min(), let end = spans.map(\.1).max() else { return }
        var builder = SeriesBuilder(start: start, end: end)
        var latency = LatencyHistogram()
        var perRow: [Int: Int] = [:]
        var outcomes: [OutcomeKey: Int] = [:]
        var leftOut = 0
        var rates: [Double] = []
        var concurrency: [Int] = []
        for (journal, run) in chosen {
            try journal.forEachAttemptSample(runID: run.id) { sample in
                builder.add(sample)
                if let duration = sample.durationMilliseconds { latency.add(duration) }
            }
            for sample in try journal.pacerSamples(runID: run.id) { builder.add(sample) }
            perRow.merge(try journal.attemptsPerRow(runID: run.id), uniquingKeysWith: +)
            let counts = try journal.attemptOutcomeCounts(runID: run.id, limit: HTMLReportLimits.outcomeGroups)
            for group in counts.groups {
                outcomes[
                    OutcomeKey(outcome: group.outcome, httpStatus: group.httpStatus, code: group.code), default: 0] +=
                    group.count
            }
            leftOut += counts.others
            let options = HTMLRunOptions(run.options)
            if let rate = options.rateCap { rates.append(rate) }
            concurrency.append(options.concurrency ?? RunOptions().concurrency)
        }
        // Shards' ceilings add up: each paces itself.
        model.series = builder.finish(
            rateOption: rates.count == chosen.count && !rates.isEmpty ? rates.reduce(0, +) : nil,
            concurrencyOption: concurrency.isEmpty ? nil : concurrency.reduce(0, +))
        model.latency = latency
        model.attemptsPerRow = perRow
        let sorted = outcomes.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        model.outcomes = sorted.prefix(HTMLReportLimits.outcomeGroups).map {
            AttemptOutcomeCount(
                outcome: $0.key.outcome, httpStatus: $0.key.httpStatus, code: $0.key.code, count: $0.value)
        }
        model.outcomesLeftOut = leftOut + sorted.dropFirst(HTMLReportLimits.outcomeGroups).reduce(0) { $0 + $1.value }
    }

    private static func attention(_ journal: Journal, path: String, run: RunRecord?, shards: Bool) throws
        -> JournalAttention
    {
        typealias Limits = HTMLReportLimits
        var attention = JournalAttention(path: path)
        let examples = shards ? Limits.shardExamples : Limits.examples
        let failures = try journal.rowGroups(
            statuses: [.failed, .rejected, .pending, .inFlight],
            groupLimit: shards ? Limits.shardGroups : Limits.failureGroups, exampleLimit: examples)
        (attention.failures, attention.failureGroupCount) = (failures.groups, failures.groupCount)
        let rejections = try journal.rejectionGroups(
            groupLimit: shards ? Limits.shardGroups : Limits.rejectionGroups, exampleLimit: examples)
        (attention.rejections, attention.rejectionGroupCount) = (rejections.groups, rejections.groupCount)
        let claims = try journal.claimGroups(
            groupLimit: shards ? Limits.shardGroups : Limits.conflictGroups,
            claimLimit: shards ? 2 : Limits.claimsPerGroup)
        attention.conflicts = claims.groups
        attention.conflictGroupCount = claims.groupCount
        attention.conflictRowCount = claims.rowCount
        if let run, run.id > 1 {
            // As `report --changes` compares: in a merged journal, from before each shard's latest
            // run (the run just before is another shard's, which left out every other shard's night).
            let earlier = ChangeRange.defaultEarlier(runs: try journal.runs(), later: run.id)
            var changes = ChangeSummary(earlierRun: earlier, laterRun: run.id)
            try journal.forEachChange(since: earlier, until: run.id) { change in
                let kind = ChangeKind.classify(before: change.before, after: change.after)
                changes.counts[kind, default: 0] += 1
                guard changes.examples[kind, default: []].count < (shards ? 1 : Limits.changeExamples) else { return }
                changes.examples[kind, default: []].append(
                    ChangeExample(
                        profileId: change.profileId, originalTransactionId: change.originalTransactionId,
                        before: change.before.map(Self.words) ?? "not sent yet", after: Self.words(change.after)))
            }
            attention.changes = changes
        }
        return attention
    }

    private static func words(_ state: RowState) -> String {
        state.status.rawValue + (state.code.map { " (\($0))" } ?? "")
    }

    private struct OutcomeKey: Hashable, Comparable {
        var outcome: AttemptOutcome
        var httpStatus: Int?
        var code: String?

        static func < (left: OutcomeKey, right: OutcomeKey) -> Bool {
            (left.outcome.rawValue, left.httpStatus ?? -1, left.code ?? "")
                < (right.outcome.rawValue, right.httpStatus ?? -1, right.code ?? "")
        }
    }
}

/// The options of a recorded run that tell runs apart in the history, read one field at a time
/// (an older run recorded fewer; a field of another type is left out).
struct HTMLRunOptions {
    var rate: Double?
    /// `--job-rate`: the whole job's; each of `shardCount` shards capped at its share.
    var jobRate: Double?
    var concurrency: Int?
    var shardIndex: Int?
    var shardCount: Int?
    var retryFailed = false
    var refreshOlderThan: Double?
    var releaseHeld = false
    var onConflict: String?
    var dryRun = false
    var adaptive = true

    init(_ json: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return }
        rate = (object["rate"] as? NSNumber)?.doubleValue
        jobRate = (object["jobRate"] as? NSNumber)?.doubleValue
        concurrency = (object["concurrency"] as? NSNumber)?.intValue
        shardIndex = (object["shardIndex"] as? NSNumber)?.intValue
        shardCount = (object["shardCount"] as? NSNumber)?.intValue
        retryFailed = object["retryFailed"] as? Bool ?? false
        refreshOlderThan = (object["refreshOlderThan"] as? NSNumber)?.doubleValue
        releaseHeld = object["releaseHeld"] as? Bool ?? false
        onConflict = object["onConflict"] as? String
        dryRun = object["dryRun"] as? Bool ?? false
        adaptive = object["adaptive"] as? Bool ?? true
    }

    /// The run's send-rate cap: `--rate`, or this shard's share of `--job-rate`, whichever is lower
    /// (`RunOptions.rateCap`); nil: none.
    var rateCap: Double? { RunOptions.rateCap(rate: rate, jobRate: jobRate, shardCount: shardCount ?? 1) }

    /// "resend failed · rate 40/s · concurrency 16 · shard 1/4" (the rate: `rateCap`).
    var words: String {
        var parts: [String] = []
        if dryRun { parts.append("dry run") }
        if retryFailed { parts.append("retry failed") }
        if let age = refreshOlderThan { parts.append("refresh older than \(Basics.durationOption(age))") }
        if releaseHeld { parts.append("release held") }
        if onConflict == ConflictHandling.hold.rawValue { parts.append("hold conflicts") }
        if parts.isEmpty { parts.append("new and owed rows") }
        // A shard's share of --job-rate as --rate is: the cell holds 64 characters, the shard follows.
        parts.append(rateCap.map { "rate \(HTMLNumbers.decimal($0))/s" } ?? "no rate cap")
        if let concurrency { parts.append("concurrency \(concurrency)") }
        if !adaptive { parts.append("not adaptive") }
        if let shardIndex, let shardCount, shardCount > 1 { parts.append("shard \(shardIndex)/\(shardCount)") }
        return parts.joined(separator: " · ")
    }
}

/// An exit status in words, as docs/exit-codes.md and the cron wrapper's last line say it.
enum HTMLExitWords {
    static func describe(_ code: Int?, state: String) -> String {
        guard let code else {
            return state == "running" ? "still running" : "no exit status: the run was killed or crashed"
        }
        switch Int32(code) {
        case ExitCode.success: return "every row the run worked on is final"
        case ExitCode.usage: return "usage error: nothing was sent"
        case ExitCode.dataError: return "an input was unusable"
        case ExitCode.noInput: return "an input or the journal was missing"
        case ExitCode.unavailable: return "TLS failure, or too many rows failing"
        case ExitCode.software: return "internal error"
        case ExitCode.osError: return "a local resource ran out (memory, descriptors, a thread)"
        case ExitCode.cannotCreate: return "the journal could not be written"
        case ExitCode.temporaryFailure: return "rows remain pending, or the time window ended: the next run continues"
        case ExitCode.permission: return "the API key was refused"
        case ExitCode.configuration: return "the app's App Store connection is not set up in Botsi"
        case ExitCode.hungUp, ExitCode.interrupted, ExitCode.terminated:
            return "stopped by a signal after in-flight requests finished"
        default: return "exit status \(code)"
        }
    }
}
