import BotsiBasics
import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiRestore

/// The pieces of advice a run, `status` and the page print, each from hand-made options: the
/// end-to-end tests see a few of them in whole runs; here every branch says what it must.
@Suite struct RunAdviceWordsTests {
    private func options(_ edit: (inout RunOptions) -> Void) -> RunOptions {
        var options = RunOptions()
        options.journalPath = "j.sqlite"
        edit(&options)
        return options
    }

    /// A continued selection leaves out the final rows answered since the stopped run started,
    /// or since an earlier cutoff that run itself went on from: whichever is earlier.
    @Test func aContinuedSelectionsCutoffIsTheEarlierOfTheRunsStartAndItsOwnCutoff() throws {
        let start = try #require(Timestamp.date("2026-12-07T10:00:00.000Z"))
        let retrying = options { $0.retryFailed = true }
        #expect(RunAdvice.continuingSelection(retrying, startedAt: start).answeredBefore == "2026-12-07T10:00:00.000Z")
        var earlier = retrying
        earlier.answeredBefore = "2026-12-06T08:00:00.000Z"
        #expect(RunAdvice.continuingSelection(earlier, startedAt: start).answeredBefore == "2026-12-06T08:00:00.000Z")
        var later = retrying
        later.answeredBefore = "2026-12-08T08:00:00.000Z"
        #expect(RunAdvice.continuingSelection(later, startedAt: start).answeredBefore == "2026-12-07T10:00:00.000Z")
        let refreshing = options { $0.refreshOlderThan = 86_400 }
        #expect(
            RunAdvice.continuingSelection(refreshing, startedAt: start).answeredBefore == "2026-12-07T10:00:00.000Z")
    }

    /// systemd hands a unit its credentials in `/run/credentials/UNIT/`, a user's unit in
    /// `/run/user/UID/credentials/UNIT/`; nothing else names a unit.
    @Test(
        arguments: [
            ("/run/credentials/botsi-restore.service/key", "botsi-restore.service", false),
            ("/run/user/1000/credentials/nightly.service/key", "nightly.service", true),
            ("/run/user/ops/credentials/nightly.service/key", nil, false),
            ("/run/user//credentials/nightly.service/key", nil, false),
            ("/run/credentials/@system/key", nil, false),
            ("/run/credentials/nightly.service/sub/key", nil, false),
            ("/run/credentials/nightly.service/", nil, false),
            ("/run/credentials//key", nil, false),
            ("/run/secrets/nightly.service/key", nil, false),
            ("/etc/botsi/key", nil, false),
        ] as [(String, String?, Bool)])
    func aKeyFileNamesItsUnitOnlyWhereSystemdPutsCredentials(path: String, unit: String?, user: Bool) {
        let found = RunAdvice.credentialUnit(ofKeyFile: path)
        #expect(found?.name == unit)
        #expect(found.map(\.user) ?? false == user)
        let continuing = RunAdvice.continuing("botsi-restore run --journal j.sqlite", keyFile: path)
        let expected =
            unit.map { "systemctl \(user ? "--user " : "")start \($0)" } ?? "botsi-restore run --journal j.sqlite"
        #expect(continuing == expected)
    }

    /// Held rows are sent after review by a person: a unit's key file is gone by then, so the
    /// command names the key's file for them to fill in; the run's own selection does not go on.
    @Test func theReleaseCommandReleasesHeldRowsAndNamesAUnitsKeyForThePerson() {
        let unit = options {
            $0.retryFailed = true
            $0.refreshOlderThan = 3600
            $0.keyFile = "/run/credentials/nightly.service/key"
        }
        #expect(
            RunAdvice.releaseCommand(unit) == "botsi-restore run --journal j.sqlite --release-held --key-file KEY_FILE")
        let file = options { $0.keyFile = "/etc/botsi/key" }
        #expect(
            RunAdvice.releaseCommand(file)
                == "botsi-restore run --journal j.sqlite --release-held --key-file /etc/botsi/key")
    }

    /// The selection a stopped run chose goes on only when asked; its cutoff only with a selection
    /// by status or age (`--release-held` takes every held row).
    @Test func theSelectionWordsAreThoseOfTheRunsOwnSelection() {
        let refresh = options {
            $0.refreshOlderThan = 7 * 86_400
            $0.answeredBefore = "2026-12-07T10:00:00.000Z"
        }
        #expect(
            RunAdvice.runCommand(refresh, selection: true)
                == "botsi-restore run --journal j.sqlite --refresh-older-than 7d --answered-before 2026-12-07T10:00:00.000Z"
        )
        #expect(RunAdvice.runCommand(refresh) == "botsi-restore run --journal j.sqlite")
        let release = options {
            $0.releaseHeld = true
            $0.answeredBefore = "2026-12-07T10:00:00.000Z"
        }
        #expect(RunAdvice.runCommand(release, selection: true) == "botsi-restore run --journal j.sqlite --release-held")
    }

    /// An input read again is read as the run read it: every reading option goes with it, and
    /// stdin stays `-` (an option-like name gets `./`, but `-` is not a file).
    @Test func readingAnInputAgainCarriesEveryReadingOption() {
        let reading = options {
            $0.format = "csv"
            $0.delimiter = ";"
            $0.encoding = "latin1"
            $0.noHeader = true
            $0.profileColumn = "user"
            $0.transactionColumn = "otid"
            $0.insecureSkipTLSVerify = true
        }
        #expect(
            RunAdvice.runCommand(reading, inputs: ["-"])
                == "botsi-restore run - --journal j.sqlite --format csv --delimiter ';' --encoding latin1 --no-header "
                + "--profile-column user --transaction-column otid --insecure-skip-tls-verify")
    }

    /// A job's advice names its files from `/`: the command may be typed in another directory.
    @Test func aJobsCommandNamesItsFilesFromTheRoot() {
        let workspace = Workspace()
        let directory = URL(fileURLWithPath: workspace.path).resolvingSymlinksInPath().path
        let job = options {
            $0.journalPath = workspace.path + "/j.sqlite"
            $0.keyFile = workspace.path + "/sub/../key"
            $0.caCertificatePath = workspace.path + "/./ca.pem"
            $0.advisesAbsolutePaths = true
        }
        #expect(
            RunAdvice.runCommand(job)
                == "botsi-restore run --journal \(directory)/j.sqlite --key-file \(directory)/key "
                + "--cacert \(directory)/ca.pem")
    }

    /// An input an earlier run left unread is read again as that run read it, shard included.
    @Test func anUnreadInputIsReadAgainWithTheOptionsOfTheRunThatNamedIt() {
        let latest = options {
            $0.format = "jsonl"
            $0.noHeader = true
            $0.shardIndex = 3
            $0.shardCount = 4
        }
        let recorded =
            #"{"format":"csv","delimiter":";","encoding":"latin1","noHeader":true,"profileColumn":"user","#
            + #""transactionColumn":"otid","bundleId":"com.example.app","environment":"Sandbox","#
            + #""shardIndex":1,"shardCount":2}"#
        let unread = UnreadInput(path: "a.csv", run: 3, options: recorded)
        let reading = RunAdvice.readingAs(unread, latest)
        #expect(reading.format == "csv")
        #expect(reading.delimiter == ";")
        #expect(reading.encoding == "latin1")
        #expect(reading.noHeader)
        #expect(reading.profileColumn == "user")
        #expect(reading.transactionColumn == "otid")
        #expect(reading.bundleId == "com.example.app")
        #expect(reading.environment == "Sandbox")
        #expect(reading.shardIndex == 1 && reading.shardCount == 2)
        // A run that recorded none of them read with the defaults, not with the latest run's.
        let plain = RunAdvice.readingAs(UnreadInput(path: "a.csv", run: 3, options: "{}"), latest)
        #expect(plain.format == nil && !plain.noHeader && plain.shardIndex == 0 && plain.shardCount == 1)
        #expect(RunAdvice.readingAs(nil, latest).format == "jsonl")
    }

    /// The rows of other shards are sent by one run of the whole journal, at this shard's pace,
    /// with a key a person names when the shard's came from its unit.
    @Test func theOtherShardsCommandIsOneRunOfTheJournalAtThisShardsCap() {
        let shard = options {
            $0.inputs = ["in.csv"]
            $0.shardIndex = 2
            $0.shardCount = 4
            $0.jobRate = 40
            $0.keyFile = "/run/credentials/nightly.service/key"
        }
        #expect(
            RunAdvice.otherShardsCommand(shard) == "botsi-restore run --journal j.sqlite --key-file KEY_FILE --rate 10")
        #expect(RunAdvice.otherShardsOwed(1).hasPrefix("the journal owes 1 row of other shards than this run's"))
        #expect(RunAdvice.otherShardsOwed(1).hasSuffix("send it with"))
        #expect(RunAdvice.otherShardsOwed(2).hasPrefix("the journal owes 2 rows of other shards"))
        #expect(RunAdvice.otherShardsOwed(2).hasSuffix("send them with"))
    }

    @Test func theSentencesAboutInputsCountWhatTheyName() {
        #expect(RunAdvice.readAgain(["a.csv"], by: "run 3") == "read the input run 3 did not finish (a.csv)")
        #expect(
            RunAdvice.readAgain(["a.csv", "b.csv"], by: "run 3")
                == "read the inputs run 3 did not finish (a.csv, b.csv)")
        // --forget-input names the path the run recorded, which means the same file from anywhere.
        let gone = RunAdvice.goneInputs(["a.csv"], paths: ["/srv/job/a.csv"])
        #expect(gone.hasPrefix("a.csv, which a run did not read to its end, no longer exists:"))
        #expect(gone.contains("run again with --forget-input /srv/job/a.csv to stop"))
        let both = RunAdvice.goneInputs(["a.csv", "b.csv"])
        #expect(both.contains("no longer exist:") && both.contains("--forget-input a.csv --forget-input b.csv"))
        #expect(
            RunAdvice.shorterInput("a.csv", bytes: 10, earlierBytes: 20).contains("it was replaced by a shorter file"))
        let stream = RunAdvice.shorterInput("-", bytes: 10, earlierBytes: 20, isStream: true)
        #expect(stream.contains("another, shorter export was piped in") && stream.contains("read the new stream"))
        #expect(stream.hasSuffix("If the earlier export is kept somewhere, pipe it into a run to send the rest"))
        #expect(
            RunAdvice.replacedInput("a.csv", newRows: 1, earlierBytes: 20).contains("1 row within the first 20 bytes"))
        #expect(RunAdvice.replacedInput("a.csv", newRows: 1, earlierBytes: 20).contains("had read, was new"))
        #expect(RunAdvice.replacedInput("a.csv", newRows: 2, earlierBytes: 20).contains("had read, were new"))
        #expect(
            RunAdvice.replacedInput("-", newRows: 2, earlierBytes: 20, isStream: true).contains(
                "Another export was piped in"))
    }

    /// A dry run records nothing: it says what a run would forget, and forgets nothing.
    @Test func aDryRunSaysWhatARunWouldForget() {
        #expect(
            RunAdvice.forgotten(["a.csv"])
                == "forgot a.csv: no longer named as unfinished; the rows read from it stay in the journal")
        #expect(
            RunAdvice.forgotten(["a.csv", "b.csv"], dryRun: true).hasPrefix("would forget a.csv, b.csv: a run would"))
        #expect(RunAdvice.forgotten(["a.csv", "b.csv"], dryRun: true).contains("(this dry run forgot nothing)"))
        #expect(RunAdvice.forgetMatchingNothing(["x.csv"]).contains(": nothing forgotten (botsi-restore status"))
        #expect(RunAdvice.forgetMatchingNothing(["x.csv"], dryRun: true).contains(": a run would forget nothing ("))
    }

    /// What bash, zsh and ksh read back as the same word.
    @Test(arguments: [
        ("plain-name_1.csv", "plain-name_1.csv"),
        ("", "''"),
        ("it's here", #"'it'\''s here'"#),
        ("a\nb", #"$'a\nb'"#),
        ("a\tb\rc", #"$'a\tb\rc'"#),
        ("it's\n", #"$'it\'s\n'"#),
        ("back\\slash\n", #"$'back\\slash\n'"#),
        ("evil\u{202E}txt.csv", #"$'evil\xE2\x80\xAEtxt.csv'"#),
    ])
    func aWordIsQuotedSoTheShellReadsItBack(word: String, quoted: String) {
        #expect(RunAdvice.shellQuoted(word) == quoted)
    }

    /// The causes that need a fix before another run can get anywhere say which; the others none.
    @Test func everyStopCauseThatNeedsAFixFirstSaysWhich() {
        for cause in StopCause.allCases {
            let fix = RunAdvice.fixFirst(cause)
            switch cause {
            case .unauthorized, .forbidden: #expect(fix?.hasPrefix("fix the key first") == true)
            case .iosSettingsMissing: #expect(fix?.contains("App Store connection (iOS settings)") == true)
            case .tlsFailure: #expect(fix?.hasPrefix("fix the TLS problem first") == true)
            case .journalFailure: #expect(fix?.hasPrefix("make the journal usable first") == true)
            case .inputDamaged: #expect(fix?.hasPrefix("replace the damaged input") == true)
            case .failureThreshold, .windowEnd, .signal: #expect(fix == nil, "\(cause)")
            }
        }
    }

    /// An input is one input however it is named: through a link, by `..`, or after its file is
    /// gone (its directory's real path and its name); stdin is `-` whatever the directory holds.
    @Test func anInputIsNamedByItsRealPathEvenOnceItsFileIsGone() throws {
        let workspace = Workspace()
        let real = URL(fileURLWithPath: workspace.path).resolvingSymlinksInPath().path
        try FileManager.default.createDirectory(atPath: real + "/data", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: real + "/link", withDestinationPath: real + "/data")
        _ = workspace.write("data/a.csv", "profileId,originalTransactionId\n")
        try FileManager.default.createSymbolicLink(atPath: real + "/alias.csv", withDestinationPath: "data/a.csv")
        #expect(RunAdvice.inputIdentity(real + "/link/a.csv") == real + "/data/a.csv")
        #expect(RunAdvice.inputIdentity(real + "/alias.csv") == real + "/data/a.csv")
        #expect(RunAdvice.inputIdentity(real + "/link/../data/./a.csv") == real + "/data/a.csv")
        #expect(RunAdvice.inputIdentity(real + "/link/gone.csv") == real + "/data/gone.csv")
        #expect(RunAdvice.inputIdentity(real + "/nowhere/../nowhere/gone.csv") == real + "/nowhere/gone.csv")
        #expect(RunAdvice.inputIdentity("-") == "-")
    }
}
