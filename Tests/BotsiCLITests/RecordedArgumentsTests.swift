import BotsiRestore
import Foundation
import Testing

@testable import BotsiCLI

/// `status` shows a run's recorded options as `run` takes them (issue 19, item 7): every option of
/// the table, given a value, comes back as the same option, and typing those words again gives the
/// same run.
@Suite struct RecordedArgumentsTests {
    /// Options that do not reach the recorded options (how this process reports), or that status
    /// shows on lines of their own (the journal; the job file's options are recorded merged).
    static let notRecorded: Set<String> = [
        "--job", "--journal", "--quiet", "--log-interval", "--log-format", "--metrics-file", "--metrics-push", "--help",
    ]
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func options(_ arguments: [String]) throws -> RunOptions {
        try RunCommand.runOptions(try RunCommand.settings(from: arguments).settings, now: now)
    }

    /// Through the journal's JSON, as `status` reads it.
    static func recorded(_ options: RunOptions) throws -> RunOptions {
        let json = String(decoding: try JSONEncoder().encode(options), as: UTF8.self)
        return try #require(RunOptions.recorded(json))
    }

    @Test func everyRecordedOptionComesBackAsTyped() throws {
        let defaults = try Self.options([])
        for spec in RunCommand.optionSpecs where !Self.notRecorded.contains(spec.long) {
            var typed = [spec.long]
            if spec.takesValue {
                // A value that is not the default, so the option shows.
                // --shard's example is auto/N, which reads its index from the environment when
                // the run starts; the run records the index it resolved.
                let fixed = ["--on-conflict": "hold", "--shard": "1/4"]
                let value = try fixed[spec.long] ?? #require(spec.example, "\(spec.long)")
                typed.append(spec.defaultValue == value ? value + "1" : value)
            }
            // An option that narrows another is given with it (and shown after it).
            let companion = ["--answered-before": ["--retry-failed"]][spec.long] ?? []
            typed = companion + typed
            let given = try Self.options(typed)
            #expect(given != defaults, "\(typed) changes nothing to record")
            let shown = try Self.recorded(given).arguments
            #expect(
                Array(shown.prefix(companion.count + 1)) == companion + [spec.long], "\(typed) is shown as \(shown)")
            #expect(try Self.options(shown) == given, "\(shown) is not the run \(typed) made")
        }
    }

    @Test func aNightlyJobReadsAsItsOptions() throws {
        let typed = [
            "--stop-at", "6:30", "--refresh-older-than", "7d", "-j", "16", "--rate", "12.5", "--timeout", "500ms",
            "--max-failure-rate", "20%", "--shard", "1/4",
        ]
        let shown = try Self.recorded(try Self.options(typed)).arguments
        #expect(
            shown == [
                "--refresh-older-than", "7d", "--concurrency", "16", "--timeout", "500ms", "--rate", "12.5",
                "--max-failure-rate", "20", "--stop-at", "06:30", "--shard", "1/4",
            ])
        #expect(try Self.recorded(try Self.options([])).arguments.isEmpty, "the defaults show nothing")
    }

    @Test func anOlderRecordGetsTheDefaultsForWhatItLacksAndKeepsTheRest() throws {
        let older = #"{"concurrency": 3, "timeout": "not a number", "deadline": 817885800}"#
        let options = try #require(RunOptions.recorded(older))
        #expect(options.concurrency == 3)
        #expect(options.timeout == RunOptions().timeout)
        #expect(options.deadline == Date(timeIntervalSinceReferenceDate: 817_885_800))
        #expect(options.arguments == ["--concurrency", "3"])
        #expect(RunOptions.recorded("not json") == nil)
    }
}
