import BotsiAPI
import BotsiBasics
import Foundation
import Testing

@testable import BotsiJournal
@testable import BotsiRestore

/// The lifecycle table, line by line, against expectations written out here by hand (the
/// contract of issue 8): every status x event x mode; the selection of owed rows; and the classing
/// of replies by the facts the runner gives.
@Suite struct OutcomePolicyTests {
    typealias Policy = OutcomePolicy

    private static let policy = OutcomePolicy(
        maxAttempts: 3, adaptive: true, backoff: BackoffPolicy(base: 0.5, cap: 30, retryAfterCap: 120))

    /// What the table must say for each event, written without the table's help: a definitive
    /// reply settles any row; anything else leaves a pending row pending with the last error and
    /// a final row exactly as it was (an attempt only).
    private static func expected(_ event: Policy.Event, _ status: ItemStatus) -> Policy.Action {
        // A held row is sent only once `--release-held` makes it owed: it is treated as pending.
        let isFinal = status != .pending && status != .inFlight && status != .held
        let unanswered: Policy.Write = isFinal ? .attemptOnly : .lastError
        switch event {
        case .reply(.restored): return Policy.Action(.settle(.restored))
        case .reply(.nothingToRestore): return Policy.Action(.settle(.nothingToRestore))
        case .reply(.profileNotFound): return Policy.Action(.settle(.profileNotFound))
        case .reply(.rejected): return Policy.Action(.settle(.rejected))
        case .reply(.failed): return Policy.Action(.settle(.failed))
        case .reply(.retryable): return Policy.Action(unanswered, .retry)
        case .reply(.retriesExhausted), .reply(.budgetExhausted), .reply(.retryableWhileStopping):
            return Policy.Action(unanswered)
        case .reply(.unauthorized): return Policy.Action(unanswered, stopsRun: .unauthorized)
        case .reply(.forbidden): return Policy.Action(unanswered, stopsRun: .forbidden)
        case .reply(.iosSettingsMissing): return Policy.Action(unanswered, stopsRun: .iosSettingsMissing)
        case .reply(.tlsFailure): return Policy.Action(unanswered, stopsRun: .tlsFailure)
        case .stop: return Policy.Action(.nothing)
        case .killed: return Policy.Action(isFinal ? .clearMark : .recoverPending)
        }
    }

    /// Every mode a run can be in, as far as the lifecycle tells them apart.
    private static let modes: [Policy.RunMode] = {
        var modes: [Policy.RunMode] = []
        for retryFailed in [false, true] {
            for refresh in [nil, 0, 86_400] as [Double?] {
                for dryRun in [false, true] {
                    for shardCount in [1, 2] {
                        for releaseHeld in [false, true] {
                            var mode = Policy.RunMode()
                            mode.retryFailed = retryFailed
                            mode.refreshOlderThan = refresh
                            mode.dryRun = dryRun
                            mode.shardCount = shardCount
                            mode.releaseHeld = releaseHeld
                            modes.append(mode)
                        }
                    }
                }
            }
        }
        return modes
    }()

    /// Whether a run in `mode` sends a row of `status`, written without the table's help.
    private static func expectedSelection(_ status: ItemStatus, _ mode: Policy.RunMode) -> Policy.Selection {
        switch status {
        case .pending, .inFlight: return .owed
        case .failed, .profileNotFound, .rejected: return mode.retryFailed ? .owed : .notSent
        case .restored, .nothingToRestore: return mode.refreshOlderThan != nil ? .ifAnsweredBefore : .notSent
        case .held: return mode.releaseHeld ? .owed : .notSent
        }
    }

    @Test func everyStateEventAndModeHasTheExpectedAction() {
        var checked = 0
        for mode in Self.modes {
            for status in ItemStatus.allCases {
                #expect(Policy.selection(of: status, mode: mode) == Self.expectedSelection(status, mode))
                for event in Policy.Event.allCases {
                    // The mode chooses which rows are sent; what an event does to a row does not
                    // depend on it (a dry run sends nothing, so no reply ever reaches its rows).
                    let action = Policy.action(for: event, row: Policy.RowClass(status))
                    #expect(action == Self.expected(event, status), "\(event) on a \(status.rawValue) row")
                    checked += 1
                }
            }
        }
        #expect(checked == Self.modes.count * ItemStatus.allCases.count * Policy.Event.allCases.count)
    }

    @Test func aRowIsOwedByItsStatusModeAgeAndShard() {
        let now = Date()
        let old = now.addingTimeInterval(-2 * 86_400)
        let recent = now.addingTimeInterval(-60)
        let mine = (0..<50).map { "p\($0)" }.first { shardIndex(profileId: $0, shardCount: 2) == 0 }!
        let theirs = (0..<50).map { "p\($0)" }.first { shardIndex(profileId: $0, shardCount: 2) == 1 }!
        for mode in Self.modes {
            for status in ItemStatus.allCases {
                // The last: answered exactly D ago, which is not older than D.
                let exact = now.addingTimeInterval(-(mode.refreshOlderThan ?? 0))
                for answeredAt in [nil, old, recent, exact] as [Date?] {
                    let expected: Bool
                    switch Self.expectedSelection(status, mode) {
                    case .owed: expected = true
                    case .notSent: expected = false
                    case .ifAnsweredBefore:
                        expected =
                            answeredAt.map { $0 < now.addingTimeInterval(-(mode.refreshOlderThan ?? 0)) } ?? false
                    }
                    #expect(
                        Policy.isOwed(status: status, answeredAt: answeredAt, profileId: mine, mode: mode, now: now)
                            == expected, "\(status) \(mode) \(String(describing: answeredAt))")
                    let other = Policy.isOwed(
                        status: status, answeredAt: answeredAt, profileId: theirs, mode: mode, now: now)
                    #expect(other == (mode.shardCount == 1 && expected), "another shard's row")
                }
            }
        }
    }

    /// `--answered-before`: of what the selectors choose, a final row answered at or after the
    /// cutoff (or never answered) is left out; pending and held rows are not its concern.
    @Test func aContinuationsCutoffLeavesOutFinalRowsAnsweredSince() {
        let now = Date()
        let cutoff = now.addingTimeInterval(-3600)
        var mode = Policy.RunMode()
        (mode.retryFailed, mode.refreshOlderThan, mode.releaseHeld, mode.answeredBefore) = (true, 0, true, cutoff)
        for status in ItemStatus.allCases where status != .inFlight {
            for answeredAt in [nil, cutoff.addingTimeInterval(-1), cutoff, now] as [Date?] {
                let expected = !status.isFinal || (answeredAt.map { $0 < cutoff } ?? false)
                #expect(
                    Policy.isOwed(status: status, answeredAt: answeredAt, profileId: "p", mode: mode, now: now)
                        == expected, "\(status) answered \(String(describing: answeredAt))")
            }
        }
        let selection = Policy.owedSelection(mode: mode, now: now)
        #expect(selection.finalAnsweredBefore == cutoff)
        #expect(selection.answeredBefore == cutoff, "the refresh's own cutoff (now − 0s) is later")
    }

    @Test func theJournalsSelectionIsTheTables() {
        let now = Date()
        for mode in Self.modes {
            let selection = Policy.owedSelection(mode: mode, now: now)
            for status in ItemStatus.allCases where status != .inFlight {
                #expect(selection.statuses.contains(status) == (Self.expectedSelection(status, mode) == .owed))
                #expect(
                    selection.refreshStatuses.contains(status)
                        == (Self.expectedSelection(status, mode) == .ifAnsweredBefore))
            }
            #expect(selection.answeredBefore == mode.refreshOlderThan.map { now.addingTimeInterval(-$0) })
        }
    }

    @Test func theTableHasExactlyOneRulePerEventAndClassOfRow() {
        let keys = Policy.rules.map { "\($0.event)|\($0.row)" }
        #expect(Set(keys).count == keys.count)
        #expect(keys.count == Policy.Event.allCases.count * Policy.RowClass.allCases.count)
        #expect(Policy.rules.allSatisfy { !$0.why.isEmpty })
    }

    @Test func theAttemptRecordsTheStatusTheRowTookRetryOrKept() {
        #expect(Policy.Action(.settle(.failed)).attemptOutcome == .status(.failed))
        #expect(Policy.Action(.lastError, .retry).attemptOutcome == .retry)
        #expect(Policy.Action(.attemptOnly, .retry).attemptOutcome == .retry)
        #expect(Policy.Action(.lastError).attemptOutcome == .status(.pending))
        #expect(Policy.Action(.attemptOnly).attemptOutcome == .kept)
    }

    // MARK: Classing replies

    private static let retryable503 = RestoreReply.retryable(
        code: "http_503", httpStatus: 503, retryAfter: nil, message: nil)
    private static let retryable429 = RestoreReply.retryable(
        code: "http_429", httpStatus: 429, retryAfter: 2, message: nil)

    private func facts(attempts: Int = 1, stopping: Bool = false, budget: Bool = true) -> Policy.Facts {
        Policy.Facts(attemptsThisRun: attempts, isStopping: stopping, budgetCanPay: budget)
    }

    @Test func definitiveAndFatalRepliesAreClassedWhateverTheFacts() {
        let replies: [(RestoreReply, Policy.ReplyClass)] = [
            (.restored(ProfileSnapshot()), .restored), (.nothingToRestore(message: nil), .nothingToRestore),
            (.profileNotFound(message: nil), .profileNotFound),
            (.rejected(code: "bad_request", message: nil), .rejected),
            (.failed(code: "http_409", httpStatus: 409, message: nil), .failed),
            (.fatal(.unauthorized, httpStatus: 401, message: "m"), .unauthorized),
            (.fatal(.forbidden, httpStatus: 403, message: "m"), .forbidden),
            (.fatal(.iosSettingsMissing, httpStatus: 400, message: "m"), .iosSettingsMissing),
            (.fatal(.tlsFailure, httpStatus: nil, message: "m"), .tlsFailure),
        ]
        for (reply, expected) in replies {
            for stopping in [false, true] {
                for attempts in [1, 3, 9] {
                    let classed = Self.policy.classify(reply, facts: facts(attempts: attempts, stopping: stopping))
                    #expect(classed == expected)
                }
            }
        }
    }

    @Test func aRetryableReplyRetriesOnlyWithAttemptsBudgetAndARunGoingOn() {
        #expect(Self.policy.classify(Self.retryable503, facts: facts()) == .retryable)
        #expect(Self.policy.classify(Self.retryable503, facts: facts(attempts: 2)) == .retryable)
        #expect(Self.policy.classify(Self.retryable503, facts: facts(attempts: 3)) == .retriesExhausted)
        #expect(Self.policy.classify(Self.retryable503, facts: facts(budget: false)) == .budgetExhausted)
        #expect(Self.policy.classify(Self.retryable503, facts: facts(stopping: true)) == .retryableWhileStopping)
        // Stopping wins over everything, attempts over budget.
        #expect(
            Self.policy.classify(Self.retryable503, facts: facts(attempts: 3, stopping: true, budget: false))
                == .retryableWhileStopping)
        #expect(
            Self.policy.classify(Self.retryable503, facts: facts(attempts: 3, budget: false)) == .retriesExhausted)
    }

    @Test func aThrottling429CostsNoBudgetWhenTheRunSlowsDownInstead() {
        var random = SplitMix64(seed: 1)
        let adaptive = Self.policy.decide(
            Self.retryable429, row: .pending, facts: facts(budget: false), random: &random)
        #expect(adaptive.reply == .retryable)
        #expect(!adaptive.spendsRetryBudget)
        var fixed = Self.policy
        fixed.adaptive = false
        #expect(fixed.classify(Self.retryable429, facts: facts(budget: false)) == .budgetExhausted)
        let paid = fixed.decide(Self.retryable429, row: .pending, facts: facts(), random: &random)
        #expect(paid.spendsRetryBudget)
    }

    @Test func aRetryWaitsTheBackoffAndHonoursRetryAfterAsAFloor() {
        var random = SplitMix64(seed: 7)
        let decision = Self.policy.decide(Self.retryable429, row: .pending, facts: facts(), random: &random)
        #expect(decision.action.next == .retry)
        #expect(decision.retryDelay.map { $0 >= 2 && $0 <= 120 } == true)
        var same = SplitMix64(seed: 7)
        let expected = Self.policy.backoff.delay(failedAttempts: 1, retryAfter: 2, random: &same)
        #expect(decision.retryDelay == expected)
        let settled = Self.policy.decide(.restored(ProfileSnapshot()), row: .pending, facts: facts(), random: &random)
        #expect(settled.retryDelay == nil)
        #expect(!settled.spendsRetryBudget)
    }

    @Test func stopCausesNameTheirExitCodes() {
        #expect(StopCause.unauthorized.exitCodes == [77])
        #expect(StopCause.iosSettingsMissing.exitCodes == [78])
        #expect(StopCause.windowEnd.exitCodes == [75])
        #expect(StopCause.signal.exitCodes == [129, 130, 143])
    }
}

/// docs/lifecycle.md is the policy's table printed: checked in, and never stale.
@Suite struct LifecycleDocumentTests {
    private static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/"
            && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path)
        {
            url.deleteLastPathComponent()
        }
        return url
    }()

    @Test func theCheckedInDocumentIsWhatTheCodeSays() throws {
        let path = Self.packageRoot.appendingPathComponent("docs/lifecycle.md").path
        let checkedIn = try String(contentsOfFile: path, encoding: .utf8)
        #expect(checkedIn == LifecycleDocument.markdown(), "docs/lifecycle.md is stale: run 'bash scripts/docs.sh'")
    }

    @Test func theTransitionTableHasALinePerEventAndTheSelectionTableALinePerState() {
        let lines = LifecycleDocument.markdown().split(separator: "\n").map(String.init)
        let transitions = lines.drop { $0 != "## Transitions" }.prefix { $0 != "## Counts and exit status" }
        #expect(
            transitions.filter { $0.hasPrefix("| ") && !$0.hasPrefix("| event") }.count == Policy.Event.allCases.count)
        let modes = lines.drop { !$0.hasPrefix("## Modes") }.prefix { $0 != "## Events" }
        #expect(modes.filter { $0.hasPrefix("| `") }.count == ItemStatus.allCases.count)
        // A final row's line for a retryable reply says what the rule says: no regression.
        let retryable = transitions.first { $0.hasPrefix("| retryable reply, attempts spent |") }
        #expect(retryable?.contains("keeps status, code and snapshot") == true)
    }

    typealias Policy = OutcomePolicy
}

/// The commands the advice prints must do what the words say: same journal, same service.
@Suite struct RunAdviceTests {
    @Test func theRunCommandCarriesWhatDecidesWhereRowsGoAndQuotesForTheShell() {
        var options = RunOptions()
        options.journalPath = "/data/my journal.sqlite"
        #expect(RunAdvice.runCommand(options) == "botsi-restore run --journal '/data/my journal.sqlite'")
        options.baseURL = "http://127.0.0.1:8080"
        options.keyEnvironmentVariable = "OTHER_KEY"
        options.caCertificatePath = "ca.pem"
        options.shardIndex = 1
        options.shardCount = 4
        options.format = "csv"
        options.retryFailed = true
        #expect(
            RunAdvice.runCommand(options)
                == "botsi-restore run --journal '/data/my journal.sqlite' --base-url http://127.0.0.1:8080 "
                + "--key-env OTHER_KEY --cacert ca.pem --shard 1/4")
        #expect(
            RunAdvice.runCommand(options, inputs: ["it's.csv"]).hasPrefix(
                "botsi-restore run 'it'\\''s.csv' --journal '/data/my journal.sqlite' --format csv"))
        #expect(
            RunAdvice.reportCommand(journalPath: "j.sqlite", ["--status", "pending"])
                == "botsi-restore report --journal j.sqlite --status pending")
    }

    /// A first-day review: the command after a `--key-file` run exited 64 (no key), and a shard's
    /// without `--job-rate` paced as if alone. The key's source, the proxy, the conflict rule and
    /// the pace go on; the run's own window, retries and timeouts do not.
    @Test func theRunCommandKeepsTheKeyTheConflictRuleAndThePace() {
        var options = RunOptions()
        options.journalPath = "j.sqlite"
        options.keyFile = "/etc/botsi/key"
        options.proxy = "http://proxy:3128"
        options.onConflict = .hold
        options.concurrency = 4
        options.rate = 12.5
        options.adaptive = false
        options.headroom = 20
        options.shardIndex = 2
        options.shardCount = 4
        options.jobRate = 40
        options.maxDuration = 3600
        options.stopAt = "06:30"
        options.timeout = 5
        options.maxAttempts = 3
        // The failure threshold the job stops at goes on too (a review: 20% became the default 50%).
        options.maxFailureRate = 20
        options.minSample = 50
        #expect(
            RunAdvice.runCommand(options)
                == "botsi-restore run --journal j.sqlite --on-conflict hold --key-file /etc/botsi/key "
                + "--proxy http://proxy:3128 --concurrency 4 --rate 12.5 --no-adaptive --headroom 20% --shard 2/4 "
                + "--job-rate 40 --max-failure-rate 20 --min-sample 50")
        options.proxy = nil
        options.noProxy = true
        #expect(RunAdvice.runCommand(options).contains(" --no-proxy "))
        // A review: --headroom 0.5% came back as "--headroom 0.5", which the option refuses.
        options.headroom = 0.5
        #expect(RunAdvice.runCommand(options).contains(" --headroom 0.5% "))
        options.headroom = 0.00001
        #expect(RunAdvice.runCommand(options).contains(" --headroom 0.00001% "), "never an exponent")
        options.headroom = 0.5
        // The concurrency asked for, not the one a low descriptor limit allowed.
        options.concurrencyAsked = 64
        #expect(RunAdvice.runCommand(options).contains(" --concurrency 64 "))
        // Reading inputs again, the filters the run read them with (without them a refused row is sent).
        options.environment = "Production"
        options.bundleId = "com.example.app"
        let reading = RunAdvice.runCommand(options, inputs: ["in.jsonl"])
        #expect(reading.contains(" --bundle-id com.example.app --environment Production "), "\(reading)")
        #expect(!RunAdvice.runCommand(options).contains("--environment"), "no input, no filter")
        // An input named like an option is given as a path, which no option parser takes for one.
        #expect(RunAdvice.runCommand(RunOptions(), inputs: ["-big.csv"]).hasPrefix("botsi-restore run ./-big.csv "))
    }

    /// A review: on a merged journal, status advised one shard's `--shard 1/2 --job-rate 10`, which
    /// sent half the pending rows, then said nothing was owed. A merged run's command has no shard,
    /// and the job's rate as its own; a relative key file and CA file are given by the paths the
    /// run recorded.
    @Test func aMergedJournalsCommandHasNoShardAndTheKeyFilesFullPath() {
        let options =
            #"{"baseURL":"http://127.0.0.1:9","shardIndex":1,"shardCount":2,"jobRate":10,"#
            + #""mergedFrom":{"journal":"s1.sqlite","run":1},"keyFile":"key.txt","keyFilePath":"/srv/job/key.txt","#
            + #""caCertificatePath":"ca.pem","caCertificateFilePath":"/srv/job/ca.pem"}"#
        let run = RunRecord(
            id: 1, startedAt: "2026-12-06T00:00:00.000Z", endedAt: "2026-12-06T00:01:00.000Z", state: .stopped,
            exitCode: 77, toolVersion: "test", host: "h", pid: 1, options: options, inputs: [], counts: RunCounts())
        #expect(
            RunAdvice.runCommand(StatusReport.recordedOptions(run, journalPath: "m.sqlite"))
                == "botsi-restore run --journal m.sqlite --base-url http://127.0.0.1:9 --key-file /srv/job/key.txt "
                + "--cacert /srv/job/ca.pem --rate 10")
        var unmerged = run
        unmerged.options = options.replacingOccurrences(of: #""mergedFrom":{"journal":"s1.sqlite","run":1},"#, with: "")
        #expect(
            RunAdvice.runCommand(StatusReport.recordedOptions(unmerged, journalPath: "s1.sqlite"))
                == "botsi-restore run --journal s1.sqlite --base-url http://127.0.0.1:9 --key-file /srv/job/key.txt "
                + "--cacert /srv/job/ca.pem --shard 1/2 --job-rate 10")
    }
}
