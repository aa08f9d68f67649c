import BotsiBasics
import BotsiJournal
import Foundation

/// `botsi-restore status`: the run in progress or the last one, read from the journal and its
/// lock file. Built from a `JournalSnapshot`, so a live run's numbers are whole batches.
public struct StatusReport: Sendable {
    public enum Liveness: String, Sendable {
        /// No run has used the journal yet.
        case none
        /// A live process holds the journal's lock.
        case running
        /// The run recorded its end.
        case ended
        /// No end on record and nobody holds the lock: killed or crashed.
        case vanished
    }

    /// Seconds of attempts the recent rate is taken over.
    public static let recentWindow: Double = 60

    public let journalPath: String
    public let snapshot: JournalSnapshot
    public let holder: LockHolder?
    public let now: Date

    public init(journalPath: String, snapshot: JournalSnapshot, holder: LockHolder?, now: Date) {
        self.journalPath = journalPath
        self.snapshot = snapshot
        self.holder = holder
        self.now = now
    }

    public var liveness: Liveness {
        guard let run = snapshot.latestRun else { return .none }
        if run.endedAt != nil { return .ended }
        return holder == nil ? .vanished : .running
    }

    public var isAlive: Bool { liveness == .running }

    /// Rows still to send among those the journal knows (a running first pass knows only the rows
    /// it has read so far, so this can grow while it reads).
    public var pendingRows: Int { snapshot.itemCount(status: .pending) + snapshot.itemCount(status: .inFlight) }

    /// Pending rows the latest (sharded) run passed over as other shards': an earlier run split the
    /// job another way, and its command never sends them (it said "send the 7 pending rows" with
    /// a `--shard` that owns none of them).
    var otherShardsPending: Int {
        guard !isAlive, !isMerged, let run = snapshot.latestRun else { return 0 }
        return min(pendingRows, run.counts.otherShardsOwed ?? 0)
    }

    /// The pending rows the latest run's command sends.
    var ownPendingRows: Int { pendingRows - otherShardsPending }

    /// What sends the other shards' rows: the latest run's command without `--shard` or inputs.
    func otherShardsAdvice(_ run: RunRecord) -> (words: String, command: String)? {
        guard otherShardsPending > 0 else { return nil }
        return (
            RunAdvice.otherShardsOwed(otherShardsPending, of: "its latest run's"),
            RunAdvice.otherShardsCommand(Self.recordedOptions(run, journalPath: journalPath))
        )
    }

    /// Seconds from start to end, to now while running, or to the last attempt after a kill.
    public var elapsedSeconds: Double? {
        guard let run = snapshot.latestRun, let start = Timestamp.date(run.startedAt) else { return nil }
        let end: Date?
        switch liveness {
        case .running: end = now
        case .ended: end = run.endedAt.flatMap(Timestamp.date)
        case .vanished, .none: end = snapshot.activity.lastAttemptAt.flatMap(Timestamp.date)
        }
        return end.map { max($0.timeIntervalSince(start), 0) }
    }

    /// Requests per second: over the last minute while running, over the whole run otherwise.
    public var rate: Double? {
        guard let elapsed = elapsedSeconds, elapsed > 0 else { return nil }
        if isAlive { return Double(snapshot.activity.recentRequests) / min(Self.recentWindow, elapsed) }
        return Double(requests) / elapsed
    }

    /// While running: from how much of the input is read (the run journals bytes read and the
    /// total every few seconds), or else from the pending rows read so far and the recent rate.
    public var etaSeconds: Double? {
        guard isAlive else { return nil }
        if let fraction = inputFractionRead, fraction > 0.01, fraction < 1, let elapsed = elapsedSeconds {
            return elapsed / fraction - elapsed
        }
        guard let rate, rate > 0 else { return nil }
        return Double(pendingRows) / rate
    }

    /// Share of the input bytes the running run has read, from its journaled progress.
    public var inputFractionRead: Double? {
        guard let progress = snapshot.latestRun?.progress, let read = progress.bytesRead,
            let total = progress.totalBytes, total > 0
        else { return nil }
        return min(Double(read) / Double(total), 1)
    }

    /// Resends the run made: its summary's count once it ended; after a kill, the second and
    /// later attempts of a row on record, as its summary would have counted them; while it runs,
    /// its attempts answered "retry" so far (`run_attempts`: its attempts are not walked), whose
    /// resends mostly follow.
    public var retries: Int {
        snapshot.latestRun?.counts.retries ?? snapshot.activity.retries ?? snapshot.activity.outcomes[.retry] ?? 0
    }

    /// Requests the run sent: its summary's count once it ended (which holds those whose outcome
    /// a failing journal could not record), else its attempts on record so far.
    public var requests: Int { snapshot.latestRun?.counts.requests ?? snapshot.activity.requests }

    /// Of `requests`, those sent whose outcome the journal could not record.
    public var unrecordedRequests: Int { snapshot.latestRun?.counts.unrecordedRequests ?? 0 }

    // MARK: Rendering

    public func renderText() -> String {
        var lines = ["journal   \(journalPath)"]
        guard let run = snapshot.latestRun else {
            lines.append("no run has used this journal yet")
            if let holder { lines.append("lock      held by pid \(holder.pid) on \(holder.host) (a run is starting)") }
            return VisibleText.joinedLines(lines)
        }
        let elapsed = elapsedSeconds.map { Basics.duration($0) } ?? "?"
        switch liveness {
        case .running:
            let who = holder.map { "pid \($0.pid) on \($0.host)" } ?? "pid \(run.pid) on \(run.host)"
            lines.append("run       \(run.id) of \(snapshot.runCount): running, alive (\(who) holds the lock)")
        case .ended:
            let code = run.exitCode.map { "exit \($0)" } ?? "no exit code"
            lines.append("run       \(run.id) of \(snapshot.runCount): \(run.state), \(code)")
        case .vanished:
            lines.append(
                "run       \(run.id) of \(snapshot.runCount): ended without a record (killed or crashed); "
                    + "its in-flight rows go back to pending when the next run starts")
        case .none: break
        }
        if liveness != .running, let holder {
            lines.append("lock      held by pid \(holder.pid) on \(holder.host): a new run is starting")
        }
        if let merged = mergedLine(run) { lines.append(merged) }
        lines.append("started   \(run.startedAt) (\(elapsed) \(isAlive ? "so far" : "long"))")
        if let ended = run.endedAt { lines.append("ended     \(ended)") }
        lines.append("inputs    \(inputDescriptions(run).joined(separator: ", "))")
        let recorded = RunOptions.recorded(run.options)
        let arguments = recorded?.arguments.map(RunAdvice.shellQuoted).joined(separator: " ")
        lines.append("options   \(arguments.map { $0.isEmpty ? "(the defaults)" : $0 } ?? run.options)")
        if let deadline = recorded?.deadline {
            lines.append("window    dispatching stops at \(Timestamp.string(deadline))")
        }
        let outcomes = snapshot.activity.outcomes.filter { $0.key != .retry }.map { ($0.key.rawValue, $0.value) }
            .sorted { $0.0 < $1.0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        lines.append(
            "this run  \(Basics.count(requests, "request", "requests"))"
                + (unrecordedRequests > 0 ? ", \(RunSummary.unrecordedWords(unrecordedRequests))" : "")
                + ", \(Basics.count(retries, "retry", "retries"))"
                + (outcomes.isEmpty ? "" : "; outcomes: \(outcomes)"))
        if let rate {
            lines.append(
                String(format: "rate      %.1f/s ", rate) + (isAlive ? "over the last minute" : "over the run"))
        }
        // The summary said it; the morning after, `status` is what is read (a sandbox's 5/s, a
        // limit shared with the live app: docs/pacing.md).
        if let events = snapshot.latestRun?.counts.throttleEvents, events > 0 {
            lines.append("throttled \(Basics.count(events, "time", "times")) by 429/503 replies: the pacer slowed down")
        }
        if let line = longWindowLine() { lines.append(line) }
        lines.append("rows      \(statusLine())")
        let explained: Set<ItemStatus> = [.pending, .inFlight, .failed, .rejected]
        for count in snapshot.items where count.code != nil && explained.contains(count.status) {
            lines.append("          \(count.status) (\(count.code ?? "")): \(count.count)")
        }
        if !snapshot.rejections.isEmpty {
            let reasons = snapshot.rejections.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            lines.append(
                "rejected  \(snapshot.rejections.values.reduce(0, +)) by the input checks: \(reasons.joined(separator: ", "))"
            )
        }
        if let eta = etaSeconds, let fraction = inputFractionRead, fraction < 1 {
            lines.append(
                "ETA       ~\(Basics.duration(eta)) (\(Int(fraction * 100))% of the input read, at the pace so far)"
            )
        } else if let eta = etaSeconds {
            lines.append(
                "ETA       ~\(Basics.duration(eta)) for the \(Basics.count(pendingRows, "pending row", "pending rows")) read so far"
            )
        } else if !isAlive, case let what = workLeft(run), !what.isEmpty {
            // What the latest run's stop needs fixed first, as its summary said (a key, TLS, a damaged input).
            let fix = fixFirst(run).map { "\($0); then " } ?? ""
            lines.append("next      \(fix)\(what.joined(separator: " and ")) \(nextLead): \(nextCommand(run))")
            // An input the latest run found broken beside good ones: the command above does not read it.
            if let broken = run.counts.rejectedInputs, !broken.isEmpty {
                lines.append(
                    "broken    every row of " + broken.map(RunAdvice.shellQuoted).joined(separator: ", ")
                        + " was rejected by the input checks: fix or re-export it, then run again with it ("
                        + RunAdvice.reportCommand(journalPath: journalPath, ["--status", "rejected"]) + ")")
            }
            // Held rows are not owed, so the command above leaves them; they still wait for a person.
            // A stopped `--release-held` is the selection the command above finishes: no second line.
            let releasing = selectionLeft(run) && RecordedOptions(run.options).releaseHeld == true
            if case let held = snapshot.itemCount(status: .held), held > 0, !releasing {
                let wait = held == 1 ? "waits" : "wait"
                lines.append(
                    "held      \(Basics.count(held, "row", "rows")) claimed by another profile \(wait) for review "
                        + "(\(RunAdvice.reportCommand(journalPath: journalPath, ["--conflicts"]))); "
                        + "then send \(held == 1 ? "it" : "them") \(nextLead): \(releaseAdvice(run))")
            }
        } else if let advice = Self.rejectedInputAdvice(run, journalPath: journalPath), !isAlive {
            lines.append("next      \(advice)")
        } else if !isAlive, case let held = snapshot.itemCount(status: .held), held > 0 {
            // As the run's summary and the page say: nothing else is owed, but held rows wait for a person.
            let release = releaseAdvice(run)
            lines.append(
                "next      review the \(Basics.count(held, "held row", "held rows")) (\(RunAdvice.reportCommand(journalPath: journalPath, ["--conflicts"]))), "
                    + "then send \(held == 1 ? "it" : "them") \(nextLead): \(release)")
        }
        if let (words, command) = otherShardsAdvice(run) { lines.append("shards    \(words): \(command)") }
        if !isAlive, !goneInputs.isEmpty {
            lines.append("gone      \(RunAdvice.goneInputs(goneInputs, paths: goneInputCommandPaths))")
        }
        if !isAlive, let (words, command) = standardInputAdvice {
            lines.append("stdin     \(words): \(command) (rows already finished are skipped)")
        }
        if !isAlive {
            for broken in brokenShards { lines.append("broken    \(broken)") }
        }
        lines.append(
            "page      charts, failures and run history: \(HTMLReportAdvice.command(journalPath: journalPath))")
        return VisibleText.joinedLines(lines)
    }

    public func renderJSON() -> String {
        var object: [String: Any] = ["journal": journalPath, "liveness": liveness.rawValue, "alive": isAlive]
        object["runs"] = snapshot.runCount
        if let run = snapshot.latestRun {
            var runObject: [String: Any] = [
                "id": run.id, "startedAt": run.startedAt, "state": run.state.rawValue, "host": run.host, "pid": run.pid,
                "toolVersion": run.toolVersion,
            ]
            runObject["endedAt"] = run.endedAt ?? NSNull()
            runObject["exitCode"] = run.exitCode ?? NSNull()
            // As `run` takes them; the deadline they made as a time, not seconds since 2001.
            let recorded = RunOptions.recorded(run.options)
            runObject["options"] = recorded?.arguments ?? NSNull()
            runObject["deadline"] = recorded?.deadline.map(Timestamp.string) ?? NSNull()
            // JSON's own numbers and booleans (the journal keeps its record as it always has).
            runObject["inputs"] = run.inputs.map {
                ["path": $0.path, "sha256": $0.sha256, "bytes": $0.bytes, "complete": $0.complete] as [String: Any]
            }
            object["run"] = runObject
        }
        if let holder {
            object["lockHolder"] = ["pid": holder.pid, "host": holder.host, "startedAt": holder.startedAt]
        }
        var statuses: [String: Int] = [:]
        var codes: [String: Int] = [:]
        for count in snapshot.items {
            statuses[count.status.rawValue, default: 0] += count.count
            codes["\(count.status)/\(count.code ?? "")", default: 0] += count.count
        }
        object["statuses"] = statuses
        object["codes"] = codes
        object["rejected"] = snapshot.rejections
        object["requests"] = requests
        object["unrecordedRequests"] = unrecordedRequests
        object["retries"] = retries
        object["outcomes"] = Dictionary(
            uniqueKeysWithValues: snapshot.activity.outcomes.map { ($0.key.rawValue, $0.value) })
        object["pending"] = pendingRows
        if otherShardsPending > 0 { object["otherShardsPending"] = otherShardsPending }
        if isMerged {
            object["mergedShards"] = mergedShardRuns.map { shard, run -> [String: Any] in
                [
                    "journal": shard, "latestRun": run?.id ?? NSNull(), "state": run?.state.rawValue ?? NSNull(),
                    "exitCode": run?.exitCode ?? NSNull(),
                ]
            }
        }
        // Each (input, shard) the runs left unread, as `Journal.unreadInputs` gives them.
        object["unreadInputs"] = snapshot.unreadInputs.map(\.path)
        // The run that stopped before the end of its standard input, while no later run read one whole.
        if let run = snapshot.standardInputUnreadBy { object["standardInputUnreadBy"] = run.id }
        object["elapsedSeconds"] = elapsedSeconds ?? NSNull()
        object["rate"] = rate ?? NSNull()
        object["throttleEvents"] = snapshot.latestRun?.counts.throttleEvents ?? 0
        object["etaSeconds"] = etaSeconds ?? NSNull()
        object["pageCommand"] = HTMLReportAdvice.command(journalPath: journalPath)
        if let known = snapshot.longWindow {
            let window: [String: Any] = [
                "run": known.run, "cycleSeconds": known.record.cycleSeconds, "rate": known.record.rate,
                "seenAt": known.record.seenAt, "shardCount": known.record.shardCount,
                "carried": RunJournalWriter.isCarried(known.record, now: now),
            ]
            object["longWindow"] = window
        } else {
            object["longWindow"] = NSNull()
        }
        return Self.json(object)
    }

    /// Each shard journal a merged journal came from, with its latest run, in the order merged.
    var mergedShardRuns: [(shard: String, run: RunRecord?)] {
        snapshot.mergedFrom.map { ($0, snapshot.shardLatestRuns[$0]) }
    }

    /// Each shard journal a merged journal came from, its latest run and how it ended, in words.
    /// `fileNames`: each journal by its file's name alone (the page, where paths crowd the facts).
    func mergedShardWords(fileNames: Bool = false) -> [String] {
        mergedShardRuns.map { path, latest in
            let shard = RunAdvice.shellQuoted(fileNames ? (path as NSString).lastPathComponent : path)
            guard let latest else { return "\(shard) no run" }
            let end =
                latest.state == .running
                ? "no end recorded"
                : "\(latest.state.rawValue), \(latest.exitCode.map { "exit \($0)" } ?? "no exit code")"
            return "\(shard) run \(latest.id) (\(end))"
        }
    }

    /// A merged journal's latest run is one shard's: the other shards' latest runs are named
    /// beside it, or `run`, `this run` and `rate` read as the whole job's (an operator review).
    private func mergedLine(_ run: RunRecord) -> String? {
        guard isMerged else { return nil }
        let shards = mergedShardWords()
        return
            "merged    from \(Basics.count(shards.count, "shard journal", "shard journals")), the latest run of each: "
            + shards.joined(separator: ", ") + "; the lines to \"rate\" are run \(run.id)'s alone"
    }

    /// The long window the next run's pacing starts from (docs/pacing.md), or that it finds anew.
    private func longWindowLine() -> String? {
        guard let known = snapshot.longWindow else { return nil }
        let record = known.record
        let shards = record.shardCount > 1 ? " of \(record.shardCount) shards" : ""
        let next =
            RunJournalWriter.isCarried(record, now: now)
            ? "the next run\(shards) starts from that pace"
            : "seen over \(Int(RunJournalWriter.longWindowKeptFor / 86_400)) days ago, the next run finds it anew"
        return "pacing    a limit counted over \(Int(record.cycleSeconds.rounded())) s gave "
            + String(format: "%.1f requests/s; ", record.rate)
            + "\(next) (run \(known.run), last seen \(record.seenAt))"
    }

    /// One JSON object as scripts read it: sorted keys, and `/` as itself (`\/` is valid JSON, but
    /// not what jq, grep or a person expects in a path or a URL).
    static func json(_ object: [String: Any]) -> String {
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: options)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private func statusLine() -> String {
        var parts: [String] = []
        for status in Self.order {
            let count = snapshot.itemCount(status: status)
            if count > 0 { parts.append("\(status) \(count)") }
        }
        return parts.isEmpty ? "none yet" : parts.joined(separator: " · ")
    }

    /// Input paths: from the finished run's record, or from its options while it runs.
    private func inputDescriptions(_ run: RunRecord) -> [String] {
        if !run.inputs.isEmpty {
            return run.inputs.map { $0.complete ? $0.path : "\($0.path) (not read to the end)" }
        }
        return RecordedOptions(run.options).inputs ?? []
    }

    /// The inputs no run has read to their end: the latest run's, and those an earlier run left
    /// unread that no run since read to the end (a run resumed without inputs reads none).
    /// Each once, for words and commands: in a merged journal every shard's run named the same input.
    var unreadInputs: [String] { Self.unique(snapshot.readableInputs.map(\.path)) }

    /// Unread inputs whose file is gone: named apart, since no command can read them again.
    var goneInputs: [String] { Self.unique(snapshot.goneInputs.map(\.path)) }

    /// The same by the paths their runs recorded: `--forget-input` of them works from any directory.
    var goneInputCommandPaths: [String] { Self.unique(snapshot.goneInputs.map(\.commandPath)) }

    /// The same inputs by the absolute paths their runs recorded: the advised command works from
    /// any directory (README's morning check runs `status` from another one).
    var unreadInputCommandPaths: [String] {
        Self.unique(snapshot.readableInputs.map(\.commandPath))
    }

    private static func unique(_ paths: [String]) -> [String] {
        paths.reduce(into: []) { unique, path in
            if !unique.contains(path) { unique.append(path) }
        }
    }

    /// The command that sends what the journal owes, against the service the latest run used, and
    /// reads again the inputs it did not finish (its rows already finished are skipped). A run
    /// killed, or stopped before it took up every row it owed, had its selection
    /// (`--retry-failed`, `--refresh-older-than`) repeated: the rows it did get to are not chosen
    /// again.
    /// All the run recorded (its key file, proxy, pace and conflict rule too, as its summary's
    /// command keeps them), under the path this status was given. A merged journal's run was one
    /// shard's: its shard and the job's rate go (a reviewer: `--shard 1/2` on the merged journal
    /// sent half its pending rows, then said nothing was owed, then advised it again); one run
    /// on it has the whole job's rate.
    static func recordedOptions(_ run: RunRecord, journalPath: String) -> RunOptions {
        let recorded = RecordedOptions(run.options)
        var options = RunOptions.recorded(run.options) ?? RunOptions()
        options.journalPath = journalPath
        if let absolute = recorded.keyFilePath, options.keyFile != nil { options.keyFile = absolute }
        if let absolute = recorded.caCertificateFilePath, options.caCertificatePath != nil {
            options.caCertificatePath = absolute
        }
        if recorded.merged {
            (options.shardIndex, options.shardCount) = (0, 1)
            options.rate = options.rate ?? options.jobRate
            options.jobRate = nil
        }
        return options
    }

    /// What the latest run's stop needs fixed before another run, as its summary said: a key,
    /// TLS, a damaged input, or the failures that crossed the threshold (a reviewer: after exit
    /// 69, status only said to resend into the same failure).
    func fixFirst(_ run: RunRecord, onPage: Bool = false) -> String? {
        guard let cause = run.counts.stopCause else { return nil }
        if cause == .failureThreshold && onPage {
            // The page shows the failures itself, and its next step is kept short.
            return "look at the failures that stopped run \(run.id) (below) and fix their cause first"
        } else if cause == .failureThreshold && (run.counts.kept ?? 0) > 0 {
            // Resent final rows that failed kept their status: a report by status does not list them.
            return "look at the failures that stopped run \(run.id) on the page (resent rows that failed kept their "
                + "earlier status): \(HTMLReportAdvice.command(journalPath: journalPath)) — and fix their cause first"
        } else if cause == .failureThreshold {
            let report = RunAdvice.reportCommand(
                journalPath: journalPath, ["--run", "\(run.id)", "--status", "failed", "--status", "pending"])
            return "look at the failures that stopped run \(run.id) with: \(report) — and fix their cause first"
        }
        return RunAdvice.fixFirst(cause)
    }

    /// After a run whose every row was rejected, or every row of an input (exit 65 with no stop):
    /// the summary said so, and nothing else is owed.
    static func rejectedInputAdvice(_ run: RunRecord, journalPath: String) -> String? {
        guard run.exitCode == Int(ExitCode.dataError) && run.counts.stopCause == nil else { return nil }
        let report = RunAdvice.reportCommand(journalPath: journalPath, ["--status", "rejected"])
        if let inputs = run.counts.rejectedInputs, !inputs.isEmpty {
            return "fix or re-export "
                + inputs.map(RunAdvice.shellQuoted).joined(separator: ", ")
                + ": every row of it was rejected (\(report)), then run again with it"
        }
        return "fix or re-export the input: the run's rows were all rejected (\(report)), then run it again"
    }

    /// The shards of a merged journal whose latest run exited 65 on inputs it rejected, besides
    /// the shard whose run is the journal's latest: the advice each one's own `status` gives (a
    /// first-day review: a shard's broken export was hidden behind another shard's exit 0).
    var brokenShards: [String] {
        brokenShardRuns.map { "shard \(RunAdvice.shellQuoted($0.shard))'s latest run exited 65: \($0.advice)" }
    }

    /// Those shards, with the latest run of each and its shard's advice.
    var brokenShardRuns: [(shard: String, run: RunRecord, advice: String)] {
        snapshot.mergedFrom.compactMap { shard in
            guard let run = snapshot.shardLatestRuns[shard], run.id != snapshot.latestRun?.id,
                let advice = Self.rejectedInputAdvice(run, journalPath: shard)
            else { return nil }
            return (shard, run, advice)
        }
    }

    /// A standard input a run stopped reading before its end: what to do, and the command (for a
    /// merged journal, its shards' status).
    var standardInputAdvice: (words: String, command: String)? {
        guard let run = snapshot.standardInputUnreadBy else { return nil }
        var options = Self.recordedOptions(run, journalPath: journalPath)
        // A unit's key file is gone once it ends: the person piping the export names the key.
        if RunAdvice.credentialUnit(ofKeyFile: options.keyFile) != nil { options.keyFile = "KEY_FILE" }
        let words =
            "run \(run.id) stopped before the end of its standard input, whose rest no file holds: pipe the same "
            + "export again"
        if isMerged {
            return (words + " through its shard journal (each one's status gives its command)", nextCommand(run))
        }
        return (words + " into", RunAdvice.runCommand(options, inputs: ["-"]))
    }

    /// `run --release-held` with what the run recorded: the held rows, sent after review.
    public static func releaseCommand(_ run: RunRecord, journalPath: String) -> String {
        RunAdvice.releaseCommand(recordedOptions(run, journalPath: journalPath))
    }

    /// A selection run (`--retry-failed`, `--refresh-older-than`, `--release-held`) that stopped
    /// before it had an answer for all it chose, or was killed (it recorded nothing of what it
    /// left): its final rows are not pending, and still owed to it.
    func selectionLeft(_ run: RunRecord) -> Bool {
        let recorded = RecordedOptions(run.options)
        let selection =
            recorded.retryFailed == true || recorded.refreshOlderThan != nil || recorded.releaseHeld == true
        return selection && (run.state == .running || run.counts.selectionOwed > 0)
    }

    /// What the latest run left for the next one, in the words `status` and the page both give:
    /// the rows owed, a stopped selection, inputs it did not read to the end. Empty: nothing.
    func workLeft(_ run: RunRecord) -> [String] {
        var what: [String] = []
        if ownPendingRows > 0 {
            what.append("send the \(Basics.count(ownPendingRows, "pending row", "pending rows"))")
        }
        if selectionLeft(run) { what.append("finish the selection it stopped in") }
        if !unreadInputs.isEmpty { what.append(RunAdvice.readAgain(unreadInputs, by: "a run")) }
        return what
    }

    /// How the next command is introduced. A journal made by `merge` is a copy: a run on it would
    /// send the rows its shard journals still owe, which their next runs send again.
    var nextLead: String {
        isMerged
            ? "through the shard journals it merges (each one's status gives its command; merge again after)" : "with"
    }

    var isMerged: Bool { !snapshot.mergedFrom.isEmpty }

    /// What sends the held rows: `run --release-held`, or on a merged copy the shard journals' own.
    func releaseAdvice(_ run: RunRecord) -> String {
        isMerged ? nextCommand(run) : Self.releaseCommand(run, journalPath: journalPath)
    }

    func nextCommand(_ run: RunRecord) -> String {
        if isMerged {
            return snapshot.mergedFrom.map { RunAdvice.statusCommand(journalPath: $0) }.joined(separator: "; ")
        }
        var options = Self.recordedOptions(run, journalPath: journalPath)
        let selectionLeft = run.state == .running || run.counts.selectionOwed > 0
        if selectionLeft, let started = Timestamp.date(run.startedAt) {
            options = RunAdvice.continuingSelection(options, startedAt: started)
        }
        let reading = RunAdvice.readingAs(snapshot.readableInputs.first, options)
        return RunAdvice.continuing(
            RunAdvice.runCommand(reading, inputs: unreadInputCommandPaths, selection: selectionLeft),
            keyFile: options.keyFile)
    }

}

/// The fields of a run's recorded options (`runs.options`) that `status` and `runs` use. Each is
/// optional and read on its own: a run of an older version recorded fewer, and a field of an
/// unexpected type is left out rather than failing the rest.
struct RecordedOptions: Decodable {
    var inputs: [String]?
    var baseURL: String?
    var keyEnvironmentVariable: String?
    var caCertificatePath: String?
    var insecureSkipTLSVerify: Bool?
    var shardIndex: Int?
    var shardCount: Int?
    var format: String?
    var delimiter: String?
    var encoding: String?
    var noHeader: Bool?
    var profileColumn: String?
    var transactionColumn: String?
    var bundleId: String?
    var environment: String?
    /// The key file's absolute path, where the run recorded one: a relative `--key-file` names a
    /// file only from the run's working directory.
    var keyFilePath: String?
    var caCertificateFilePath: String?
    /// Set on the runs of a journal `merge` made: each was one shard's run.
    var merged = false
    /// The shard journal such a run came from: the absolute path `merge` recorded, or the name an
    /// older merge recorded it by.
    var mergedSource: String?
    var retryFailed: Bool?
    var refreshOlderThan: Double?
    var releaseHeld: Bool?

    private enum CodingKeys: String, CodingKey {
        case inputs, baseURL, keyEnvironmentVariable, caCertificatePath, insecureSkipTLSVerify, shardIndex, shardCount
        case format, delimiter, encoding, noHeader, profileColumn, transactionColumn, retryFailed, refreshOlderThan
        case releaseHeld, bundleId, environment, keyFilePath, caCertificateFilePath, mergedFrom
    }

    init(_ json: String) {
        self = (try? JSONDecoder().decode(Self.self, from: Data(json.utf8))) ?? RecordedOptions()
    }

    private init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        inputs = try? container.decodeIfPresent([String].self, forKey: .inputs)
        baseURL = try? container.decodeIfPresent(String.self, forKey: .baseURL)
        keyEnvironmentVariable = try? container.decodeIfPresent(String.self, forKey: .keyEnvironmentVariable)
        caCertificatePath = try? container.decodeIfPresent(String.self, forKey: .caCertificatePath)
        insecureSkipTLSVerify = try? container.decodeIfPresent(Bool.self, forKey: .insecureSkipTLSVerify)
        shardIndex = try? container.decodeIfPresent(Int.self, forKey: .shardIndex)
        shardCount = try? container.decodeIfPresent(Int.self, forKey: .shardCount)
        format = try? container.decodeIfPresent(String.self, forKey: .format)
        delimiter = try? container.decodeIfPresent(String.self, forKey: .delimiter)
        encoding = try? container.decodeIfPresent(String.self, forKey: .encoding)
        noHeader = try? container.decodeIfPresent(Bool.self, forKey: .noHeader)
        profileColumn = try? container.decodeIfPresent(String.self, forKey: .profileColumn)
        transactionColumn = try? container.decodeIfPresent(String.self, forKey: .transactionColumn)
        retryFailed = try? container.decodeIfPresent(Bool.self, forKey: .retryFailed)
        refreshOlderThan = try? container.decodeIfPresent(Double.self, forKey: .refreshOlderThan)
        releaseHeld = try? container.decodeIfPresent(Bool.self, forKey: .releaseHeld)
        bundleId = try? container.decodeIfPresent(String.self, forKey: .bundleId)
        environment = try? container.decodeIfPresent(String.self, forKey: .environment)
        keyFilePath = try? container.decodeIfPresent(String.self, forKey: .keyFilePath)
        caCertificateFilePath = try? container.decodeIfPresent(String.self, forKey: .caCertificateFilePath)
        merged = container.contains(.mergedFrom)
        let source = try? container.decodeIfPresent(MergedFrom.self, forKey: .mergedFrom)
        mergedSource = source?.path ?? source?.journal
    }

    private struct MergedFrom: Decodable {
        var path: String?
        var journal: String?

        private enum CodingKeys: String, CodingKey { case path, journal }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try? container.decodeIfPresent(String.self, forKey: .path)
            journal = try? container.decodeIfPresent(String.self, forKey: .journal)
        }
    }
}

extension StatusReport {
    /// `status` over the shards of one job: each journal's status, then the rows of all of them.
    public struct Job: Sendable {
        public let reports: [StatusReport]

        public init(_ reports: [StatusReport]) { self.reports = reports }

        /// Rows by status over every journal.
        public var statuses: [ItemStatus: Int] {
            var totals: [ItemStatus: Int] = [:]
            for report in reports {
                for count in report.snapshot.items { totals[count.status, default: 0] += count.count }
            }
            return totals
        }

        public func renderText() -> String {
            var blocks = reports.map { $0.renderText() }
            let totals = statuses
            let rows = StatusReport.order.compactMap { status in
                totals[status].map { "\(status) \($0)" }
            }
            let running = reports.filter(\.isAlive).count
            var total = [
                "all \(reports.count) journals: \(running) running",
                "rows      \(rows.isEmpty ? "none yet" : rows.joined(separator: " · "))",
            ]
            let rejected = reports.reduce(0) { $0 + $1.snapshot.rejections.values.reduce(0, +) }
            if rejected > 0 { total.append("rejected  \(rejected) by the input checks") }
            let page = RunAdvice.reportCommand(
                journalPath: reports[0].journalPath,
                ["--format", "html", "--output", "job.html"]
                    + reports.dropFirst().flatMap { ["--journal", $0.journalPath] })
            total.append("page      the job in one page: \(page)")
            blocks.append(total.joined(separator: "\n"))
            return blocks.joined(separator: "\n\n")
        }

        /// `{"journals": [each journal's status object], "statuses": totals, "rejected": total}`.
        public func renderJSON() -> String {
            let each = reports.map { $0.renderJSON() }.joined(separator: ",")
            let totals = statuses.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\(JSONString.quoted($0.key.rawValue)):\($0.value)" }.joined(separator: ",")
            let rejected = reports.reduce(0) { $0 + $1.snapshot.rejections.values.reduce(0, +) }
            return "{\"journals\":[\(each)],\"statuses\":{\(totals)},\"rejected\":\(rejected)}"
        }
    }

    /// The statuses in the order `status` prints them.
    static let order: [ItemStatus] = [
        .restored, .nothingToRestore, .profileNotFound, .rejected, .failed, .pending, .inFlight, .held,
    ]
}
