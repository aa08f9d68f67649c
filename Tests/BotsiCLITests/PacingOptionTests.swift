import BotsiRestore
import Foundation
import Testing

@testable import BotsiCLI

/// The options of issue 23: one budget for the whole job, headroom for the live app, and the
/// shard index read from the batch scheduler's variables.
@Suite struct PacingOptionTests {
    func usageError(_ arguments: [String]) -> String {
        do {
            _ = try runSettings(arguments)
            return ""
        } catch {
            return error.message
        }
    }

    func jobError(_ json: String) -> String {
        do {
            _ = try runSettings(job: json)
            return ""
        } catch {
            return error.message
        }
    }

    @Test func theJobRateAndTheHeadroomAreReadAsTheirJobKeysAre() throws {
        let flags = try runSettings(["--job-rate", "40", "--headroom", "20%", "--shard", "auto/4"])
        let job = try runSettings(job: #"{"jobRate": 40, "headroom": "20%", "shard": "auto/4"}"#)
        #expect(flags == job)
        #expect(flags.options.jobRate == 40 && flags.options.headroom == 20)
        #expect(flags.shard == .fromEnvironment(count: 4))
        #expect(try runSettings(job: #"{"headroom": 20}"#).options.headroom == 20)
        #expect(
            usageError(["--headroom", "100"]).hasPrefix("option '--headroom' needs a percentage from 0 to below 100"))
        // A review: 0.2 was a fifth of a per cent, and 99.5% passed a message that said "0 to 99".
        #expect(usageError(["--headroom", "0.2"]).contains("write 0.5% for half a per cent"))
        #expect(jobError(#"{"headroom": 0.2}"#).contains("headroom"))
        #expect(try runSettings(["--headroom", "0.5%"]).options.headroom == 0.5)
        #expect(try runSettings(["--headroom", "99.5%"]).options.headroom == 99.5)
        #expect(try runSettings(["--headroom", "0"]).options.headroom == 0)
        #expect(try runSettings(["--headroom", "1"]).options.headroom == 1)
        #expect(try runSettings(["--headroom", "0%"]).options.headroom == 0)
        #expect(usageError(["--headroom", "100%"]).hasPrefix("option '--headroom' needs a percentage"))
        #expect(usageError(["--headroom", "-1%"]).hasPrefix("option '--headroom' needs a percentage"))
        #expect(usageError(["--job-rate", "0"]).hasPrefix("option '--job-rate' needs a number of requests per second"))
        #expect(jobError(#"{"headroom": 100}"#).contains("headroom"))
    }

    @Test func aJobFileTakesOnlyTheShardFormsThatReadTheEnvironment() throws {
        #expect(try runSettings(job: #"{"shard": "auto"}"#).shard == .fromEnvironment(count: nil))
        let fixed = jobError(#"{"shard": "1/4"}"#)
        #expect(fixed.contains("\"shard\" must be") && fixed.contains("auto/N"), "\(fixed)")
        let settings = try runSettings(["--shard", "1/4"])
        #expect(settings.options.shardIndex == 1 && settings.options.shardCount == 4, "a fixed shard applies at once")
        #expect(usageError(["--shard", "auto/0"]).hasPrefix("option '--shard' needs I/N"))
        #expect(usageError(["--shard", "4/4"]).hasPrefix("option '--shard' needs I/N"), "indexes count from 0")
        #expect(try runSettings(["--shard", "3/4"]).options.shardIndex == 3)
        #expect(usageError(["--shard", "automatic"]).hasPrefix("option '--shard' needs I/N"))
    }
}

/// `--shard auto`: the index from Kubernetes' or AWS Batch's variables, every contradiction said.
@Suite struct ShardSpecTests {
    func resolve(_ text: String, _ environment: [String: String]) -> String {
        do {
            let shard = try ShardSpec(text)!.resolve(environment: environment)
            return "\(shard.index)/\(shard.count)"
        } catch {
            return error.message
        }
    }

    @Test func theIndexComesFromTheSchedulerAndTheCountFromTheOptionOrAWSBatch() {
        #expect(resolve("2/4", [:]) == "2/4")
        #expect(resolve("auto/4", ["JOB_COMPLETION_INDEX": "3"]) == "3/4")
        #expect(resolve("auto/4", ["AWS_BATCH_JOB_ARRAY_INDEX": "1"]) == "1/4")
        #expect(resolve("auto", ["AWS_BATCH_JOB_ARRAY_INDEX": "5", "AWS_BATCH_JOB_ARRAY_SIZE": "8"]) == "5/8")
        #expect(resolve("auto/8", ["AWS_BATCH_JOB_ARRAY_INDEX": "5", "AWS_BATCH_JOB_ARRAY_SIZE": "8"]) == "5/8")
        #expect(resolve("auto/4", ["JOB_COMPLETION_INDEX": "1", "AWS_BATCH_JOB_ARRAY_INDEX": "1"]) == "1/4")
    }

    @Test func whatIsMissingOrContradictoryIsSaid() {
        #expect(resolve("auto/4", [:]).contains("neither is set"))
        #expect(resolve("auto", ["JOB_COMPLETION_INDEX": "0"]).contains("--shard auto/N"))
        #expect(resolve("auto/4", ["JOB_COMPLETION_INDEX": "4"]).contains("not below 4"))
        #expect(resolve("auto/4", ["JOB_COMPLETION_INDEX": "x"]).contains("'x', not a shard index"))
        #expect(resolve("auto/4", ["JOB_COMPLETION_INDEX": "-1"]).contains("'-1', not a shard index"))
        #expect(
            resolve("auto/4", ["JOB_COMPLETION_INDEX": "1", "AWS_BATCH_JOB_ARRAY_INDEX": "2"]).contains("disagree"))
        #expect(
            resolve("auto/4", ["AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "8"]).contains("agree"))
        #expect(
            resolve("auto", ["AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "0"]).contains(
                "not a number"))
    }
}
