import BotsiBasics
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

@Suite("runs the service stops")
struct StopTests {
    @Test func aRefusedKeyStopsTheRunWith77AfterAtMostConcurrencyRequests() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.keys = ["key-A-accepted"]
            options.latencyMilliseconds = 20
        }
        defer { simulator.stop() }
        let rows = Pair.generate(100)
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4"]), key: "key-B-refused",
            in: workspace)
        #expect(finished.status == 77, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("BOTSI_SECRET_KEY"), "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("Bearer"), "stderr: \(finished.stderr)")
        // 401s are not counted per pair, so count what reached the server at all.
        #expect(simulator.stats().statusCounts["401"] ?? 0 <= 4)
        #expect(simulator.stats().requests <= 4)
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.items.count == rows.count)
        #expect(journal.pairs { $0 == "pending" } == Set(rows), "rows not pending after a 401")
    }

    /// A selection run takes up finished rows a batch at a time; stopped by a refused key after a
    /// request or so, the rows it took up and never sent are neither counted as its own (by the
    /// status an earlier run gave them) nor forgotten: they stay owed, and the advice and `status`
    /// give the selection's command again.
    @Test func aStoppedSelectionRunOwesTheRowsItTookUpAndDidNotSend() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.keys = ["key-A-accepted"]
            options.latencyMilliseconds = 20
        }
        defer { simulator.stop() }
        let rows = Pair.generate(30)
        let input = workspace.csv(rows)
        let first = try botsi(runArguments([input], workspace, simulator), key: "key-A-accepted", in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let stopped = try botsi(
            runArguments(
                [], workspace, simulator, ["--refresh-older-than", "0s", "--concurrency", "4", "--log-format", "json"]),
            key: "key-B-refused", in: workspace)
        #expect(stopped.status == 77, "stderr: \(stopped.stderr)")
        let sent = simulator.stats().statusCounts["401"] ?? 0
        let summary = try #require(
            stopped.stderr.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.last { $0["event"] as? String == "summary" }, "stderr: \(stopped.stderr)")
        #expect(summary["owedRows"] as? Int == sent, "summary: \(summary)")
        #expect(summary["owedNotTakenUp"] as? Int == rows.count - sent, "summary: \(summary)")
        // The rows the refusal answered kept their status and are owed to the refresh too.
        #expect(summary["owedUnanswered"] as? Int == sent, "summary: \(summary)")
        let statuses = summary["statuses"] as? [String: Int] ?? [:]
        #expect(statuses.values.reduce(0, +) <= sent, "counted as the stopped run's: \(statuses)")
        let next = summary["nextCommand"] as? String ?? ""
        #expect(next.contains("--refresh-older-than 0s"), "next: \(next)")
        let runs = try botsi(["runs", "--journal", workspace.journal, "--format", "jsonl"], key: nil, in: workspace)
        let lines = runs.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let firstRunRows = (lines.first?["statuses"] as? [String: Int] ?? [:]).values.reduce(0, +)
        #expect(firstRunRows >= rows.count - sent, "runs: \(runs.stdout)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains("finish the selection it stopped in with:")
                && status.stdout.contains("--refresh-older-than 0s"), "status: \(status.stdout)")
        let page = try botsi(
            ["report", "--journal", workspace.journal, "--format", "html", "--output", workspace.file("page.html")],
            key: nil, in: workspace)
        #expect(page.status == 0, "\(page.stderr)")
        #expect(
            workspace.text("page.html")?.contains("finish the selection it stopped in") == true,
            "the page's next step forgets the selection")
        // Its verdict does not say "none owed" beside that step (a first-day review).
        #expect(
            workspace.text("page.html")?.contains(
                "none pending (the selection the latest run stopped in is not finished)")
                == true, "the verdict forgets the selection")
        let resumed = try botsi(
            runArguments([], workspace, simulator, ["--refresh-older-than", "0s"]), key: "key-A-accepted", in: workspace
        )
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(resumed.stderr.contains("sent first: \(rows.count)"), "stderr: \(resumed.stderr)")
    }

    /// A refresh stopped by its window after some resends ran out of attempts: those rows kept
    /// their status and answer time, so the continuation it advises chooses them again; the count
    /// it gives says so (a first-day review: "send the 999 rows", and 1,000 were sent).
    @Test func aStoppedSelectionCountsTheRowsItsContinuationSendsAgain() throws {
        let workspace = Workspace()
        let answering = try startSimulator()
        defer { answering.stop() }
        let rows = Pair.generate(40)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, answering), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let failing = try startFailingSimulator()
        defer { failing.stop() }
        let stopped = try botsi(
            runArguments(
                [], workspace, failing,
                ["--refresh-older-than", "0s", "--max-attempts", "1", "--rate", "20", "--max-duration", "1s"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let sent = failing.stats().statusCounts["500"] ?? 0
        #expect(sent > 0 && sent < rows.count, "sent \(sent)")
        #expect(stopped.stderr.contains("resent without a definitive answer, kept their earlier status: \(sent)"))
        #expect(
            stopped.stderr.contains("send the \(rows.count) rows the journal still owes with:"),
            "stderr: \(stopped.stderr)")
        // The same command again goes on with the selection and sends that many.
        let before = answering.stats().statusCounts.values.reduce(0, +)
        let resumed = try botsi(
            runArguments([], workspace, answering, ["--refresh-older-than", "0s"]), key: Simulator.defaultKey,
            in: workspace)
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(answering.stats().statusCounts.values.reduce(0, +) - before == rows.count)
        #expect(resumed.stderr.contains("went on with the selection run 2 stopped in"), "stderr: \(resumed.stderr)")
    }

    /// A refresh stopped by Ctrl-C after it sent every row, each answered 500: most wait out a
    /// backoff, the last ones get their 500 during the drain. Those rows kept their status and are
    /// owed to the selection as much as rows it never sent: the summary counts them as kept and
    /// owed (it said "the journal owes no row"), `status` says to finish the selection, a stop by
    /// the window says how many the journal owes, and the advised command refreshes each row once.
    @Test func aStoppedSelectionOwesTheRowsItResentAndStoppedBeforeAnAnswer() throws {
        let workspace = Workspace()
        let good = try startSimulator()
        defer { good.stop() }
        let rows = Pair.generate(12)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, good), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.internalError]
            options.latencyMilliseconds = 300
        }
        defer { failing.stop() }
        let refresh = [
            "run", "--journal", workspace.journal, "--base-url", failing.baseURL, "--refresh-older-than", "0s",
        ]
        // A first retry waits up to a minute (full jitter: rarely less than a second).
        let child = try Child(
            refresh + ["--concurrency", "4", "--backoff-base", "60s", "--backoff-cap", "60s", "--log-format", "json"],
            key: Simulator.defaultKey,
            in: workspace)
        // Every row, not every request: a first retry that came due early (full jitter) counted
        // as a request, and the stop came before the last row went out (owed 11 of 12).
        let sent = eventually(timeout: 60) { failing.stats().pairCount >= rows.count }
        child.send(SIGINT)
        let stopped = child.wait(timeout: 60)
        try #require(sent, "the rows never went out: \(stopped.stderr)")
        #expect(stopped.status == 130, "stderr: \(stopped.stderr)")
        let summary = try #require(
            ModelSequence.jsonObjects(stopped.stderr).last { $0["event"] as? String == "summary" },
            "stderr: \(stopped.stderr)")
        #expect(summary["owedUnanswered"] as? Int == rows.count, "summary: \(summary)")
        #expect(summary["kept"] as? Int == rows.count, "summary: \(summary)")
        let next = try #require(summary["nextCommand"] as? String, "summary: \(summary)")
        #expect(next.contains("--refresh-older-than 0s") && next.contains("--answered-before"), "next: \(next)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(status.stdout.contains("finish the selection it stopped in with:"), "status: \(status.stdout)")

        // Stopped by its window, paced, with retries coming due faster than the pace sends them.
        let windowed = try botsi(
            refresh + ["--concurrency", "4", "--rate", "20", "--backoff-base", "200ms", "--max-duration", "1s"],
            key: Simulator.defaultKey,
            in: workspace)
        #expect(windowed.status == 75, "stderr: \(windowed.stderr)")
        #expect(!windowed.stderr.contains("read the input"), "it has none: \(windowed.stderr)")
        #expect(
            windowed.stderr.contains("send the \(rows.count) rows the journal still owes"),
            "stderr: \(windowed.stderr)")

        let advice = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        let advised = try #require(advice.stdout.firstMatch(of: /with: (botsi-restore run [^\n]*)/)?.1)
        let words = String(advised).split(separator: " ").map(String.init).dropFirst()
            .map { $0 == failing.baseURL ? good.baseURL : $0 }
        let before = good.stats().requests
        let resumed = try botsi(Array(words) + ["--retry-after-cap", "0.05"], key: Simulator.defaultKey, in: workspace)
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(good.stats().requests - before == rows.count, "stderr: \(resumed.stderr)")
    }

    /// Held rows a stopped `--release-held` resent and had no answer for are pending once their
    /// 500 is written: owed as pending rows, not also as kept and unanswered (the advice counted
    /// each twice: "send the 12 rows the journal still owes" where it owed 6).
    @Test func heldRowsAStoppedReleaseResentAreOwedOnceAsPending() throws {
        let workspace = Workspace()
        let good = try startSimulator()
        defer { good.stop() }
        let claimed = Pair.generate(6)
        for (rows, name) in [
            (claimed, "a.csv"), (claimed.map { Pair("other-" + $0.profileId, $0.transactionId) }, "b.csv"),
        ] {
            let run = try botsi(
                runArguments([workspace.csv(rows, name: name)], workspace, good, ["--on-conflict", "hold"]),
                key: Simulator.defaultKey, in: workspace)
            #expect(run.status == 0, "stderr: \(run.stderr)")
        }
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.internalError]
            options.latencyMilliseconds = 200
        }
        defer { failing.stop() }
        let child = try Child(
            [
                "run", "--journal", workspace.journal, "--base-url", failing.baseURL, "--release-held",
                "--concurrency", "4", "--backoff-base", "30s", "--log-format", "json",
            ], key: Simulator.defaultKey, in: workspace)
        let sent = eventually(timeout: 60) { failing.stats().pairCount >= claimed.count }
        child.send(SIGINT)
        let stopped = child.wait(timeout: 60)
        try #require(sent, "the rows never went out: \(stopped.stderr)")
        let summary = try #require(
            ModelSequence.jsonObjects(stopped.stderr).last { $0["event"] as? String == "summary" },
            "stderr: \(stopped.stderr)")
        #expect((summary["statuses"] as? [String: Int])?["pending"] == claimed.count, "summary: \(summary)")
        #expect(summary["owedUnanswered"] as? Int ?? 0 == 0, "summary: \(summary)")
        #expect(summary["kept"] as? Int ?? 0 == 0, "summary: \(summary)")
    }

    /// `--release-held` takes held rows up as a selection takes final ones: stopped by a refused
    /// key, the held rows it did not send stay held and owed to the next release, not counted as
    /// rows this run held.
    @Test func aStoppedReleaseOfHeldRowsOwesTheRestAndHeldNone() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.keys = ["key-A-accepted"]
            options.latencyMilliseconds = 20
        }
        defer { simulator.stop() }
        let claimed = Pair.generate(30)
        let second = claimed.map { Pair("other-" + $0.profileId, $0.transactionId) }
        for (rows, name) in [(claimed, "a.csv"), (second, "b.csv")] {
            let run = try botsi(
                runArguments([workspace.csv(rows, name: name)], workspace, simulator, ["--on-conflict", "hold"]),
                key: "key-A-accepted", in: workspace)
            #expect(run.status == 0, "stderr: \(run.stderr)")
        }
        #expect(JournalView.read(workspace.journal)?.pairs { $0 == "held" } == Set(second))
        let stopped = try botsi(
            runArguments([], workspace, simulator, ["--release-held", "--concurrency", "2", "--log-format", "json"]),
            key: "key-B-refused", in: workspace)
        #expect(stopped.status == 77, "stderr: \(stopped.stderr)")
        let summary = ModelSequence.jsonObjects(stopped.stderr).last { $0["event"] as? String == "summary" }
        let statuses = summary?["statuses"] as? [String: Int] ?? [:]
        #expect(statuses["held"] == nil, "counted as held by the release: \(statuses)")
        let owed = summary?["owedNotTakenUp"] as? Int ?? 0
        let sent = simulator.stats().statusCounts["401"] ?? 0
        #expect(owed + sent == second.count, "owed \(owed), sent \(sent): \(summary ?? [:])")
        // status gives the release to finish once, not again as rows still waiting for review.
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace).stdout
        #expect(status.contains("finish the selection it stopped in"), "\(status)")
        #expect(!status.contains("held      "), "\(status)")
    }

    /// A refresh of every row (`--refresh-older-than 0s`, jobs/audit.json) that a time window
    /// stops: the command its advice gives, typed again after each stop, gets through the
    /// selection: every row refreshed once, none twice (it restarted at the first row each time,
    /// and never reached the rows past one window's worth).
    @Test func theAdvisedContinuationOfAStoppedRefreshSendsEachRowOnce() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(120)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        var command = runArguments(
            [], workspace, simulator, ["--refresh-older-than", "0s", "--rate", "50", "--max-duration", "0.5s"])
        var stops = 0
        while true {
            let child = try Child(command + ["--log-format", "json"], key: Simulator.defaultKey, in: workspace)
            let finished = child.wait(timeout: 60)
            guard finished.status == 75 else {
                #expect(finished.status == 0, "stderr: \(finished.stderr)")
                break
            }
            stops += 1
            try #require(stops < 20, "the continuation never ends: \(finished.stderr)")
            let summary = ModelSequence.jsonObjects(finished.stderr).last { $0["event"] as? String == "summary" }
            let next = try #require(summary?["nextCommand"] as? String, "no advice: \(finished.stderr)")
            #expect(next.contains("--answered-before "), "\(next)")
            // As typed, with the window again: the advice leaves a run's own window out.
            let words = next.split(separator: " ").map(String.init)
            command = Array(words.dropFirst()) + ["--max-duration", "0.5s", "--timeout", "10"]
        }
        #expect(stops >= 2, "the window never stopped the refresh")
        let attempts = try #require(JournalView.read(workspace.journal)).items.values.map(\.attempts)
        #expect(
            attempts.count == rows.count && attempts.allSatisfy { $0 == 2 }, "attempts per row: \(attempts.sorted())")
    }

    /// A window-bound refresh run again as it was first typed — by cron, or by a person rerunning
    /// the job — goes on where the stopped one left off (one of them killed on the way), so each
    /// row is refreshed once; a first-day review: jobs/audit.json from the cron wrapper resent the
    /// same first rows every night and never got through its list. Once a run finishes the
    /// selection, the next one chooses every row again.
    @Test func theSameRefreshRunAgainGoesOnWhereTheStoppedOneLeftOff() throws {
        let workspace = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        let rows = Pair.generate(120)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let command = runArguments(
            [], workspace, simulator, ["--refresh-older-than", "0s", "--rate", "50", "--max-duration", "0.5s"])
        // A killed one first: it recorded nothing of what it left.
        let killed = try Child(command, key: Simulator.defaultKey, in: workspace)
        let sent = eventually(timeout: 30) { simulator.stats().requests >= rows.count + 5 }
        killed.send(SIGKILL)
        _ = killed.wait(timeout: 30)
        try #require(sent, "the killed refresh sent nothing")
        var stops = 0
        while true {
            let finished = try botsi(command, key: Simulator.defaultKey, in: workspace)
            #expect(finished.stderr.contains("went on with the selection run"), "stderr: \(finished.stderr)")
            guard finished.status == 75 else {
                #expect(finished.status == 0, "stderr: \(finished.stderr)")
                break
            }
            stops += 1
            try #require(stops < 20, "the refresh never gets through: \(finished.stderr)")
        }
        #expect(stops >= 2, "the window never stopped the refresh")
        let attempts = try #require(JournalView.read(workspace.journal)).items.values.map(\.attempts)
        #expect(
            attempts.count == rows.count && attempts.allSatisfy { $0 == 2 }, "attempts per row: \(attempts.sorted())")
        // The selection is done: the same command starts it again from the first row.
        let again = try botsi(command, key: Simulator.defaultKey, in: workspace)
        #expect(again.status == 75 && !again.stderr.contains("went on with"), "stderr: \(again.stderr)")
    }

    /// Rows waiting out a long Retry-After when a Ctrl-C stops the run were never resent: the
    /// summary counts no retry for them, and `status` (and the page, which takes its count) says
    /// the same (it counted every "retry" answer as a retry made).
    @Test func statusCountsTheRetriesTheStoppedRunMadeAsItsSummaryDoes() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { options in
            options.faultRate = 0.3
            options.faults = [.unavailable]
            options.retryAfterSeconds = 100
            options.latencyMilliseconds = 5
        }
        defer { simulator.stop() }
        let rows = Pair.generate(50)
        let child = try Child(
            [
                "run", workspace.csv(rows), "--journal", workspace.journal, "--base-url", simulator.baseURL,
                "--log-format", "json",
            ], key: Simulator.defaultKey, in: workspace)
        let sent = eventually(timeout: 60) { simulator.stats().requests >= rows.count }
        child.send(SIGINT)
        let finished = child.wait(timeout: 60)
        try #require(sent, "the rows never went out: \(finished.stderr)")
        let summary = ModelSequence.jsonObjects(finished.stderr).last { $0["event"] as? String == "summary" }
        let retries = try #require(summary?["retries"] as? Int, "no summary: \(finished.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal, "--format", "json"], key: nil, in: workspace)
        let object = try #require(ModelSequence.jsonObjects(status.stdout).first, "\(status.stdout)")
        #expect(object["retries"] as? Int == retries, "status: \(status.stdout)")
        let waiting = try #require(JournalView.read(workspace.journal)).items.values.filter { $0.code == "http_503" }
        #expect(!waiting.isEmpty, "no row was waiting to be retried")
    }

    /// README's morning check runs `status` from another directory than the run: the command it
    /// advises names the input the run left unread by the absolute path the run recorded (the
    /// relative name the run was given exited 66 from there), and it finishes the job.
    @Test func statusAdvisesAnUnreadInputByAPathThatWorksFromAnyDirectory() throws {
        let workspace = Workspace()
        let elsewhere = Workspace()
        let simulator = try startSimulator()
        defer { simulator.stop() }
        // More rows than the run reads ahead in its window: the input is left unread.
        let rows = Pair.generate(20000)
        _ = workspace.csv(rows)
        // A CA file given by a relative path, too (unused over http://, still checked and advised).
        _ = workspace.write("ca.pem", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
        let stopped = try botsi(
            [
                "run", "in.csv", "--journal", workspace.journal, "--base-url", simulator.baseURL,
                "--max-duration", "0.3s", "--cacert", "ca.pem",
            ],
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 75, "stderr: \(stopped.stderr)")
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: elsewhere)
        let next = try #require(
            status.stdout.split(separator: "\n").first { $0.hasPrefix("next") }, "no advice: \(status.stdout)")
        let command = try #require(next.range(of: "with: botsi-restore ").map { String(next[$0.upperBound...]) })
        #expect(command.contains(" \(workspace.path)/in.csv "), "\(command)")
        #expect(command.contains(" --cacert \(workspace.path)/ca.pem"), "\(command)")
        let finished = try botsi(
            command.split(separator: " ").map(String.init), key: Simulator.defaultKey, in: elsewhere)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(JournalView.read(workspace.journal)?.finalPairs == Set(rows))
    }

    /// The failure threshold stops a refresh whose every resend fails: those rows kept their
    /// earlier status, so the advice points at the page, not at a report of failed and pending
    /// rows that lists none of them, and the stop does not say the rows stay pending.
    @Test func aFailingRefreshStoppedByTheThresholdPointsWhereItsFailuresShow() throws {
        let workspace = Workspace()
        let good = try startSimulator()
        defer { good.stop() }
        let rows = Pair.generate(40)
        let first = try botsi(
            runArguments([workspace.csv(rows)], workspace, good), key: Simulator.defaultKey, in: workspace)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.internalError]
        }
        defer { failing.stop() }
        let stopped = try botsi(
            runArguments(
                [], workspace, failing,
                ["--refresh-older-than", "0s", "--max-attempts", "2", "--min-sample", "10", "--concurrency", "2"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 69, "stderr: \(stopped.stderr)")
        #expect(stopped.stderr.contains("the rows not sent are left as they were"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("look at the failures on the page"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("--status failed --status pending"), "\(stopped.stderr)")
        #expect(
            JournalView.read(workspace.journal)?.pairs { $0 == "restored" || $0 == "nothing_to_restore" } == Set(rows))
        // The next morning's status says so too, before any command that would resend into them.
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains("look at the failures that stopped run 2 on the page"), "status: \(status.stdout)")
    }

    /// A plain run stopped by the failure threshold leaves rows pending: `status` and the page say
    /// to look at the failures and fix their cause before sending them (a reviewer: they only said
    /// "send the 247 pending rows", into the same failure).
    @Test func afterTheFailureThresholdStatusSaysToFixTheCauseFirst() throws {
        let workspace = Workspace()
        let failing = try startSimulator { options in
            options.faultRate = 1
            options.faults = [.internalError]
        }
        defer { failing.stop() }
        let stopped = try botsi(
            runArguments(
                [workspace.csv(Pair.generate(200))], workspace, failing,
                ["--max-attempts", "1", "--min-sample", "10", "--concurrency", "2"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(stopped.status == 69, "stderr: \(stopped.stderr)")
        let report = "botsi-restore report --journal \(workspace.journal) --run 1 --status failed --status pending"
        let status = try botsi(["status", "--journal", workspace.journal], key: nil, in: workspace)
        #expect(
            status.stdout.contains(
                "next      look at the failures that stopped run 1 with: \(report) — and fix their cause first; then send the"
            ), "status: \(status.stdout)")
        let page = try botsi(
            ["report", "--journal", workspace.journal, "--format", "html", "--output", workspace.file("page.html")],
            key: nil, in: workspace)
        #expect(page.status == 0, "\(page.stderr)")
        #expect(workspace.text("page.html")?.contains("look at the failures that stopped run 1") == true)
    }

    /// A closed terminal or ssh session (SIGHUP) stops the run as SIGTERM does: it drains,
    /// journals and exits 129 with its summary (a reviewer: it ended like a kill -9, rows left in
    /// flight and the run recorded as killed).
    @Test func aHangUpDrainsAndJournalsLikeATerm() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 300 }
        defer { simulator.stop() }
        let child = try Child(
            runArguments([workspace.csv(Pair.generate(50))], workspace, simulator, ["--concurrency", "4"]),
            key: Simulator.defaultKey, in: workspace)
        let deadline = Date().addingTimeInterval(10)
        while simulator.stats().inFlight < 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        child.send(SIGHUP)
        let finished = child.wait(timeout: 30)
        #expect(finished.status == ExitCode.hungUp, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains("stopped: hung up (SIGHUP"), "stderr: \(finished.stderr)")
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.pairs { $0 == "in_flight" }.isEmpty, "rows left in flight")
        let runs = try JournalTables.rows(workspace.journal, "SELECT state, exit_code FROM runs")
        #expect(runs == [["stopped", "129"]], "\(runs)")
    }

    /// With nothing pacing the sends the client holds a few requests queued behind its busy
    /// connections (a sixteenth of the concurrency, at least one); a stop takes them back unsent, so
    /// a run stopped before any reply has sent no more than its concurrency, and the rows it queued
    /// go back to pending as they were.
    @Test func aStopTakesBackWhatTheClientQueuedUnsent() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.latencyMilliseconds = 1500 }
        defer { simulator.stop() }
        let rows = Pair.generate(50)
        let child = try Child(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4", "--no-adaptive"]),
            key: Simulator.defaultKey, in: workspace)
        let deadline = Date().addingTimeInterval(10)
        while simulator.stats().inFlight < 4 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(simulator.stats().inFlight == 4, "the run never had 4 requests at the server")
        child.send(SIGTERM)
        let finished = child.wait(timeout: 30)
        #expect(finished.status == ExitCode.terminated, "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests == 4, "a request went out after the stop")
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.pairs { $0 == "in_flight" }.isEmpty, "rows left in flight")
        #expect(journal.pairs { $0 == "pending" }.count == 46)
    }

    @Test func anAppWithoutIOSSettingsStopsTheRunWith78() throws {
        let workspace = Workspace()
        let simulator = try startSimulator { $0.mode = .noIOSSettings }
        defer { simulator.stop() }
        let rows = Pair.generate(40)
        let finished = try botsi(
            runArguments([workspace.csv(rows)], workspace, simulator, ["--concurrency", "4"]),
            key: Simulator.defaultKey, in: workspace)
        #expect(finished.status == 78, "stderr: \(finished.stderr)")
        #expect(finished.stderr.localizedCaseInsensitiveContains("App Store"), "stderr: \(finished.stderr)")
        #expect(simulator.stats().requests <= 4)
        let journal = try #require(JournalView.read(workspace.journal))
        #expect(journal.pairs { $0 == "pending" } == Set(rows), "rows not pending after No ios settings found")
    }
}
