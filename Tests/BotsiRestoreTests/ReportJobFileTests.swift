import BotsiInput
import BotsiRestore
import Foundation
import Testing

func parseJob(_ json: String) throws(JobFileError) -> JobDefinition {
    try JobDefinition.parse(Data(json.utf8), path: "test.json")
}

@Suite struct ReportJobFileTests {
    @Test(arguments: ["nightly-reconcile.json", "bulk-migration.json", "audit.json"])
    func theShippedJobFilesAreValidAndDescribed(name: String) throws {
        let job = try JobDefinition.load(path: repositoryRoot + "/jobs/" + name)
        #expect((job.description ?? "").count > 40)
        #expect(!job.inputs.isEmpty)
        #expect(job.options.contains { $0.option == "--journal" })
        #expect(job.options.contains { $0.option == "--key-env" })
    }

    @Test func keysBecomeRunOptionsInKeyOrder() throws {
        let job = try parseJob(
            """
            {"description": "d", "inputs": "in.csv", "concurrency": 16, "rate": 40.5, "timeout": "30s",
             "connectTimeout": 2, "stopAt": "06:30", "maxFailureRate": "20%", "retryFailed": true,
             "adaptive": false, "refreshOlderThan": "7d", "journal": "j.sqlite", "minSample": 100}
            """)
        #expect(job.inputs == ["in.csv"])
        #expect(
            job.options.map(\.option) == [
                "--journal", "--concurrency", "--rate", "--no-adaptive", "--timeout", "--connect-timeout", "--stop-at",
                "--max-failure-rate", "--min-sample", "--retry-failed", "--refresh-older-than",
            ])
        #expect(
            job.options.map(\.value) == ["j.sqlite", "16", "40.5", nil, "30s", "2", "06:30", "20", "100", nil, "7d"])
    }

    @Test func inputKeysBecomeTheInputFlags() throws {
        let job = try parseJob(
            """
            {"inputs": "dump.csv", "noHeader": true, "profileColumn": 2, "transactionColumn": "1",
             "delimiter": ";", "encoding": "windows-1252", "bundleId": "com.example.app", "environment": "sandbox"}
            """)
        #expect(
            job.options.map(\.option) == [
                "--profile-column", "--transaction-column", "--delimiter", "--encoding", "--no-header", "--bundle-id",
                "--environment",
            ])
        #expect(job.options.map(\.value) == ["2", "1", ";", "windows-1252", nil, "com.example.app", "sandbox"])
        #expect(throws: JobFileError.self) { try parseJob(#"{"profileColumn": 0}"#) }
        #expect(throws: JobFileError.self) { try parseJob(#"{"profileColumn": true}"#) }
    }

    @Test func inputOptionsReachTheReader() {
        var options = RunOptions()
        options.noHeader = true
        options.profileColumn = "3"
        options.delimiter = "tab"
        options.encoding = "cp1252"
        options.environment = "production"
        let input = options.inputOptions
        #expect(!input.hasHeader && input.positions?.profile == 3 && input.positions?.transaction == 2)
        #expect(input.delimiter == 0x09 && input.encoding == .windows1252 && input.environment == .production)
        #expect(RunOptions.delimiterByte("a") == nil && RunOptions.delimiterByte("\"") == nil)
        #expect(RunOptions.delimiterByte("|") == UInt8(ascii: "|"))
    }

    @Test func flagsThatAreOffAddNothing() throws {
        let job = try parseJob(#"{"retryFailed": false, "adaptive": true}"#)
        #expect(job.options.isEmpty)
    }

    @Test func unknownKeysAreNamedWithASuggestion() {
        #expect {
            _ = try parseJob(#"{"concurency": 8, "maxAttemps": 3, "zzzzzzzzzz": 1}"#)
        } throws: { error in
            let message = (error as? JobFileError)?.message ?? ""
            return message.contains("'concurency' (did you mean 'concurrency'?)")
                && message.contains("'maxAttemps' (did you mean 'maxAttempts'?)")
                && message.contains("'zzzzzzzzzz'") && message.contains("test.json")
        }
    }

    @Test func theKeyItselfIsRefusedWithAPointerToKeyEnv() {
        #expect {
            _ = try parseJob(#"{"apiKey": "sk_live_not_a_real_key"}"#)
        } throws: { error in
            let message = (error as? JobFileError)?.message ?? ""
            return message.contains("keyEnv") && !message.contains("sk_live_not_a_real_key")
        }
    }

    struct BadValue: Sendable, CustomTestStringConvertible {
        let json: String
        let mentions: String
        var testDescription: String { json }
    }

    @Test(arguments: [
        BadValue(json: #"{"timeout": "soon"}"#, mentions: "\"timeout\" must be a duration"),
        BadValue(json: #"{"stopAt": "25:00"}"#, mentions: "\"stopAt\" must be a local time"),
        BadValue(json: #"{"concurrency": 2.5}"#, mentions: "\"concurrency\" must be a whole number"),
        BadValue(json: #"{"concurrency": true}"#, mentions: "\"concurrency\" must be a whole number"),
        BadValue(json: #"{"retryFailed": 1}"#, mentions: "\"retryFailed\" must be true or false"),
        BadValue(json: #"{"maxFailureRate": 150}"#, mentions: "\"maxFailureRate\" must be a percentage"),
        BadValue(json: #"{"inputs": []}"#, mentions: "\"inputs\" must be a path"),
        BadValue(json: #"["not", "an", "object"]"#, mentions: "is not a JSON object"),
    ])
    func badValuesAreRefusedNamingTheKey(_ bad: BadValue) {
        #expect {
            _ = try parseJob(bad.json)
        } throws: { error in
            (error as? JobFileError)?.message.contains(bad.mentions) == true
        }
    }
}
