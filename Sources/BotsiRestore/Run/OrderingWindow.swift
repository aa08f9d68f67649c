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

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var readyCount: Int { ready.count - readyHead }

    /// Adds a row read from the input. It becomes ready at once if nothing before it shares a key.
    mutating func add(sequence: Int64, profileId: String, transactionId: String, payload: Payload) {
        entries[sequence] = Entry(
            sequence: sequence, profileId: profileId, transactionId: transactionId, payload: payload)
        profileQueues[profileId, default: KeyQueue()].append(sequence)
        transactionQueues[transactionId, default: KeyQueue()].append(sequence)
        enqueueIfReady(sequence)
    }

    /// The next row that may be sent, marked busy (in flight or waiting to retry) until released.
    mutating func takeReady() -> Int64? {
        while readyHead < ready.count {
            let sequence = ready[readyHead]
            readyHead += 1
            if readyHead > 1024 && readyHead * 2 > ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            guard var entry = entries[sequence] else { continue }
            entry.isQueuedReady = false
            entry.isBusy = true
            entries[sequence] = entry
            return sequence
        }
        return nil
    }

    /// A busy row may be sent again (its retry wait is over). It still heads its keys.
    mutating func makeReadyAgain(_ sequence: Int64) {
        guard var entry = entries[sequence] else { return }
        entry.isBusy = false
        entries[sequence] = entry
        enqueueIfReady(sequence)
    }

    /// A row taken but not sent goes back to the front of the ready rows: next to be taken.
    mutating func putBack(_ sequence: Int64) {
        guard var entry = entries[sequence], entry.isBusy else { return }
        entry.isBusy = false
        entry.isQueuedReady = true
        entries[sequence] = entry
        if readyHead > 0 {
            readyHead -= 1
            ready[readyHead] = sequence
        } else {
            ready.insert(sequence, at: 0)
        }
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
        guard var queue = queues[key] else { return nil }
        queue.remove(sequence)
        if queue.isEmpty {
            queues.removeValue(forKey: key)
            return nil
        }
        queues[key] = queue
        return queue.first
    }
}

/// A FIFO of sequence numbers; almost always of length one, so an array suffices.
struct KeyQueue {
    private var items: [Int64] = []
    var first: Int64? { items.first }
    var isEmpty: Bool { items.isEmpty }
    mutating func append(_ sequence: Int64) { items.append(sequence) }
    mutating func remove(_ sequence: Int64) {
        if items.first == sequence {
            items.removeFirst()
        } else if let index = items.firstIndex(of: sequence) {
            items.remove(at: index)
        }
    }
}
