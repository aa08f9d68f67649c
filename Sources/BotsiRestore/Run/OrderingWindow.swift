/// The rows a run has read but not finished, and which of them may be sent now.
///
/// Rows that share a `profileId` or an `originalTransactionId` must go out one at a time and in
/// input order, because what a restore does depends on the restores before it. Each key keeps a
/// FIFO of the rows waiting on it; a row is ready when it heads the queue of both its keys. A row
/// only ever waits for rows read before it, so no cycle — and no deadlock — can form.
///
/// Not Sendable: it lives on the runner's queue.
struct OrderingWindow<Payload> {
    struct Entry {
        let sequence: Int64
        let profileId: String
        let transactionId: String
        var payload: Payload
        var isQueuedReady = false
        var isBusy = false
    }

    private(set) var entries: [Int64: Entry] = [:]
    private var profileQueues: [String: KeyQueue] = [:]
    private var transactionQueues: [String: KeyQueue] = [:]
    private var ready: [Int64] = []
    private var readyHead = 0
    /// Failed rows whose retry wait is over, taken before `ready`: behind a read-ahead of a thousand
    /// rows at 50/s a retry went out 20 s after its backoff, and a run that ended on its time
    /// window retried nothing (an operator review: "0 retries", 192 rows left with a 500).
    private var again: [Int64] = []
    private var againHead = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var readyCount: Int { ready.count - readyHead + again.count - againHead }

    /// Adds a row read from the input. It becomes ready at once if nothing before it shares a key
    /// (it heads both its queues). Every row passes here and through `takeReady` and `remove`, so
    /// each of them finds a key's queue and an entry once: hashing the ids' strings and copying
    /// entries a second time was a visible share of a run's own work per row.
    mutating func add(sequence: Int64, profileId: String, transactionId: String, payload: Payload) {
        let headsProfile = profileQueues[profileId, default: KeyQueue()].append(sequence)
        let headsTransaction = transactionQueues[transactionId, default: KeyQueue()].append(sequence)
        let isReady = headsProfile && headsTransaction
        entries[sequence] = Entry(
            sequence: sequence, profileId: profileId, transactionId: transactionId, payload: payload,
            isQueuedReady: isReady)
        if isReady { ready.append(sequence) }
    }

    /// The next row that may be sent, marked busy (in flight or waiting to retry) until released.
    mutating func takeReady() -> Int64? {
        while againHead < again.count {
            let sequence = again[againHead]
            againHead += 1
            if againHead == again.count {
                again.removeAll(keepingCapacity: true)
                againHead = 0
            }
            guard let index = entries.index(forKey: sequence), entries.values[index].isQueuedReady else { continue }
            entries.values[index].isQueuedReady = false
            entries.values[index].isBusy = true
            return sequence
        }
        while readyHead < ready.count {
            let sequence = ready[readyHead]
            readyHead += 1
            if readyHead > 1024 && readyHead * 2 > ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            guard let index = entries.index(forKey: sequence) else { continue }
            entries.values[index].isQueuedReady = false
            entries.values[index].isBusy = true
            return sequence
        }
        return nil
    }

    /// A busy row may be sent again (its retry wait is over): `ahead`, before every row not yet
    /// sent; else behind them. It still heads its keys.
    mutating func makeReadyAgain(_ sequence: Int64, ahead: Bool = false) {
        guard let index = entries.index(forKey: sequence), entries.values[index].isBusy else { return }
        entries.values[index].isBusy = false
        guard ahead else { return enqueueIfReady(sequence) }
        entries.values[index].isQueuedReady = true
        again.append(sequence)
    }

    /// A row taken but not sent goes back to the front of the ready rows: next to be taken.
    mutating func putBack(_ sequence: Int64) {
        guard let index = entries.index(forKey: sequence), entries.values[index].isBusy else { return }
        entries.values[index].isBusy = false
        entries.values[index].isQueuedReady = true
        if readyHead > 0 {
            readyHead -= 1
            ready[readyHead] = sequence
        } else {
            ready.insert(sequence, at: 0)
        }
    }

    /// A row's payload, without copying the rest of its entry (its two ids).
    func payload(of sequence: Int64) -> Payload? {
        guard let index = entries.index(forKey: sequence) else { return nil }
        return entries.values[index].payload
    }

    subscript(sequence: Int64) -> Entry? {
        get { entries[sequence] }
        set { entries[sequence] = newValue }
    }

    /// The row is done for this run: the next rows on its keys may go.
    @discardableResult
    mutating func remove(_ sequence: Int64) -> Entry? {
        guard let entry = entries.removeValue(forKey: sequence) else { return nil }
        let nextByProfile = Self.pop(sequence, key: entry.profileId, from: &profileQueues)
        let nextByTransaction = Self.pop(sequence, key: entry.transactionId, from: &transactionQueues)
        if let nextByProfile { enqueueIfReady(nextByProfile) }
        if let nextByTransaction, nextByTransaction != nextByProfile { enqueueIfReady(nextByTransaction) }
        return entry
    }

    private mutating func enqueueIfReady(_ sequence: Int64) {
        guard var entry = entries[sequence], !entry.isQueuedReady, !entry.isBusy,
            profileQueues[entry.profileId]?.first == sequence,
            transactionQueues[entry.transactionId]?.first == sequence
        else { return }
        entry.isQueuedReady = true
        entries[sequence] = entry
        ready.append(sequence)
    }

    /// Removes `sequence` (the head) from the key's queue and returns the new head.
    private static func pop(_ sequence: Int64, key: String, from queues: inout [String: KeyQueue]) -> Int64? {
        guard let index = queues.index(forKey: key) else { return nil }
        queues.values[index].remove(sequence)
        guard let head = queues.values[index].first else {
            queues.remove(at: index)
            return nil
        }
        return head
    }
}

/// A FIFO of sequence numbers; almost always of length one, so its head is kept apart and the
/// rest (an array, allocated only when a key has rows waiting behind its head) seldom exists.
struct KeyQueue {
    private(set) var first: Int64?
    private var rest: [Int64] = []
    var isEmpty: Bool { first == nil }

    /// Appends `sequence`; true when it is the head (the queue was empty).
    mutating func append(_ sequence: Int64) -> Bool {
        guard first != nil else {
            first = sequence
            return true
        }
        rest.append(sequence)
        return false
    }

    mutating func remove(_ sequence: Int64) {
        if first == sequence {
            first = rest.isEmpty ? nil : rest.removeFirst()
        } else if let index = rest.firstIndex(of: sequence) {
            rest.remove(at: index)
        }
    }
}
