import BotsiBasics
import Foundation
import Testing

@testable import BotsiCLI

/// A job file's keys applied to `run`'s settings, as `run --job` does before the command line.
func runSettings(job json: String) throws(UsageError) -> RunSettings {
    var settings = RunCommand.initialSettings()
    try JobFile.parse(Data(json.utf8), path: "test.json").apply(
        to: &settings, options: RunCommand.options, positionals: RunCommand.positionals)
    return settings
}

/// `run ARGUMENTS` as the command line alone sets it.
func runSettings(_ arguments: [String]) throws(UsageError) -> RunSettings {
    try RunCommand.settings(from: arguments).settings
}

@Suite struct JobFileTests {
    static let jobs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("jobs").path

    @Test(arguments: ["nightly-reconcile.json", "bulk-migration.json", "audit.json"])
    func theShippedJobFilesAreValidAndDescribed(name: String) throws {
        let job = try JobFile.load(path: Self.jobs + "/" + name)
        #expect((job.values["description"]?.string ?? "").count > 40)
        #expect(job.values["journal"] != nil && job.values["keyEnv"] != nil)
        var settings = RunCommand.initialSettings()
        try job.apply(
            to: &settings, options: RunCommand.options, positionals: RunCommand.positionals)
        #expect(!settings.options.inputs.isEmpty)
        #expect(settings.options.journalPath.hasPrefix("journals/"))
    }

    @Test func keysMeanWhatTheirOptionsMean() throws {
        let job = try runSettings(
            job: """
                {"description": "d", "inputs": "in.csv", "concurrency": 16, "rate": 40.5, "timeout": "30s",
                 "connectTimeout": 2, "stopAt": "06:30", "maxFailureRate": "20%", "retryFailed": true,
                 "adaptive": false, "refreshOlderThan": "7d", "journal": "j.sqlite", "minSample": 100}
                """)
        let commandLine = try runSettings([
            "in.csv", "--concurrency", "16", "--rate", "40.5", "--timeout", "30s", "--connect-timeout", "2",
            "--stop-at", "06:30", "--max-failure-rate", "20", "--retry-failed", "--no-adaptive",
            "--refresh-older-than", "7d", "--journal", "j.sqlite", "--min-sample", "100",
        ])
        #expect(job == commandLine)
        #expect(job.options.inputs == ["in.csv"])
        #expect(job.options.concurrency == 16 && job.options.rate == 40.5 && job.options.connectTimeout == 2)
        #expect(job.options.refreshOlderThan == 7 * 86400 && job.options.maxFailureRate == 20)
        #expect(job.options.retryFailed && !job.options.adaptive)
        #expect(job.stopAt == ClockTime(hour: 6, minute: 30))
    }

    @Test func inputKeysMeanTheInputOptions() throws {
        let fromJob = try runSettings(
            job: """
                {"inputs": "dump.csv", "noHeader": true, "profileColumn": 2, "transactionColumn": "1",
                 "delimiter": ";", "encoding": "cp1252", "bundleId": "com.example.app", "environment": "sandbox"}
                """)
        let fromFlags = try runSettings([
            "dump.csv", "--no-header", "--profile-column", "2", "--transaction-column", "1", "--delimiter", ";",
            "--encoding", "cp1252", "--bundle-id", "com.example.app", "--environment", "sandbox",
        ])
        #expect(fromJob.options == fromFlags.options)
        #expect(fromJob.options.encoding == "windows-1252", "an encoding is kept under its canonical name")
        #expect(throws: UsageError.self) { try runSettings(job: #"{"profileColumn": 0}"#) }
        #expect(throws: UsageError.self) { try runSettings(job: #"{"profileColumn": true}"#) }
        #expect(throws: UsageError.self) { try runSettings(["--delimiter", "a"]) }
        #expect(throws: UsageError.self) { try runSettings(["--encoding", "ebcdic"]) }
    }

    @Test func withoutAHeaderColumnsArePositions() throws {
        var settings = RunSettings()
        settings.options.noHeader = true
        settings.options.profileColumn = "name"
        #expect(throws: UsageError.self) { try RunCommand.runOptions(settings, now: .now) }
        settings.options.profileColumn = "2"
        #expect(throws: UsageError.self) { try RunCommand.runOptions(settings, now: .now) }
        settings.options.profileColumn = "3"
        #expect(try RunCommand.runOptions(settings, now: .now).profileColumn == "3")
    }

    @Test func flagsThatAreOffChangeNothing() throws {
        #expect(try runSettings(job: #"{"retryFailed": false, "adaptive": true}"#) == RunSettings())
        #expect(try runSettings(job: #"{"adaptive": null, "quiet": false}"#) == RunSettings())
    }

    @Test func aSingleUnknownKeyIsRefused() {
        #expect {
            _ = try runSettings(job: #"{"rate": 5, "ratee": 6}"#)
        } throws: { error in
            (error as? UsageError)?.message.hasPrefix("job file test.json: unknown key 'ratee' (did you mean 'rate'?);")
                == true
        }
    }

    /// `null` is a key left unset, for the description and the inputs as for every option.
    @Test func nullLeavesAKeyUnset() throws {
        #expect(try runSettings(job: #"{"description": null, "inputs": null}"#) == RunSettings())
    }

    @Test func unknownKeysAreNamedWithASuggestion() {
        #expect {
            _ = try runSettings(job: #"{"concurency": 8, "maxAttemps": 3, "max_failure_rate": 5, "zzzzzzzzzz": 1}"#)
        } throws: { error in
            let message = (error as? UsageError)?.message ?? ""
            return message.contains("'concurency' (did you mean 'concurrency'?)")
                && message.contains("'maxAttemps' (did you mean 'maxAttempts'?)")
                && message.contains("'max_failure_rate' (did you mean 'maxFailureRate'?)")
                && message.contains("'zzzzzzzzzz';") && message.contains("test.json")
        }
    }

    @Test func aMistypedChoiceInAJobFileSuggestsTheWordMeant() {
        #expect {
            _ = try runSettings(job: #"{"format": "jsonl "}"#)
        } throws: { error in
            let message = (error as? UsageError)?.message ?? ""
            return message.contains(#""format" must be one of csv, tsv, jsonl, json (did you mean 'jsonl'?)"#)
        }
    }

    /// A missing job file is a missing input (66), not a bad command line (64): a first-day review.
    @Test func aMissingJobFileIsNoInput() {
        #expect {
            _ = try RunCommand.settings(from: ["--job", "/nonexistent/botsi-job.json"])
        } throws: { error in
            let usage = error as? UsageError
            return usage?.exitCode == ExitCode.noInput && usage?.message.contains("/nonexistent/botsi-job.json") == true
        }
        #expect {
            _ = try runSettings(job: "{")
        } throws: { error in
            (error as? UsageError)?.exitCode == ExitCode.usage
        }
    }

    /// A first-day review: `{"rate": 100, "rate": 5}` ran at 100 while the file read 5 last.
    @Test func aKeyGivenTwiceIsRefused() throws {
        for json in [
            #"{"rate": 100, "concurrency": 2, "rate": 5}"#, #"{"rate": 1, "r\u0061te": 2}"#,
            "{\n  \"quiet\" : true,\n  \"quiet\"\t:false}",
        ] {
            #expect {
                _ = try runSettings(job: json)
            } throws: { error in
                (error as? UsageError)?.message.contains("is given twice") == true
            }
        }
        // Latin-1 is named as such, not as broken JSON.
        #expect {
            _ = try JobFile.parse(Data(#"{"description": "caf"#.utf8) + [0xE9] + Data(#""}"#.utf8), path: "l1.json")
        } throws: { error in
            (error as? UsageError)?.message == "job file l1.json: is not UTF-8 text; save it as UTF-8"
        }
        // UTF-16 (which JSONDecoder reads, and the check above would not see into) is refused.
        let utf16 = Data(
            #"{"concurrency": 4, "concurrency": 500}"#.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        #expect {
            _ = try JobFile.parse(utf16, path: "wide.json")
        } throws: { error in
            (error as? UsageError)?.message.contains("is not UTF-8 text") == true
        }
        // The same name deeper down, or as a value, is not a second key.
        #expect(JobFile.repeatedTopLevelKey(Data(#"{"inputs": ["rate", "rate"], "rate": 3}"#.utf8)) == nil)
        // After an array, after a key with an escaped quote, and before a colon on the next line (CR LF).
        #expect(JobFile.repeatedTopLevelKey(Data(#"{"inputs": ["a"], "rate": 3, "rate": 4}"#.utf8)) == "rate")
        #expect(JobFile.repeatedTopLevelKey(Data(#"{"a\"b": 1, "rate": 3, "rate": 4}"#.utf8)) == "rate")
        #expect(JobFile.repeatedTopLevelKey(Data("{\"rate\": 3, \"rate\"\r\n: 4}".utf8)) == "rate")
        #expect(JobFile.repeatedTopLevelKey(Data(#"{"a": {"b": 1}, "c": {"b": 2}, "d": "\"b\""}"#.utf8)) == nil)
        #expect(try runSettings(job: #"{"rate": 5, "description": "rate: 5, \"rate\": 6"}"#).options.rate == 5)
    }

    @Test func theKeyItselfIsRefusedWithAPointerToKeyEnv() {
        #expect {
            _ = try runSettings(job: #"{"apiKey": "sk_live_not_a_real_key"}"#)
        } throws: { error in
            let message = (error as? UsageError)?.message ?? ""
            return message.contains("never holds the API key; put the key in an environment variable")
                && !message.contains("sk_live_not_a_real_key")
        }
    }

    struct BadValue: Sendable, CustomTestStringConvertible {
        let json: String
        let mentions: String
        var testDescription: String { json }
    }

    @Test(arguments: [
        BadValue(json: #"{"timeout": "soon"}"#, mentions: "\"timeout\" must be a duration"),
        BadValue(json: #"{"timeout": "1e3"}"#, mentions: "\"timeout\" must be a duration"),
        BadValue(json: #"{"timeout": 0}"#, mentions: "\"timeout\" must be a duration of at least 1ms"),
        BadValue(json: #"{"stopAt": "25:00"}"#, mentions: "\"stopAt\" must be a local time"),
        BadValue(json: #"{"concurrency": 2.5}"#, mentions: "\"concurrency\" must be a whole number"),
        BadValue(json: #"{"concurrency": true}"#, mentions: "\"concurrency\" must be a whole number"),
        BadValue(json: #"{"concurrency": 0}"#, mentions: "\"concurrency\" must be a whole number from 1 to 4096"),
        BadValue(json: #"{"concurrency": "8"}"#, mentions: "\"concurrency\" must be a whole number"),
        BadValue(json: #"{"retryFailed": 1}"#, mentions: "\"retryFailed\" must be true or false"),
        BadValue(json: #"{"maxFailureRate": 150}"#, mentions: "\"maxFailureRate\" must be a percentage"),
        BadValue(json: #"{"format": "xml"}"#, mentions: "\"format\" must be one of csv, tsv, jsonl, json"),
        BadValue(json: #"{"journal": ""}"#, mentions: "\"journal\" must be a non-empty string"),
        BadValue(json: #"{"inputs": []}"#, mentions: "\"inputs\" must be a path"),
        BadValue(json: #"{"inputs": ["a.csv", 3]}"#, mentions: "\"inputs\" must be a path"),
        BadValue(json: #"{"inputs": ""}"#, mentions: "\"inputs\" must be a path"),
        BadValue(json: #"{"inputs": ["a.csv", ""]}"#, mentions: "\"inputs\" must be a path"),
        BadValue(json: #"{"description": 3}"#, mentions: "\"description\" must be a string"),
        BadValue(json: #"["not", "an", "object"]"#, mentions: "is not a JSON object"),
        BadValue(json: #"{"concurrency": 8"#, mentions: "is not valid JSON"),
    ])
    func badValuesAreRefusedNamingTheKey(_ bad: BadValue) {
        #expect {
            _ = try runSettings(job: bad.json)
        } throws: { error in
            (error as? UsageError)?.message.contains(bad.mentions) == true
        }
    }

    /// `run --job FILE` as the command parses it: the job's inputs stand unless the command line
    /// names some, and the command line's flags win over the job's keys.
    @Test func inputsOnTheCommandLineReplaceTheJobs() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("job-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = directory.appendingPathComponent("nightly.json").path
        try Data(#"{"inputs": ["job.csv", "more.csv"], "rate": 5}"#.utf8).write(to: URL(fileURLWithPath: job))

        let fromJob = try runSettings(["--job", job])
        #expect(fromJob.options.inputs == ["job.csv", "more.csv"] && fromJob.options.rate == 5)
        let overridden = try runSettings(["--job", job, "--rate", "7", "typed.csv"])
        #expect(overridden.options.inputs == ["typed.csv"] && overridden.options.rate == 7)
        // The job's keys are still checked when the command line replaces them.
        try Data(#"{"inputs": 3}"#.utf8).write(to: URL(fileURLWithPath: job))
        #expect(throws: UsageError.self) { try runSettings(["--job", job, "typed.csv"]) }
    }
}
