import BotsiBasics
import BotsiInput
import BotsiJournal
import Dispatch
import Foundation
import Synchronization

/// What the input thread hands the run, in input order.
enum InputEvent: Sendable, Equatable {
    /// A record of input `input` (an index into the run's inputs), and the input's raw bytes
    /// consumed once it was read.
    case record(InputRecord, input: Int, consumed: Int64)
    /// Input `input` was read to its end: its record for `runs.inputs`, and why it held no row.
    case finished(input: Int, RunInput, noRows: EmptyInput?)
    /// Input `input` cannot be read further: the run stops.
    case damaged(input: Int, message: String)
}

/// Opens and reads a run's inputs on a thread of its own, so that no blocking open or read (stdin
/// that has not arrived yet, a line a gigabyte long, a slow network file system) ever runs on the
/// run's executor: a stop is honoured at once, whatever the reader is doing. The readers are made,
/// read and closed on that thread only. Records reach the run through a bounded buffer, in input
/// order; the run takes them as it has room, and is woken when the buffer stops being empty.
final class InputPump: Sendable {
    /// Events buffered at most: enough for a few slices, bounded so memory stays flat.
    static let capacity = 4096

    /// How opening the inputs went: their names and sizes, or the error the run exits with.
    enum Opening: Sendable {
        case opened(names: [String], totalBytes: Int64?)
        case failed(RunSetupError)
    }

    private struct Shared {
        var opening: Opening?
        /// Taken slots are nil: `take` moves events out rather than copying them (a copy retained
        /// every string of every record, and the buffer released them again). Each with the raw
        /// bytes of its input behind it, for progress.
        var events: [(event: InputEvent, bytes: Int64)?] = []
        var head = 0
        /// The reading thread has nothing more to hand over (every input read, one damaged, or cancelled).
        var exhausted = false
        var cancelled = false
        var onArrival: (@Sendable () -> Void)?
        /// Raw bytes behind the events the run took, of the inputs it took to their end and of the
        /// one it is taking: what progress shows as read, and how far `runs.inputs` says a stopped
        /// input was read. The thread reads ahead of the run by a buffer of records and a window of
        /// bytes, which on a small file was nearly half of it ("45% read" at 1,120 rows of 20,000).
        var bytesOfTakenFinished: Int64 = 0
        var bytesOfTakenCurrent: Int64 = 0
        /// The thread waits for the run to take events from a full buffer.
        var waitingForRoom = false
        /// The run found the buffer empty and waits to be told of the next event: only then does
        /// the thread hop onto the run's queue (a hop per record would cost more than the record).
        var runWaiting = true

        var buffered: Int { events.count - head }
    }

    private let shared = Mutex(Shared())
    /// Wakes the input thread when the buffer has room again, or when the run cancels reading.
    private let room = DispatchSemaphore(value: 0)

    /// Starts the thread, which opens every input in order (reading each one's header) and then
    /// reads them. `onOpened` is called on that thread once opening ends, either way.
    init(paths: [String], format: InputFormat?, options: InputOptions, onOpened: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            guard let readers = open(paths: paths, format: format, options: options) else {
                onOpened()
                return
            }
            onOpened()
            read(readers)
        }
        thread.name = "botsi-restore-input"
        thread.start()
    }

    /// How opening went; nil while the thread is still opening.
    var opening: Opening? { shared.withLock { $0.opening } }

    // MARK: The run's side (its executor)

    /// Called when the buffer receives an event after the run found it empty (on the input thread).
    func attach(onArrival: @escaping @Sendable () -> Void) {
        let waiting = shared.withLock { shared in
            shared.onArrival = onArrival
            return shared.buffered > 0 || shared.exhausted
        }
        if waiting { onArrival() }
    }

    /// Up to `limit` events, oldest first; empty when none is buffered now, and then the run is
    /// told (`onArrival`) when the next one is.
    func take(limit: Int) -> [InputEvent] {
        guard limit > 0 else { return [] }
        let taken = shared.withLock { shared -> (events: [InputEvent], wake: Bool) in
            let count = min(limit, shared.buffered)
            if count == 0 && !shared.exhausted { shared.runWaiting = true }
            var slice: [InputEvent] = []
            slice.reserveCapacity(count)
            for index in shared.head..<(shared.head + count) {
                guard let (event, bytes) = shared.events[index].take() else { continue }
                slice.append(event)
                if case .finished = event {
                    shared.bytesOfTakenFinished += bytes
                    shared.bytesOfTakenCurrent = 0
                } else {
                    shared.bytesOfTakenCurrent = bytes
                }
            }
            shared.head += count
            if shared.head == shared.events.count {
                shared.events.removeAll(keepingCapacity: true)
                shared.head = 0
            } else if shared.head > Self.capacity {
                shared.events.removeFirst(shared.head)
                shared.head = 0
            }
            // Woken only once the buffer is half empty, the thread reads a half buffer at a time
            // instead of a record or two per take (a context switch each).
            let wake = shared.waitingForRoom && shared.buffered <= Self.capacity / 2
            if wake { shared.waitingForRoom = false }
            return (slice, wake)
        }
        if taken.wake { room.signal() }
        return taken.events
    }

    /// Every event was taken and the thread has nothing more to hand over.
    var isDone: Bool { shared.withLock { $0.exhausted && $0.buffered == 0 } }

    /// Raw bytes behind the events the run took, for progress.
    var bytesRead: Int64 { shared.withLock { $0.bytesOfTakenFinished + $0.bytesOfTakenCurrent } }

    /// Raw bytes behind the events the run took of the input it has not taken to its end.
    var bytesTakenOfCurrent: Int64 { shared.withLock { $0.bytesOfTakenCurrent } }

    /// Asks the thread to stop reading: nothing more is handed over. A thread blocked in a read
    /// stops when it returns; the run does not wait for it.
    func cancel() {
        shared.withLock { shared in
            shared.cancelled = true
            shared.onArrival = nil
        }
        room.signal()
    }

    // MARK: The input thread

    private func open(paths: [String], format: InputFormat?, options: InputOptions) -> [InputReader]? {
        var readers: [InputReader] = []
        var totalBytes: Int64? = 0
        for path in paths {
            do {
                let reader = try InputReader(path: path, format: format, options: options)
                readers.append(reader)
                totalBytes = totalBytes.flatMap { sum in reader.totalBytes.map { sum + $0 } }
            } catch {
                for reader in readers { reader.close() }
                let code: Int32
                switch error.kind {
                case .fileMissing, .unreadable: code = ExitCode.noInput
                case .unknownFormat: code = ExitCode.usage
                case .notTabular, .missingColumns, .damaged: code = ExitCode.dataError
                }
                publishOpening(.failed(RunSetupError(exitCode: code, message: error.message)))
                return nil
            }
        }
        publishOpening(.opened(names: readers.map(\.displayName), totalBytes: totalBytes))
        return readers
    }

    private func publishOpening(_ opening: Opening) {
        shared.withLock { shared in
            shared.opening = opening
            if case .failed = opening { shared.exhausted = true }
        }
    }

    private func read(_ readers: [InputReader]) {
        defer {
            for reader in readers { reader.close() }
            let notify = shared.withLock { shared in
                shared.exhausted = true
                return shared.onArrival
            }
            notify?()
        }
        for (index, reader) in readers.enumerated() {
            while true {
                let event: InputEvent
                let finished: Bool
                do {
                    if let record = try reader.next() {
                        event = .record(record, input: index, consumed: reader.bytesConsumed)
                        finished = false
                    } else {
                        event = .finished(
                            input: index,
                            RunInput(
                                path: reader.displayName, sha256: reader.sha256Hex, bytes: reader.bytesRead,
                                complete: true),
                            noRows: reader.noRows)
                        finished = true
                    }
                } catch {
                    _ = hand(.damaged(input: index, message: error.message), consumed: reader.bytesConsumed)
                    return
                }
                let consumed = finished ? reader.bytesRead : reader.bytesConsumed
                guard hand(event, consumed: consumed) else { return }
                if finished { break }
            }
            reader.close()
        }
    }

    /// Waits for room, then buffers `event`; false once the run cancelled reading.
    private func hand(_ event: InputEvent, consumed: Int64) -> Bool {
        while shared.withLock({ shared in
            let full = !shared.cancelled && shared.buffered >= Self.capacity
            if full { shared.waitingForRoom = true }
            return full
        }) {
            room.wait()
        }
        let (accepted, notify) = shared.withLock { shared -> (Bool, (@Sendable () -> Void)?) in
            guard !shared.cancelled else { return (false, nil) }
            let wasEmpty = shared.buffered == 0
            shared.events.append((event, consumed))
            let notify = wasEmpty && shared.runWaiting
            if notify { shared.runWaiting = false }
            return (true, notify ? shared.onArrival : nil)
        }
        notify?()
        return accepted
    }
}
