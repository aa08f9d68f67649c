import BotsiJournal
import Foundation

/// A new journal at `path` with one run and `count` rows admitted to send (profile `pN`,
/// transaction `1000+N`, line `N+2` of one input): where the tests that compare two ways of
/// writing the same rows start from.
func journalWithAdmittedRows(at path: String, count: Int) throws -> (journal: Journal, run: Int64, items: [Int64]) {
    let journal = try Journal(path: path)
    let run = try journal.transaction { () throws(JournalError) in
        try journal.startRun(startedAt: Date(), toolVersion: "test", host: "host", pid: 1, optionsJSON: "{}")
    }
    let input = try journal.inputID(path: "in.csv")
    let pairs = (0..<count).map { index in
        PairToAdmit(
            profileId: "p\(index)", originalTransactionId: "\(1_000 + index)",
            source: RowSource(input: input, line: index + 2))
    }
    let items = try journal.transaction { () throws(JournalError) in
        try journal.admit(pairs, runID: run, now: 1_000)
    }.compactMap { admission -> Int64? in
        if case .send(let item, _) = admission { return item }
        return nil
    }
    return (journal, run, items)
}
