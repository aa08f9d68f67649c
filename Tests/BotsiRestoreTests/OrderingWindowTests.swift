import BotsiBasics
import Testing

@testable import BotsiRestore

@Suite struct OrderingWindowTests {
    @Test func independentRowsAreAllReadyAtOnce() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 1)
        #expect(window.takeReady() == nil)
    }

    @Test func rowsSharingAProfileGoOneAtATimeInInputOrder() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "a", transactionId: "2", payload: 0)
        window.add(sequence: 2, profileId: "b", transactionId: "3", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 2)
        #expect(window.takeReady() == nil)
        window.remove(0)
        #expect(window.takeReady() == 1)
    }

    @Test func rowsSharingATransactionGoOneAtATimeInInputOrder() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "1", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
        window.remove(0)
        #expect(window.takeReady() == 1)
    }

    @Test func aRowWaitsForBothOfItsKeys() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "b", transactionId: "2", payload: 0)
        window.add(sequence: 2, profileId: "a", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 1)
        window.remove(0)
        #expect(window.takeReady() == nil, "row 2 still waits for row 1 on transaction 2")
        window.remove(1)
        #expect(window.takeReady() == 2)
    }

    /// A failed row's retry whose wait is over goes before rows read but not yet sent (behind a read-ahead of a
    /// thousand rows at 50/s it went out 20 s late), and retries go in the order their waits ended.
    @Test func aRowReadyAgainGoesBeforeRowsNotYetSent() {
        var window = OrderingWindow<Int>()
        for sequence in Int64(0)..<5 {
            window.add(sequence: sequence, profileId: "p\(sequence)", transactionId: "t\(sequence)", payload: 0)
        }
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 1)
        #expect(window.readyCount == 3)
        window.makeReadyAgain(1, ahead: true)
        window.makeReadyAgain(0, ahead: true)
        #expect(window.readyCount == 5)
        #expect(window.takeReady() == 1)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == 2)
        window.makeReadyAgain(2, ahead: true)
        window.remove(2)
        #expect(window.takeReady() == 3, "a row gone while it waited is not taken")
        #expect(window.takeReady() == 4)
        #expect(window.takeReady() == nil)
    }

    @Test func aRowWaitingToRetryKeepsItsPlaceAtTheHead() {
        var window = OrderingWindow<Int>()
        window.add(sequence: 0, profileId: "a", transactionId: "1", payload: 0)
        window.add(sequence: 1, profileId: "a", transactionId: "2", payload: 0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
        window.makeReadyAgain(0)
        #expect(window.takeReady() == 0)
        #expect(window.takeReady() == nil)
    }

    /// Seeded random adds, takes, retries, put-backs and removals on keys that rows share often,
    /// checked step by step against `ReferenceWindow` (the window as first written, with a lookup
    /// for each question): the same row taken at every step, the same rows left.
    @Test(arguments: 1...8)
    func behavesAsTheReferenceUnderRandomOperations(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var window = OrderingWindow<Int>()
        var reference = ReferenceWindow()
        var next: Int64 = 0
        var taken: [Int64] = []
        var waiting: [Int64] = []
        for step in 0..<4_000 {
            switch random.next() % 6 {
            case 0, 1:
                let profile = "p\(random.next() % 12)"
                let transaction = "t\(random.next() % 15)"
                window.add(sequence: next, profileId: profile, transactionId: transaction, payload: Int(next))
                reference.add(sequence: next, profileId: profile, transactionId: transaction)
                next += 1
            case 2:
                let got = window.takeReady()
                #expect(got == reference.takeReady(), "seed \(seed), step \(step)")
                if let got { taken.append(got) }
            case 3 where !taken.isEmpty:
                let sequence = taken.remove(at: Int(random.next() % UInt64(taken.count)))
                #expect(window.remove(sequence)?.sequence == reference.remove(sequence), "seed \(seed), step \(step)")
            case 4 where !taken.isEmpty:
                // Taken and not sent: back to the front; or sent and waiting out a retry.
                let sequence = taken.removeLast()
                if random.next() % 2 == 0 {
                    window.putBack(sequence)
                    reference.putBack(sequence)
                } else {
                    waiting.append(sequence)
                }
            case 5 where !waiting.isEmpty:
                let sequence = waiting.removeFirst()
                let ahead = random.next() % 2 == 0
                window.makeReadyAgain(sequence, ahead: ahead)
                reference.makeReadyAgain(sequence, ahead: ahead)
            default:
                break
            }
            #expect(
                window.count == reference.count && window.readyCount == reference.readyCount,
                "seed \(seed), step \(step)")
        }
        while let got = reference.takeReady() {
            #expect(window.takeReady() == got, "seed \(seed), draining")
        }
        #expect(window.takeReady() == nil)
    }

    /// The ready list drops the rows taken from its front once more than 1,024 were: a row put
    /// back right then is still the next one taken, not the last.
    @Test func aRowPutBackAsTheReadyListIsCompactedIsStillTakenNext() {
        var window = OrderingWindow<Int>()
        for sequence in Int64(0)..<1_100 {
            window.add(sequence: sequence, profileId: "p\(sequence)", transactionId: "t\(sequence)", payload: 0)
        }
        let taken = (0..<1_025).compactMap { _ in window.takeReady() }
        #expect(taken == Array(0..<1_025))
        window.putBack(1_024)
        #expect(window.takeReady() == 1_024)
        #expect(window.takeReady() == 1_025)
    }

    @Test func manyRowsDrainCompletelyWithoutDeadlock() {
        var window = OrderingWindow<Int>()
        var rng = SplitMix64(seed: 3)
        for sequence in 0..<2000 {
            window.add(
                sequence: Int64(sequence), profileId: "p\(rng.next() % 50)", transactionId: "t\(rng.next() % 70)",
                payload: sequence)
        }
        var finished = 0
        var lastPerProfile: [String: Int64] = [:]
        while let sequence = window.takeReady() {
            let entry = window[sequence]!
            if let last = lastPerProfile[entry.profileId] { #expect(last < sequence) }
            lastPerProfile[entry.profileId] = sequence
            window.remove(sequence)
            finished += 1
        }
        #expect(finished == 2000)
        #expect(window.isEmpty)
    }
}

/// The ordering window as it was first written (a lookup per question, the queues as arrays): the
/// reference its faster form must agree with, step for step.
private struct ReferenceWindow {
    struct Entry {
        let profileId: String
        let transactionId: String
        var isQueuedReady = false
        var isBusy = false
    }

    var entries: [Int64: Entry] = [:]
    var profileQueues: [String: [Int64]] = [:]
    var transactionQueues: [String: [Int64]] = [:]
    var ready: [Int64] = []
    var readyHead = 0
    /// Retries whose wait is over: taken first, in the order they became ready.
    var again: [Int64] = []

    var count: Int { entries.count }
    var readyCount: Int { ready.count - readyHead + again.count }

    mutating func add(sequence: Int64, profileId: String, transactionId: String) {
        entries[sequence] = Entry(profileId: profileId, transactionId: transactionId)
        profileQueues[profileId, default: []].append(sequence)
        transactionQueues[transactionId, default: []].append(sequence)
        enqueueIfReady(sequence)
    }

    mutating func takeReady() -> Int64? {
        while !again.isEmpty {
            let sequence = again.removeFirst()
            guard var entry = entries[sequence] else { continue }
            entry.isQueuedReady = false
            entry.isBusy = true
            entries[sequence] = entry
            return sequence
        }
        while readyHead < ready.count {
            let sequence = ready[readyHead]
            readyHead += 1
            guard var entry = entries[sequence] else { continue }
            entry.isQueuedReady = false
            entry.isBusy = true
            entries[sequence] = entry
            return sequence
        }
        return nil
    }

    mutating func makeReadyAgain(_ sequence: Int64, ahead: Bool) {
        guard var entry = entries[sequence], entry.isBusy else { return }
        entry.isBusy = false
        entries[sequence] = entry
        guard ahead else { return enqueueIfReady(sequence) }
        entry.isQueuedReady = true
        entries[sequence] = entry
        again.append(sequence)
    }

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

    mutating func remove(_ sequence: Int64) -> Int64? {
        guard let entry = entries.removeValue(forKey: sequence) else { return nil }
        let nextByProfile = Self.pop(sequence, key: entry.profileId, from: &profileQueues)
        let nextByTransaction = Self.pop(sequence, key: entry.transactionId, from: &transactionQueues)
        if let nextByProfile { enqueueIfReady(nextByProfile) }
        if let nextByTransaction, nextByTransaction != nextByProfile { enqueueIfReady(nextByTransaction) }
        return sequence
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

    private static func pop(_ sequence: Int64, key: String, from queues: inout [String: [Int64]]) -> Int64? {
        guard var queue = queues[key] else { return nil }
        if queue.first == sequence {
            queue.removeFirst()
        } else if let index = queue.firstIndex(of: sequence) {
            queue.remove(at: index)
        }
        if queue.isEmpty {
            queues.removeValue(forKey: key)
            return nil
        }
        queues[key] = queue
        return queue.first
    }
}
