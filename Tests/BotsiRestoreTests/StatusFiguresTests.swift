import BotsiBasics
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// The figures `status` derives from a journal's snapshot — how long the run took, its rate, its
/// ETA, its requests and retries, the rows other shards owe — and which lines it prints when. Built
/// from snapshots set by hand, so that each figure is checked against a number worked out here:
/// the end-to-end tests read real journals, whose times no test can pin.
@Suite struct StatusFiguresTests {
    static let start = "2026-12-07T10:00:00.000Z"
    static let startDate = Timestamp.date(start)!

    static func run(
        ended: String? = nil, counts: RunCounts = RunCounts(), progress: RunProgressRecord = RunProgressRecord(),
        options: String = #"{"inputs":["in.csv"]}"#
    ) -> RunRecord {
        RunRecord(
            id: 2, startedAt: start, endedAt: ended, state: ended == nil ? .running : .finished,
            exitCode: ended == nil ? nil : 0, toolVersion: "test", host: "h", pid: 7, options: options, inputs: [],
            counts: counts, progress: progress)
    }

    static func report(
        _ run: RunRecord?, holder: Bool, secondsIn: Double, items: [StatusCodeCount] = [],
        edit: (inout JournalSnapshot) -> Void = { _ in }
    ) -> StatusReport {
        var snapshot = JournalSnapshot()
        snapshot.latestRun = run
        snapshot.runCount = 2
        snapshot.items = items
        edit(&snapshot)
        return StatusReport(
            journalPath: "j.sqlite", snapshot: snapshot,
            holder: holder ? LockHolder(pid: 7, host: "h", startedAt: start) : nil,
            now: startDate.addingTimeInterval(secondsIn))
    }

    static func lines(_ report: StatusReport, _ prefix: String) -> [Substring] {
        report.renderText().split(separator: "\n").filter { $0.hasPrefix(prefix) }
    }

    /// Running: to now. Ended: to its end. Killed: to its last attempt, not to now (a status read
    /// a day later would otherwise say the run took a day). A clock set back never gives a
    /// negative time.
    @Test func theRunsTimeEndsWhereItsStateSays() {
        #expect(Self.report(Self.run(), holder: true, secondsIn: 90).elapsedSeconds == 90)
        #expect(
            Self.report(Self.run(ended: "2026-12-07T10:00:40.000Z"), holder: false, secondsIn: 900).elapsedSeconds
                == 40)
        let killed = Self.report(Self.run(), holder: false, secondsIn: 86_400) {
            $0.activity.lastAttemptAt = "2026-12-07T10:00:25.000Z"
        }
        #expect(killed.liveness == .vanished && killed.elapsedSeconds == 25)
        let skewed = Self.report(Self.run(ended: "2026-12-07T09:59:00.000Z"), holder: false, secondsIn: 10)
        #expect(skewed.elapsedSeconds == 0)
    }

    /// While running, over the last minute — or over the time so far when that is less; once
    /// ended, its requests over the whole run.
    @Test func theRateIsTheLastMinutesWhileRunningAndTheWholeRunsAfter() {
        let early = Self.report(Self.run(), holder: true, secondsIn: 30) { $0.activity.recentRequests = 90 }
        #expect(early.rate == 3)
        let later = Self.report(Self.run(), holder: true, secondsIn: 600) { $0.activity.recentRequests = 120 }
        #expect(later.rate == 2)
        var counts = RunCounts()
        counts.requests = 500
        let ended = Self.report(
            Self.run(ended: "2026-12-07T10:01:40.000Z", counts: counts), holder: false, secondsIn: 900)
        #expect(ended.rate == 5)
    }

    /// From the share of the input read, once over 1% of it (before that the share says little);
    /// else from the rows known to be pending (in flight too) at the recent rate.
    @Test func theETAComesFromTheInputReadOrElseFromThePendingRows() {
        let quarter = Self.report(
            Self.run(progress: RunProgressRecord(bytesRead: 250, totalBytes: 1000)), holder: true, secondsIn: 30)
        #expect(quarter.etaSeconds == 90)
        let pending = [
            StatusCodeCount(status: .pending, code: nil, count: 40),
            StatusCodeCount(status: .inFlight, code: nil, count: 20),
        ]
        for (read, total) in [(5, 1000), (1000, 1000), (1200, 1000)] as [(Int64, Int64)] {
            let report = Self.report(
                Self.run(progress: RunProgressRecord(bytesRead: read, totalBytes: total)), holder: true, secondsIn: 30,
                items: pending
            ) { $0.activity.recentRequests = 90 }
            #expect(report.etaSeconds == 20, "read \(read) of \(total)")
        }
        let over = Self.report(
            Self.run(progress: RunProgressRecord(bytesRead: 1200, totalBytes: 1000)), holder: true, secondsIn: 30)
        #expect(over.inputFractionRead == 1)
        #expect(Self.report(Self.run(ended: Self.start), holder: false, secondsIn: 30).etaSeconds == nil)
    }

    /// The ETA line says the share read only while some is left to read; at the end of the input
    /// it counts the pending rows instead.
    @Test func theETALineNamesTheShareReadOnlyBeforeTheEnd() {
        let pending = [StatusCodeCount(status: .pending, code: nil, count: 60)]
        let reading = Self.report(
            Self.run(progress: RunProgressRecord(bytesRead: 250, totalBytes: 1000)), holder: true, secondsIn: 30)
        #expect(Self.lines(reading, "ETA") == ["ETA       ~1m30s (25% of the input read, at the pace so far)"])
        let read = Self.report(
            Self.run(progress: RunProgressRecord(bytesRead: 1000, totalBytes: 1000)), holder: true, secondsIn: 30,
            items: pending
        ) { $0.activity.recentRequests = 90 }
        #expect(Self.lines(read, "ETA") == ["ETA       ~20.0s for the 60 pending rows read so far"])
    }

    /// An ended run's own counts win over what its attempts say (they hold requests whose outcome
    /// was never recorded, and retries as the summary counted them); a killed run's resends come
    /// from its attempts; a live run's from its attempts answered "retry".
    @Test func requestsAndRetriesComeFromTheBestRecordThereIs() {
        var counts = RunCounts()
        counts.requests = 12
        counts.retries = 3
        let ended = Self.report(Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10) {
            $0.activity.requests = 10
            $0.activity.retries = 5
            $0.activity.outcomes = [.retry: 7]
        }
        #expect(ended.requests == 12 && ended.retries == 3)
        let killed = Self.report(Self.run(), holder: false, secondsIn: 10) {
            $0.activity.requests = 10
            $0.activity.retries = 5
            $0.activity.outcomes = [.retry: 7]
        }
        #expect(killed.requests == 10 && killed.retries == 5)
        let live = Self.report(Self.run(), holder: true, secondsIn: 10) { $0.activity.outcomes = [.retry: 7] }
        #expect(live.retries == 7)
    }

    /// Rows other shards owe are at most the pending rows, and none while the run is alive or on a
    /// merged journal (it holds every shard's rows).
    @Test func otherShardsOweAtMostThePendingRows() {
        var counts = RunCounts()
        counts.otherShardsOwed = 50
        let pending = [StatusCodeCount(status: .pending, code: nil, count: 8)]
        let ended = Self.report(
            Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10, items: pending)
        #expect(ended.renderJSON().contains(#""otherShardsPending":8"#), "\(ended.renderJSON())")
        let merged = Self.report(
            Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10, items: pending
        ) {
            $0.mergedFrom = ["/srv/a.sqlite"]
        }
        #expect(!merged.renderJSON().contains("otherShardsPending"), "\(merged.renderJSON())")
        let live = Self.report(Self.run(counts: counts), holder: true, secondsIn: 10, items: pending)
        #expect(!live.renderJSON().contains("otherShardsPending"), "\(live.renderJSON())")
    }

    /// The lock line while a run holds it is the run line itself; only an ended or killed run's
    /// status says a new one is starting. Statuses with no rows are left out of the rows line, and
    /// failed rows are explained by their code.
    @Test func linesAppearOnlyWhenTheySaySomething() {
        let live = Self.report(Self.run(), holder: true, secondsIn: 10)
        #expect(Self.lines(live, "lock").isEmpty, "\(live.renderText())")
        let starting = Self.report(Self.run(ended: Self.start), holder: true, secondsIn: 10)
        #expect(Self.lines(starting, "lock") == ["lock      held by pid 7 on h: a new run is starting"])
        let rows = Self.report(
            Self.run(ended: Self.start), holder: false, secondsIn: 10,
            items: [
                StatusCodeCount(status: .restored, code: nil, count: 3),
                StatusCodeCount(status: .failed, code: "http_409", count: 2),
            ])
        #expect(Self.lines(rows, "rows") == ["rows      restored 3 · failed 2"])
        #expect(rows.renderText().contains("\n          failed (http_409): 2\n"), "\(rows.renderText())")
        #expect(!rows.renderText().contains("unrecorded"), "\(rows.renderText())")
    }

    /// A run still reading does not yet know which inputs it leaves: the gone and standard-input
    /// lines are for a run that ended.
    @Test func aLiveRunGetsNoAdviceAboutInputsLeftUnread() {
        let gone = UnreadInput(path: "/nonexistent/dated-export.csv", run: 1, options: "{}")
        let earlier = Self.run(ended: Self.start)
        for holder in [true, false] {
            let report = Self.report(holder ? Self.run() : earlier, holder: holder, secondsIn: 10) {
                $0.unreadInputs = [gone]
                $0.goneInputs = [gone]
                $0.standardInputUnreadBy = earlier
            }
            #expect(Self.lines(report, "gone").count == (holder ? 0 : 1), "\(report.renderText())")
            #expect(Self.lines(report, "stdin").count == (holder ? 0 : 1), "\(report.renderText())")
        }
    }

    /// `status` over several journals: how many of them run, and the refused rows of all.
    @Test func aJobsTotalsCountItsRunningJournalsAndAllRefusedRows() {
        let live = Self.report(Self.run(), holder: true, secondsIn: 10) { $0.rejections = ["malformed_csv": 2] }
        let ended = Self.report(Self.run(ended: Self.start), holder: false, secondsIn: 10) {
            $0.rejections = ["malformed_csv": 1, "invalid_profile_id": 4]
        }
        let text = StatusReport.Job([live, ended]).renderText()
        #expect(text.contains("\nall 2 journals: 1 running\n"), "\(text)")
        #expect(text.contains("\nrejected  7 by the input checks\n"), "\(text)")
    }

    /// The requests the journal could not record are named only when there were some.
    @Test func theRunLineNamesUnrecordedRequestsOnlyWhenThereAreSome() {
        var counts = RunCounts()
        counts.requests = 5
        let recorded = Self.report(Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10)
        #expect(Self.lines(recorded, "this run") == ["this run  5 requests, 0 retries"])
        counts.unrecordedRequests = 2
        let unrecorded = Self.report(Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10)
        #expect(
            Self.lines(unrecorded, "this run") == [
                "this run  5 requests, 2 of them sent but not recorded (the journal failed before their outcomes were written), 0 retries"
            ])
    }

    /// Held rows wait for a person after any run, a finished `--release-held` too (rows held since);
    /// only a `--release-held` stopped halfway is finished by the command `next` already gives.
    @Test func heldRowsAreAdvisedUnlessAStoppedReleaseFinishesThem() {
        let items = [
            StatusCodeCount(status: .pending, code: nil, count: 1), StatusCodeCount(status: .held, code: nil, count: 2),
        ]
        var counts = RunCounts()
        let finished = Self.report(
            Self.run(ended: Self.start, counts: counts, options: #"{"releaseHeld":true}"#), holder: false,
            secondsIn: 10,
            items: items)
        #expect(Self.lines(finished, "held").count == 1, "\(finished.renderText())")
        counts.owedNotTakenUp = 3
        let stopped = Self.report(
            Self.run(ended: Self.start, counts: counts, options: #"{"releaseHeld":true}"#), holder: false,
            secondsIn: 10,
            items: items)
        #expect(Self.lines(stopped, "held").isEmpty, "\(stopped.renderText())")
        #expect(stopped.renderText().contains("finish the selection it stopped in"), "\(stopped.renderText())")
    }

    /// After failures stopped a run: the report of its failed rows — or the page, when resent final
    /// rows failed and kept their status (a report by status does not list them).
    @Test func theFailuresThatStoppedARunAreShownWhereTheyCanBeSeen() {
        var counts = RunCounts()
        counts.stopCause = .failureThreshold
        let run = Self.run(ended: Self.start, counts: counts)
        let report = Self.report(run, holder: false, secondsIn: 10)
        #expect(
            report.fixFirst(run)?.contains("--status failed --status pending") == true, "\(report.fixFirst(run) ?? "")")
        counts.kept = 2
        let kept = Self.run(ended: Self.start, counts: counts)
        let keptReport = Self.report(kept, holder: false, secondsIn: 10)
        #expect(keptReport.fixFirst(kept)?.contains("on the page") == true, "\(keptReport.fixFirst(kept) ?? "")")
    }

    /// An input named by several runs (or every shard of a merged journal) is named once.
    @Test func aGoneInputIsNamedOnce() {
        let gone = UnreadInput(path: "/nonexistent/dated-export.csv", run: 1, options: "{}")
        let report = Self.report(Self.run(ended: Self.start), holder: false, secondsIn: 10) {
            $0.unreadInputs = [gone, gone]
            $0.goneInputs = [gone, gone]
        }
        let line = Self.lines(report, "gone").joined()
        #expect(line.components(separatedBy: "--forget-input").count == 2, "\(line)")
    }

    /// A merged journal names the other shards whose latest run rejected whole inputs (exit 65, no
    /// stop): not the shard whose run is the journal's latest (its own advice says it), and not a
    /// shard stopped by a damaged input (exit 65 too, with a stop and its own fix).
    @Test func brokenShardsAreTheOthersWhoseInputsWereRejected() {
        func ended(_ id: Int64, stop: StopCause? = nil) -> RunRecord {
            var counts = RunCounts()
            counts.stopCause = stop
            var run = Self.run(ended: Self.start, counts: counts)
            (run.id, run.exitCode, run.state) = (id, 65, stop == nil ? .finished : .stopped)
            return run
        }
        let report = Self.report(ended(3), holder: false, secondsIn: 10) {
            $0.mergedFrom = ["/srv/a.sqlite", "/srv/b.sqlite", "/srv/c.sqlite"]
            $0.shardLatestRuns = [
                "/srv/a.sqlite": ended(3), "/srv/b.sqlite": ended(2), "/srv/c.sqlite": ended(1, stop: .inputDamaged),
            ]
        }
        #expect(report.brokenShardRuns.map(\.shard) == ["/srv/b.sqlite"])
    }

    /// A killed selection (`--retry-failed`) left its chosen rows owed: `next` finishes it, leaving
    /// out the rows answered since it started.
    @Test func aKilledSelectionIsFinishedFromWhereItStarted() {
        let report = Self.report(Self.run(options: #"{"retryFailed":true}"#), holder: false, secondsIn: 10)
        let next = Self.lines(report, "next").joined()
        #expect(next.contains("finish the selection it stopped in"), "\(report.renderText())")
        #expect(next.contains("--retry-failed --answered-before \(Self.start)"), "\(next)")
    }

    /// Pending rows that all belong to other shards are not this shard's to send: only the shards line says them.
    @Test func pendingRowsOfOtherShardsAreNotThisCommandsToSend() {
        var counts = RunCounts()
        counts.otherShardsOwed = 8
        let report = Self.report(
            Self.run(ended: Self.start, counts: counts), holder: false, secondsIn: 10,
            items: [StatusCodeCount(status: .pending, code: nil, count: 8)])
        #expect(Self.lines(report, "next").isEmpty, "\(report.renderText())")
        #expect(Self.lines(report, "shards").count == 1, "\(report.renderText())")
    }

    /// A standard input cut short must be piped again by a person: a systemd unit's key file is
    /// gone once the unit ends, so the command names the key as KEY_FILE for them to give.
    @Test func aStandardInputToPipeAgainNamesAUnitsKeyAsKEYFILE() {
        for (keyFile, named) in [
            ("/run/credentials/botsi-restore.service/key", "--key-file KEY_FILE"),
            ("/etc/botsi/key", "--key-file /etc/botsi/key"),
        ] {
            let earlier = Self.run(
                ended: Self.start, options: #"{"keyFile":"\#(keyFile)","keyFilePath":"\#(keyFile)"}"#)
            let report = Self.report(earlier, holder: false, secondsIn: 10) { $0.standardInputUnreadBy = earlier }
            let stdin = Self.lines(report, "stdin").joined()
            #expect(stdin.contains(named), "\(stdin)")
        }
    }
}
