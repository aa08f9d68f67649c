import BotsiJournal
import Foundation
import Testing

/// A new journal at `path` with one run and `count` rows admitted to send (profile `pN`,
/// transaction `1000+N`, line `N+2` of one input): where the tests that compare two ways of
/// writing the same rows start from.
func journalWithAdmittedRows(at path: String, count: Int) throws -> (journal: Journal, run: Int64, items: [Int64]) {
    try journalWithAdmittedRows(at: path, pairs: (0..<count).map { ("p\($0)", "\(1_000 + $0)") })
}

/// A new journal at `path` with one run and `pairs` admitted from `in.csv` (pair N on line N + 2),
/// each new and so to be sent: the rows' item ids, in order.
func journalWithAdmittedRows(
    at path: String, pairs: [(profile: String, transaction: String)]
) throws -> (journal: Journal, run: Int64, items: [Int64]) {
    let journal = try Journal(path: path)
    let run = try journal.transaction { () throws(JournalError) in
        try journal.startRun(startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
    }
    let input = try journal.inputID(path: "in.csv")
    let toAdmit = pairs.enumerated().map { index, pair in
        PairToAdmit(
            profileId: pair.profile, originalTransactionId: pair.transaction,
            source: RowSource(input: input, line: index + 2))
    }
    let admissions = try journal.transaction { () throws(JournalError) in
        try journal.admit(toAdmit, runID: run, now: 1_000)
    }
    let items = admissions.compactMap { admission -> Int64? in
        if case .send(let item, _) = admission { return item }
        return nil
    }
    try #require(items.count == pairs.count, "every pair is new: \(admissions)")
    return (journal, run, items)
}
