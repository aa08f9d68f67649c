import BotsiInput
import BotsiJournal
import Foundation

/// A row this run works on, as the scheduler holds it between reading and its last reply.
struct RunRow {
    let itemID: Int64
    let source: String
    let attemptsBefore: Int
    /// The row's status when the run took it up: the lifecycle table tells pending rows from
    /// final ones (a final row keeps its status without a definitive answer).
    let status: ItemStatus
    /// The input it was read from (an index into the run's inputs); nil for a row the journal owed.
    let readerIndex: Int?
    var attemptsThisRun = 0
    var lastWasTimeout = false
    /// The code of the last retryable error, journaled with the row while it waits.
    var lastCode: String?
    /// Its journal columns as they stand before its next in-flight mark, when known without
    /// reading them (a row just admitted, one put back); while it is marked and not sent, what
    /// the mark replaced.
    var beforeMark: InFlightMark?
}

/// A row taken up to be sent, with the keys the ordering rule goes by.
struct TakenRow {
    let profileId: String
    let transactionId: String
    let row: RunRow
}

/// How far the run has read its inputs, for progress.
struct InputPosition: Equatable {
    var bytesRead: Int64
    var totalBytes: Int64?
}

/// Hands the run its work: first the rows the journal owes (oldest first), then the pairs of
/// its inputs in order. It admits each input row through the journal (new, duplicate, already
/// finished, held), keeps only this shard's rows, and keeps per-input counts for messages and
/// the run's `inputs` record.
struct InputFeeder {
    /// Rows read per slice, so that replies queued meanwhile are not kept waiting.
    static let sliceSize = 2048

    /// A slice's rows to send, and why the slice ended.
    struct Slice {
        var rows: [TakenRow] = []
        var end = End.inputDone

        enum End: Equatable {
            /// Every input is read and every owed row taken up.
            case inputDone
            /// The slice used its budget: read on soon.
            case sliceFull
            /// No room to take more rows: read on when rows leave.
            case noRoom
            /// An input is damaged: the run stops; the message says where and what to do.
            case damaged(message: String)
        }
    }

    private let readers: [InputReader]
    private let mode: OutcomePolicy.RunMode
    private let holdConflicts: Bool
    private var owed: OwedRowFeeder
    private var readerIndex = 0
    /// Rows read from each input and, of those, rows sent: what a damaged file's message tells.
    private var rowsReadByReader: [Int]
    private var rowsSentByReader: [Int]
    private var bytesOfFinishedReaders: Int64 = 0
    private var finishedInputs: [RunInput] = []
    /// Whether the run took up a final row (`--retry-failed`, `--refresh-older-than`): only then
    /// can a resend have been kept without an answer.
    private(set) var tookUpFinalRows = false
    private(set) var isDone = false

    init(readers: [InputReader], options: RunOptions, mode: OutcomePolicy.RunMode, runID: Int64, startedAt: Date) {
        self.readers = readers
        self.mode = mode
        holdConflicts = options.onConflict == .hold
        owed = OwedRowFeeder(mode: mode, runID: runID, startedAt: startedAt)
        rowsReadByReader = Array(repeating: 0, count: readers.count)
        rowsSentByReader = Array(repeating: 0, count: readers.count)
    }

    /// Reads up to `sliceSize` records, taking up at most `room` rows to send.
    mutating func readSlice(
        room: Int, writer: RunJournalWriter, summary: inout RunSummary
    ) throws(JournalError) -> Slice {
        var slice = Slice()
        let now = Timestamp.string(Date())
        var budget = Self.sliceSize
        var room = room
        while budget > 0 {
            guard room > 0 else {
                slice.end = .noRoom
                return slice
            }
            if !owed.isDone {
                guard let row = try writer.nextOwed(from: &owed) else { continue }
                budget -= 1
                try writer.claim(row)
                summary.owedRows += 1
                if row.status.isFinal { tookUpFinalRows = true }
                room -= 1
                slice.rows.append(
                    TakenRow(
                        profileId: row.profileID, transactionId: row.originalTransactionID,
                        row: RunRow(
                            itemID: row.itemID, source: row.source, attemptsBefore: row.attempts, status: row.status,
                            readerIndex: nil)))
                continue
            }
            guard readerIndex < readers.count else {
                isDone = true
                slice.end = .inputDone
                return slice
            }
            let reader = readers[readerIndex]
            let record: InputRecord?
            do {
                record = try reader.next()
            } catch {
                slice.end = .damaged(
                    message: RunAdvice.damagedInput(
                        error.message, file: reader.displayName, rowsRead: rowsReadByReader[readerIndex],
                        rowsSent: rowsSentByReader[readerIndex]))
                return slice
            }
            guard let record else {
                finishReader(summary: &summary)
                continue
            }
            budget -= 1
            summary.rowsRead += 1
            rowsReadByReader[readerIndex] += 1
            if let taken = try admit(record, from: reader, now: now, writer: writer, summary: &summary) {
                room -= 1
                slice.rows.append(taken)
            }
        }
        slice.end = .sliceFull
        return slice
    }

    /// One input record: journaled as a rejection, or admitted (and, when the journal says so,
    /// taken up to be sent). Rows of other shards are only counted.
    private func admit(
        _ record: InputRecord, from reader: InputReader, now: String, writer: RunJournalWriter,
        summary: inout RunSummary
    ) throws(JournalError) -> TakenRow? {
        switch record {
        case .rejected(let rejected) where !isMine(rejected.profileId ?? ""):
            summary.otherShards += 1
        case .rejected(let rejected):
            summary.rejectedByReason[rejected.reason.rawValue, default: 0] += 1
            try writer.recordRejection(rejected, file: reader.displayName, now: now)
        case .row(let row) where !isMine(row.profileId):
            summary.otherShards += 1
        case .row(let row):
            let source = "\(reader.displayName):\(row.line)"
            switch try writer.admit(row, source: source, now: now, holdConflicts: holdConflicts) {
            case .held:
                // Recorded `held`, never sent; the journal's counts show it at the end.
                summary.newRows += 1
                if writer.dryRun { summary.wouldHold += 1 }
            case .duplicate:
                summary.duplicates += 1
            case .finished(let status):
                summary.alreadyFinished[status.rawValue, default: 0] += 1
            case .send(let itemID, let attempts, _):
                summary.newRows += 1
                return TakenRow(
                    profileId: row.profileId, transactionId: row.originalTransactionId,
                    row: RunRow(
                        itemID: itemID, source: source, attemptsBefore: attempts, status: .pending,
                        readerIndex: readerIndex, beforeMark: .admitted(itemID: itemID, at: now)))
            }
        }
        return nil
    }

    /// Sharding: each row belongs to the shard its profileId hashes to (rejected rows without a
    /// profileId to shard 0), so one profile's rows stay in order on one machine.
    private func isMine(_ profileId: String) -> Bool {
        mode.owns(profileId: profileId)
    }

    private mutating func finishReader(summary: inout RunSummary) {
        let reader = readers[readerIndex]
        finishedInputs.append(
            RunInput(path: reader.displayName, sha256: reader.sha256Hex, bytes: reader.bytesRead, complete: true))
        bytesOfFinishedReaders += reader.bytesRead
        if let empty = reader.noRows {
            summary.inputNotes.append((empty.isWarning ? "warning: " : "") + empty.message(input: reader.displayName))
        }
        reader.close()
        readerIndex += 1
    }

    /// A row is sent for the first time: what a damaged input's message counts as sent.
    mutating func noteFirstSend(of row: RunRow) {
        guard row.attemptsThisRun == 0, let reader = row.readerIndex else { return }
        rowsSentByReader[reader] += 1
    }

    var position: InputPosition {
        let current = readerIndex < readers.count ? readers[readerIndex] : nil
        var totalBytes: Int64? = 0
        for reader in readers {
            if let total = reader.totalBytes, let sum = totalBytes {
                totalBytes = sum + total
            } else {
                totalBytes = nil
            }
        }
        return InputPosition(bytesRead: bytesOfFinishedReaders + (current?.bytesRead ?? 0), totalBytes: totalBytes)
    }

    /// The run's `inputs` record: each input with the SHA-256 and size of what was read, and
    /// whether it was read to its end.
    var inputsRecord: [RunInput] {
        var records = finishedInputs
        for reader in readers[readerIndex...] {
            records.append(
                RunInput(path: reader.displayName, sha256: reader.sha256Hex, bytes: reader.bytesRead, complete: false))
        }
        return records
    }

    /// The inputs not read to their end are closed when the run ends.
    func closeUnfinished() {
        for reader in readers[readerIndex...] { reader.close() }
    }
}
