import BotsiBasics
import Foundation
import Testing

@testable import BotsiCLI

/// How argv is read against a table: forms of options, help anywhere, and the messages for
/// what does not parse.
@Suite struct ParsingTests {
    func usageError(_ arguments: [String]) -> String {
        do {
            _ = try RunCommand.settings(from: arguments)
            return ""
        } catch {
            return error.message
        }
    }

    /// A first-day review: `report --since 2026-12-01` was refused; a date is its start in UTC.
    @Test func reportSinceTakesADate() throws {
        let date = try ReportCommand.settings(from: ["--since", "2026-12-01"]).settings.since
        #expect(date == Date(timeIntervalSince1970: 1_796_083_200), "\(String(describing: date))")
        let time = try ReportCommand.settings(from: ["--since", "2026-12-01T06:30:00Z"]).settings.since
        #expect(time == Date(timeIntervalSince1970: 1_796_083_200 + 6.5 * 3600))
        for impossible in ["2026-02-30", "2026-02-30T00:00:00Z", "2025-02-29T12:00:00.000Z"] {
            #expect(throws: UsageError.self, "rolled into March: \(impossible)") {
                _ = try ReportCommand.settings(from: ["--since", impossible])
            }
        }
        #expect {
            _ = try ReportCommand.settings(from: ["--since", "2026-13-01"])
        } throws: { error in
            (error as? UsageError)?.message.contains("a date such as 2026-12-01") == true
        }
    }

    /// `--since 24h` is a day back from now, not ahead of it.
    @Test func reportSinceTakesADurationBackFromNow() throws {
        let since = try #require(try ReportCommand.settings(from: ["--since", "24h"]).settings.since)
        #expect(abs(since.timeIntervalSinceNow + 86_400) < 60, "\(since)")
    }

    @Test func reportFormatAndColumnsAreReadAsTyped() throws {
        #expect(try ReportCommand.settings(from: ["--format", "csv"]).settings.format == .csv)
        #expect(try ReportCommand.settings(from: ["--format", "table"]).settings.format == .table)
        let columns = try ReportCommand.settings(from: ["--columns", " profileId , status"]).settings.columns
        #expect(columns == ["profileId", "status"])
        // An empty name is kept, so that `--columns` refuses it by name rather than dropping it.
        #expect(
            try ReportCommand.settings(from: ["--columns", "profileId,,status"]).settings.columns
                == ["profileId", "", "status"])
    }

    @Test func helpAnywhereBeforeDoubleDashWinsOverEverythingElse() throws {
        #expect(try RunCommand.settings(from: ["in.csv", "--concurency", "x", "--help"]).wantsHelp)
        #expect(try RunCommand.settings(from: ["-j", "0", "-h"]).wantsHelp)
        #expect(try StatusCommand.settings(from: ["extra", "--help"]).wantsHelp)
        #expect(try !RunCommand.settings(from: ["--", "--help"]).wantsHelp)
    }

    @Test func shortFormsBundleAndTakeAttachedValues() throws {
        let long = try runSettings(["in.csv", "--dry-run", "--quiet", "--concurrency", "16"])
        #expect(try runSettings(["in.csv", "-nq", "-j16"]) == long)
        #expect(try runSettings(["in.csv", "-qnj", "16"]) == long)
        #expect(long.options.dryRun && long.quiet && long.options.concurrency == 16)
        #expect(try ReportCommand.settings(from: ["-o", "out.csv"]).settings.output == "out.csv")
    }

    @Test func doubleDashEndsTheOptions() throws {
        let settings = try runSettings(["--journal", "j.sqlite", "--", "--odd-name.csv", "-"])
        #expect(settings.options.inputs == ["--odd-name.csv", "-"])
        #expect(settings.options.journalPath == "j.sqlite")
    }

    /// A lone dash is stdin, as a positional; a value attached by `=` may be empty, and is then
    /// checked as the empty text it is rather than taking the next word.
    @Test func aLoneDashIsAnInputAndAnAttachedEmptyValueIsChecked() throws {
        #expect(try runSettings(["-", "--quiet"]).options.inputs == ["-"])
        #expect(usageError(["--format=", "csv"]) == "option '--format' needs one of csv, tsv, jsonl, json, not ''")
        #expect(try runSettings(["--journal=j=1.sqlite"]).options.journalPath == "j=1.sqlite")
    }

    @Test func repeatableOptionsCollectAndOthersRefuseASecondValue() throws {
        let report = try ReportCommand.settings(from: ["--status", "failed", "--status", "pending", "--code", "x"])
        #expect(report.settings.statuses == ["failed", "pending"] && report.settings.codes == ["x"])
        #expect(usageError(["--journal", "a", "--journal", "b"]) == "option '--journal' was given more than once")
        // A flag said twice means what it says once (a wrapper adds `-q` to a line that has it).
        #expect(try runSettings(["-q", "--quiet", "-n", "--dry-run"]) == runSettings(["--quiet", "--dry-run"]))
    }

    @Test func malformedOptionsAreNamed() throws {
        #expect(usageError(["--journal"]) == "option '--journal' needs a value")
        #expect(usageError(["-j"]) == "option '-j' needs a value")
        #expect(usageError(["--dry-run=yes"]) == "option '--dry-run' takes no value")
        #expect(usageError(["-j", "lots"]) == "option '--concurrency' needs a whole number from 1 to 4096, not 'lots'")
        #expect(usageError(["--timeout", "1e3"]).hasPrefix("option '--timeout' needs a duration"))
        #expect(usageError(["--stop-at", "6:3"]).hasPrefix("option '--stop-at' needs a local time HH:MM"))
        for time in ["24:00", "006:30", "6:60", "-1:30"] {
            #expect(
                usageError(["--stop-at", time]).hasPrefix("option '--stop-at' needs a local time HH:MM"), "\(time)")
        }
        #expect(try runSettings(["--stop-at", "23:59"]).stopAt == ClockTime(hour: 23, minute: 59))
        // A whole-seconds option takes a duration, but not a fraction of a second.
        #expect(throws: UsageError.self) { try SimulateCommand.settings(from: ["--limit-window", "1.5s"]) }
        #expect(throws: UsageError.self) { try SimulateCommand.settings(from: ["--limit-window", "500ms"]) }
        #expect(try SimulateCommand.settings(from: ["--limit-window", "1m"]).settings.options.limitWindowSeconds == 60)
        #expect(throws: UsageError.self) { try StatusCommand.settings(from: ["extra"]) }
    }

    @Test func aMistypedOptionSuggestsOnlyACloseName() {
        #expect(usageError(["--concurency", "4"]).hasSuffix("did you mean '--concurrency'?"))
        #expect(usageError(["--jbo", "f.json"]).hasSuffix("did you mean '--job'?"))
        #expect(usageError(["-concurrency", "4"]).hasSuffix("did you mean '--concurrency'?"))
        #expect(usageError(["--Quiet"]).hasSuffix("did you mean '--quiet'?"))
        let far = usageError(["--verbose"])
        #expect(far == "unknown option '--verbose' for 'run'; see 'botsi-restore run --help'")
        #expect(usageError(["-x"]) == "unknown option '-x' for 'run'; see 'botsi-restore run --help'")
        // In a bundle of known flags, the letter that is not one is named, not the bundle.
        #expect(usageError(["-qx"]) == "unknown option '-x' for 'run'; see 'botsi-restore run --help'")
        // One dash before a long name: the name is read whole, however short.
        #expect(usageError(["-rat", "5"]).hasSuffix("did you mean '--rate'?"))
        #expect(usageError(["--hepl"]) == "unknown option '--hepl' for 'run'; did you mean '--help'?")
    }

    /// A value that is a slip of one of an option's few words names the word meant; a value far from
    /// all of them, and a value of another kind, name none.
    @Test func aMistypedChoiceSuggestsTheWordMeant() {
        #expect(
            usageError(["--format", "csvv"])
                == "option '--format' needs one of csv, tsv, jsonl, json, not 'csvv' (did you mean 'csv'?)")
        #expect(usageError(["--format", "xml"]) == "option '--format' needs one of csv, tsv, jsonl, json, not 'xml'")
        #expect(!usageError(["-j", "lots"]).contains("did you mean"))
        #expect {
            _ = try ReportCommand.settings(from: ["--format", "json"])
        } throws: { error in
            (error as? UsageError)?.message.hasSuffix("not 'json' (did you mean 'jsonl'?)") == true
        }
    }

    @Test func valuesAreCheckedByTheirKind() throws {
        #expect(try runSettings(["--stop-at", "6:30"]).stopAt == ClockTime(hour: 6, minute: 30))
        #expect(try runSettings(["--max-failure-rate", "12.5%"]).options.maxFailureRate == 12.5)
        #expect(try runSettings(["--shard", "3/4"]).options.shardIndex == 3)
        #expect(usageError(["--shard", "4/4"]).hasPrefix("option '--shard' needs I/N"))
        #expect(try runSettings(["--backoff-base", "250ms"]).options.backoffBase == 0.25)
        #expect(try runSettings(["--max-duration", "1.5h"]).maxDuration == 5400)
        let faults = try SimulateCommand.settings(from: ["--faults", "429, reset"]).settings.options.faults
        #expect(faults.map(\.rawValue) == ["429", "reset"])
        #expect(throws: UsageError.self) { try SimulateCommand.settings(from: ["--faults", "429,teapot"]) }
    }

    @Test func theRunDeadlineIsTheEarlierOfDurationAndClock() throws {
        let now = Date(timeIntervalSince1970: 1_772_366_400)
        let inAnHour = RunCommand.deadline(maxDuration: 3600, stopAt: nil, now: now)
        #expect(inAnHour == now.addingTimeInterval(3600))
        #expect(RunCommand.deadline(maxDuration: nil, stopAt: nil, now: now) == nil)
        let clock = try #require(RunCommand.deadline(maxDuration: nil, stopAt: ClockTime(hour: 0, minute: 0), now: now))
        #expect(clock > now && clock <= now.addingTimeInterval(86400))
        #expect(RunCommand.deadline(maxDuration: 60, stopAt: ClockTime(hour: 0, minute: 0), now: now) == now + 60)
    }

    /// No input is allowed (the run sends what the journal owes); stdin twice is not.
    @Test func runRefusesStdinTwice() throws {
        #expect(try RunCommand.runOptions(RunSettings(), now: .now).inputs.isEmpty)
        var twice = RunSettings()
        twice.options.inputs = ["-", "-"]
        #expect(throws: UsageError.self) { try RunCommand.runOptions(twice, now: .now) }
    }

    /// `--answered-before` narrows a selection: alone it would choose nothing it could narrow.
    @Test func answeredBeforeNeedsASelectionToNarrow() throws {
        var alone = RunSettings()
        alone.options.answeredBefore = "2026-12-06T04:58:33.375Z"
        #expect(throws: UsageError.self) { try RunCommand.runOptions(alone, now: .now) }
        var retry = alone
        retry.options.retryFailed = true
        #expect(try RunCommand.runOptions(retry, now: .now).answeredBefore == alone.options.answeredBefore)
        var refresh = alone
        refresh.options.refreshOlderThan = 0
        #expect(try RunCommand.runOptions(refresh, now: .now).answeredBefore == alone.options.answeredBefore)
    }
}
