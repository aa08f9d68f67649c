import BotsiInput
import BotsiJournal
import Foundation

/// A row this run works on, as the scheduler holds it between reading and its last reply.
struct RunRow {
    let itemID: Int64
    /// `file:line` where an owed row was last read; for an input row, `line` of input `readerIndex`.
    let owedSource: String?
    let attemptsBefore: Int
    /// The row's status when the run took it up: the lifecycle table tells pending rows from
    /// final ones (a final row keeps its status without a definitive answer).
    let status: ItemStatus
    /// The input it was read from (an index into the run's inputs); nil for a row the journal owed.
    let readerIndex: Int?
    /// For a row the journal owed, the run that had it before this one claimed it.
    var claimedFrom: Int64?
    var line = 0
    var attemptsThisRun = 0
    var lastWasTimeout = false
    /// Whether its last retry was paid from the run's retry budget: a success pays back only that.
    var lastRetryPaid = false
    /// The code of the last retryable error, journaled with the row while it waits.
    var lastCode: String?
}

/// A row taken up to be sent, with the keys the ordering rule goes by.
struct TakenRow {
    let profileId: String
    let transactionId: String
    let row: RunRow
}

/// What the input side counted in a slice: reported to the run, which owns the summary.
struct InputCounts {
    var rowsRead = 0
    var owedRows = 0
    var duplicates = 0
    /// Owed rows met again in the input: one row each, never sent twice (a stop may leave them unsent).
    var owedMetAgain = 0
    var newRows = 0
    var wouldHold = 0
    var otherShards = 0
    var rejectedByReason: [RejectionReason: Int] = [:]
    /// Rows the journal holds finished, by `ItemStatus.journalCode`: an array, because hashing
    /// the string-valued status for every row of a rerun cost ~600 instructions a row.
    var finishedByCode = [Int](repeating: 0, count: ItemStatus.allCases.count)
    var alreadyFinished: [ItemStatus: Int] {
        var byStatus: [ItemStatus: Int] = [:]
        for (code, count) in finishedByCode.enumerated() where count > 0 {
            if let status = ItemStatus(journalCode: Int64(code)) { byStatus[status] = count }
        }
        return byStatus
    }
    var inputNotes: [String] = []
    /// Inputs read to their end whose every row of this shard failed the checks (see
    /// `RunSummary.everyRowRejected`): a broken export beside good ones must not look fine.
    var rejectedInputs: [String] = []
}

/// How far the run has read its inputs, for progress.
struct InputPosition: Equatable {
    var bytesRead: Int64
    var totalBytes: Int64?
    /// Every input read to its end.
    var complete = false
}

/// Hands the run its work: first the rows the journal owes (oldest first), then the records of
/// its inputs in order, as the input thread (`InputPump`) hands them over. It admits each input
/// row through the journal (new, duplicate, already finished, held), keeps only this shard's rows,
/// and keeps per-input counts for messages and the run's `inputs` record.
struct InputFeeder {
    /// Records admitted per slice, so that replies queued meanwhile are not kept waiting.
    static let sliceSize = 2048

    /// A slice's rows to send, and why the slice ended.
    struct Slice {
        var rows: [TakenRow] = []
        var end = End.inputDone
        var counts = InputCounts()

        enum End: Equatable {
            /// Every input is read and every owed row taken up.
            case inputDone
            /// The slice used its budget: read on soon.
            case sliceFull
            /// No room to take more rows: read on when rows leave.
            case noRoom
            /// The input thread has handed over nothing more yet: read on when it does.
            case waitingForInput
            /// An input is damaged: the run stops; `damagedMessage` says where and what to do.
            case damaged(input: Int, reason: String)
        }
    }

    private let pump: InputPump
    /// The inputs' names, as messages and `runs.inputs` give them.
    let names: [String]
    /// The journal's numbers for them, recorded at the first slice.
    private var inputIDs: [Int64] = []
    private let mode: OutcomePolicy.RunMode
    private let holdConflicts: Bool
    private var owed: OwedRowFeeder
    /// Rows read from each input and, of those, rows sent: what a damaged file's message tells.
    private var rowsReadByInput: [Int]
    private var rowsSentByInput: [Int]
    /// Rows of this shard read from each input (those a filter refused left out), and of those
    /// the ones the checks refused as broken: equal at an input's end, the input is broken.
    private var ownRowsByInput: [Int]
    private var brokenRowsByInput: [Int]
    /// Rows new to the journal read from each input within the bytes an earlier run had read of
    /// it before it stopped: that run would have recorded them, so the file was replaced.
    private var newWithinEarlierRead: [Int]
    /// The inputs that are standard input (`-`): a stream, not a file.
    private let streams: Set<Int>
    private var finishedInputs: [RunInput] = []
    private(set) var isDone = false

    init(
        pump: InputPump, names: [String], options: RunOptions, mode: OutcomePolicy.RunMode, runID: Int64,
        startedAt: Date
    ) {
        self.pump = pump
        self.names = names
        self.mode = mode
        holdConflicts = options.onConflict == .hold
        owed = OwedRowFeeder(mode: mode, runID: runID, startedAt: startedAt)
        rowsReadByInput = Array(repeating: 0, count: names.count)
        rowsSentByInput = Array(repeating: 0, count: names.count)
        ownRowsByInput = Array(repeating: 0, count: names.count)
        brokenRowsByInput = Array(repeating: 0, count: names.count)
        newWithinEarlierRead = Array(repeating: 0, count: names.count)
        streams = Set(options.inputs.indices.filter { options.inputs[$0] == "-" })
    }

    /// Admits up to `sliceSize` records, taking up at most `room` rows to send.
    mutating func readSlice(room: Int, writer: inout RunJournalWriter) throws(JournalError) -> Slice {
        var slice = Slice()
        let now = Timestamp.milliseconds(Date())
        if inputIDs.count != names.count { inputIDs = try writer.inputIDs(names) }
        var budget = Self.sliceSize
        var room = room
        while !owed.isDone && budget > 0 {
            guard room > 0 else {
                slice.end = .noRoom
                return slice
            }
            guard let row = try writer.nextOwed(from: &owed) else { continue }
            budget -= 1
            try writer.claim(row)
            slice.counts.owedRows += 1
            room -= 1
            slice.rows.append(
                TakenRow(
                    profileId: row.profileID, transactionId: row.originalTransactionID,
                    row: RunRow(
                        itemID: row.itemID, owedSource: row.source, attemptsBefore: row.attempts, status: row.status,
                        readerIndex: nil, claimedFrom: row.lastRun)))
        }
        while budget > 0 {
            guard room > 0 else {
                slice.end = .noRoom
                return slice
            }
            // No more events than rows there is room for: a record may become a row to send.
            let events = pump.take(limit: min(budget, room))
            guard !events.isEmpty else {
                if pump.isDone {
                    isDone = true
                    slice.end = .inputDone
                } else {
                    slice.end = .waitingForInput
                }
                return slice
            }
            var rows = AdmittedRows()
            let takenBefore = slice.rows.count
            for event in events {
                budget -= 1
                switch event {
                case .record(let record, let input, let consumed):
                    slice.counts.rowsRead += 1
                    rowsReadByInput[input] += 1
                    let withinEarlierRead = writer.earlierBytesRead[input].map { consumed <= $0 } ?? false
                    try take(
                        record, input: input, withinEarlierRead: withinEarlierRead, now: now, into: &rows,
                        writer: &writer, counts: &slice.counts)
                case .finished(let input, let record, let noRows):
                    // Its rows are counted before what its end says of them.
                    try admit(rows, now: now, writer: &writer, slice: &slice)
                    rows = AdmittedRows()
                    finishedInputs.append(record)
                    if let earlier = writer.earlierBytesRead[input] {
                        let isStream = streams.contains(input)
                        if record.bytes < earlier {
                            slice.counts.inputNotes.append(
                                RunAdvice.shorterInput(
                                    record.path, bytes: record.bytes, earlierBytes: earlier, isStream: isStream))
                        } else if newWithinEarlierRead[input] > 0 {
                            slice.counts.inputNotes.append(
                                RunAdvice.replacedInput(
                                    record.path, newRows: newWithinEarlierRead[input], earlierBytes: earlier,
                                    isStream: isStream))
                        }
                    }
                    if ownRowsByInput[input] > 0 && brokenRowsByInput[input] == ownRowsByInput[input] {
                        slice.counts.rejectedInputs.append(record.path)
                    }
                    if let empty = noRows {
                        slice.counts.inputNotes.append(
                            (empty.isWarning ? "warning: " : "") + empty.message(input: record.path))
                    }
                case .damaged(let input, let message):
                    try admit(rows, now: now, writer: &writer, slice: &slice)
                    slice.end = .damaged(input: input, reason: message)
                    return slice
                }
            }
            try admit(rows, now: now, writer: &writer, slice: &slice)
            room -= slice.rows.count - takenBefore
        }
        slice.end = .sliceFull
        return slice
    }

    /// This shard's rows among a take of events, admitted together.
    private struct AdmittedRows {
        var pairs: [PairToAdmit] = []
        var inputs: [Int] = []
        /// Read within the bytes an earlier run had read of its input before it stopped.
        var withinEarlierRead: [Bool] = []
    }

    /// One input record: journaled as a rejection, or kept to be admitted with the rest of its
    /// take. Rows of other shards are only counted.
    private mutating func take(
        _ record: InputRecord, input: Int, withinEarlierRead: Bool, now: Int64, into rows: inout AdmittedRows,
        writer: inout RunJournalWriter, counts: inout InputCounts
    ) throws(JournalError) {
        switch record {
        case .rejected(let rejected) where !isMine(rejected.profileId ?? ""):
            counts.otherShards += 1
        case .rejected(let rejected):
            counts.rejectedByReason[rejected.reason, default: 0] += 1
            if !RunSummary.notBroken.contains(rejected.reason) {
                ownRowsByInput[input] += 1
                brokenRowsByInput[input] += 1
            }
            try writer.recordRejection(
                rejected, source: RowSource(input: inputIDs[input], line: rejected.line), now: now)
        case .row(let row) where !isMine(row.profileId):
            counts.otherShards += 1
        case .row(let row):
            ownRowsByInput[input] += 1
            rows.pairs.append(
                PairToAdmit(
                    profileId: row.profileId, originalTransactionId: row.originalTransactionId,
                    source: RowSource(input: inputIDs[input], line: row.line)))
            rows.inputs.append(input)
            rows.withinEarlierRead.append(withinEarlierRead)
        }
    }

    /// Admits the rows kept from a take (the journal finds them a batch at a time) and takes up
    /// the ones to send.
    private mutating func admit(
        _ rows: AdmittedRows, now: Int64, writer: inout RunJournalWriter, slice: inout Slice
    ) throws(JournalError) {
        let admissions = try writer.admit(rows.pairs, now: now, holdConflicts: holdConflicts)
        for (index, admission) in admissions.enumerated() {
            switch admission {
            case .held:
                // Recorded `held`, never sent; the journal's counts show it at the end.
                slice.counts.newRows += 1
                if rows.withinEarlierRead[index] { newWithinEarlierRead[rows.inputs[index]] += 1 }
                if writer.dryRun { slice.counts.wouldHold += 1 }
            case .duplicate:
                slice.counts.duplicates += 1
            case .owedMetAgain:
                slice.counts.owedMetAgain += 1
            case .finished(let status):
                slice.counts.finishedByCode[Int(status.journalCode)] += 1
            case .send(let itemID, _):
                slice.counts.newRows += 1
                if rows.withinEarlierRead[index] { newWithinEarlierRead[rows.inputs[index]] += 1 }
                let pair = rows.pairs[index]
                slice.rows.append(
                    TakenRow(
                        profileId: pair.profileId, transactionId: pair.originalTransactionId,
                        row: RunRow(
                            itemID: itemID, owedSource: nil, attemptsBefore: 0, status: .pending,
                            readerIndex: rows.inputs[index], line: pair.source.line)))
            }
        }
    }

    /// Sharding: each row belongs to the shard its profileId hashes to (rejected rows without a
    /// profileId to shard 0), so one profile's rows stay in order on one machine.
    private func isMine(_ profileId: String) -> Bool {
        mode.owns(profileId: profileId)
    }

    /// A row is sent for the first time: what a damaged input's message counts as sent.
    mutating func noteFirstSend(of row: RunRow) {
        guard row.attemptsThisRun == 0, let input = row.readerIndex else { return }
        rowsSentByInput[input] += 1
    }

    /// What a damaged input's stop says: where, what to do, and how many of its rows were read
    /// and sent. Asked once the client's queue is taken back, so that sent means sent.
    func damagedMessage(input: Int, reason: String) -> String {
        RunAdvice.damagedInput(
            reason, file: names[input], rowsRead: rowsReadByInput[input], rowsSent: rowsSentByInput[input])
    }

    /// A first send the client gave back unsent (a stop).
    mutating func noteWithdrawn(_ row: RunRow) {
        guard row.attemptsThisRun == 0, let input = row.readerIndex else { return }
        rowsSentByInput[input] -= 1
    }

    /// The run's `inputs` record: each input with the SHA-256 and size of what was read, and
    /// whether it was read to its end.
    var inputsRecord: [RunInput] {
        var records = finishedInputs
        for index in finishedInputs.count..<names.count {
            // The one the run was taking records of, as far as it took them (its SHA-256 is not
            // known: the thread may be blocked in a read); the rest not begun.
            let bytes = index == finishedInputs.count ? pump.bytesTakenOfCurrent : 0
            records.append(RunInput(path: names[index], sha256: "", bytes: bytes, complete: false))
        }
        return records
    }

    /// Owed rows of other shards passed over so far: all of them once every owed row was taken
    /// up or counted (`owedNotTakenUp`).
    var owedOfOtherShards: Int { owed.ofOtherShards }

    /// Owed rows of this run it did not take up (it stopped first): the next run's.
    mutating func owedNotTakenUp(writer: RunJournalWriter) throws(JournalError) -> Int {
        try owed.remaining(in: writer.journal)
    }

    /// The inputs not read to their end: the ones a rerun must read again.
    var unfinishedInputs: [String] { Array(names[finishedInputs.count...]) }
}
