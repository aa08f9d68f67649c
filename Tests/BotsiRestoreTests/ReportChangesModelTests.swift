import BotsiBasics
import BotsiJournal
import BotsiTestSupport
import Foundation
import Testing

/// `report --changes` over seeded, random journals checked against a reference written from its
/// definition alone: a row's state as of run R is its last definitive attempt up to R, else its
/// last attempt up to R (pending, with that attempt's code); a row touched in (earlier, later]
/// changed when it had no state by `earlier`, or its status or code differs, or, restored, its
/// access levels do. Every pair of runs is compared, and each side of a change in every field the
/// report writes from it (status, code, HTTP status, run, time, snapshot). `CHANGES_SEED=n` replays
/// one seed.
@Suite struct ReportChangesModelTests {
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["CHANGES_SEED"].flatMap { UInt64($0) }.map { [$0] } ?? Array(1...8)

    struct Attempt {
        var run: Int64
        var outcome: String
        var code: String?
        var access: String?
        var http: Int?
        var at: String
    }

    static let finals: Set<String> = ["restored", "nothing_to_restore", "profile_not_found", "rejected", "failed"]

    /// The reference: the state as of `run`, as (status, code, access), or nil when nothing was sent.
    static func state(_ attempts: [Attempt], asOf run: Int64) -> (status: String, picked: Attempt)? {
        let upTo = attempts.filter { $0.run <= run }
        guard let picked = upTo.last(where: { finals.contains($0.outcome) }) ?? upTo.last else { return nil }
        return (finals.contains(picked.outcome) ? picked.outcome : "pending", picked)
    }

    /// A side of a change as the test compares it.
    static func describe(status: String, code: String?, http: Int?, run: Int64, at: String, access: String?) -> String {
        "\(status)/\(code ?? "-")/\(http.map(String.init) ?? "-")/run \(run)/\(at)/\(access ?? "-")"
    }

    @Test(arguments: seeds)
    func everyPairOfRunsMatchesTheDefinition(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let directory = Workspace()
        let path = directory.file("journal.sqlite")
        var builder = try JournalBuilder(path: path)
        var history: [String: [Attempt]] = [:]
        var runs: [Int64] = []
        let outcomes = [
            "restored", "restored", "nothing_to_restore", "profile_not_found", "failed", "retry", "pending",
        ]
        let accesses = [levels(true), levels(false), levels(true, expires: "2028-01-01T00:00:00.000Z")]
        for _ in 0..<Int(3 + random.next() % 4) {
            let run = try builder.startRun()
            runs.append(run)
            for index in 0..<30 where random.next() % 3 != 0 {
                let profile = "p\(index)"
                for _ in 0..<Int(1 + random.next() % 3) {
                    let outcome = pick(outcomes)
                    // A 200 without a restore carries a snapshot too, which is no change of its own.
                    let attempt = Attempt(
                        run: run, outcome: outcome,
                        code: outcome == "restored" ? nil : pick([nil, "http_503", "timeout", "http_418"]),
                        access: outcome == "restored" || outcome == "nothing_to_restore" ? pick(accesses) : nil,
                        http: pick([200, 404, 418, 503, nil]), at: Timestamp.string(builder.clock + 1))
                    try builder.attempt(
                        profile, run: run, outcome: outcome, code: attempt.code, access: attempt.access,
                        httpStatus: attempt.http)
                    history[profile, default: []].append(attempt)
                }
            }
        }
        builder.journal.close()
        for (position, earlier) in runs.enumerated() {
            for later in runs[(position + 1)...] {
                var expected: [String: String] = [:]
                for (profile, attempts) in history
                where attempts.contains(where: { $0.run > earlier && $0.run <= later }) {
                    let after = Self.state(attempts, asOf: later)!
                    let before = Self.state(attempts, asOf: earlier)
                    let changed =
                        before == nil || before!.status != after.status || before!.picked.code != after.picked.code
                        || (after.status == "restored" && before!.picked.access != after.picked.access)
                    if changed {
                        let side = { (state: (status: String, picked: Attempt)) in
                            Self.describe(
                                status: state.status, code: state.picked.code, http: state.picked.http,
                                run: state.picked.run, at: state.picked.at,
                                // The builder's replies carry the profile state "subscribed".
                                access: state.picked.access.map { "subscribed \($0)" })
                        }
                        expected[profile] = "\(before.map(side) ?? "none") → \(side(after))"
                    }
                }
                var found: [String: String] = [:]
                for (profile, change) in try changes(path, since: earlier, until: later) {
                    let side = { (state: RowState) in
                        Self.describe(
                            status: state.status.rawValue, code: state.code, http: state.httpStatus, run: state.runID,
                            at: state.attemptedAt,
                            access: state.accessLevels.map { "\(state.profileState ?? "-") \($0)" })
                    }
                    found[profile] = "\(change.0.before.map(side) ?? "none") → \(side(change.0.after))"
                }
                #expect(
                    found == expected,
                    "seed \(seed) (replay: CHANGES_SEED=\(seed)), runs \(earlier)..\(later): \(found.count) rows found, \(expected.count) expected"
                )
            }
        }
    }
}
