import BotsiBasics
import BotsiInput
import BotsiJournal
import BotsiTestSupport
import Foundation
import Synchronization
import Testing

@testable import BotsiRestore

/// The input thread's contract with the run: every input's records in order, each input closed by
/// its end (or the damage that stopped it), the opening's verdict, the bytes behind what the run
/// took, and a wake-up only when the run waits for one.
@Suite struct InputPumpTests {
    static let header = "profileId,originalTransactionId\n"

    private func rows(_ range: Range<Int>) -> String {
        range.map { "profile-\($0 + 100_000),\(2_000_000_000_000_000 + $0)\n" }.joined()
    }

    private func started(_ paths: [String], format: InputFormat? = nil) -> InputPump {
        let opened = DispatchSemaphore(value: 0)
        let pump = InputPump(paths: paths, format: format, options: InputOptions()) { opened.signal() }
        _ = opened.wait(timeout: .now() + 30)
        return pump
    }

    /// Whether this process holds a descriptor open on the file at `path` (procfs).
    private func isOpen(_ path: String) -> Bool {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.contains {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == real
        }
    }

    /// Whether the file at `path` is closed within 10 s.
    private func closes(_ path: String) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while isOpen(path) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        return !isOpen(path)
    }

    /// The next `count` events, taken as they arrive (30 s at most): the run's side, at its pace.
    private func take(_ count: Int, from pump: InputPump) -> [InputEvent] {
        var events: [InputEvent] = []
        let deadline = Date().addingTimeInterval(30)
        while events.count < count && Date() < deadline {
            let taken = pump.take(limit: count - events.count)
            events += taken
            if taken.isEmpty { Thread.sleep(forTimeInterval: 0.002) }
        }
        return events
    }

    /// Every event, taken `limit` at a time until the pump is done (30 s at most).
    private func drain(_ pump: InputPump, limit: Int = 1_000) -> [InputEvent] {
        var events: [InputEvent] = []
        let deadline = Date().addingTimeInterval(30)
        while !pump.isDone && Date() < deadline {
            let taken = pump.take(limit: limit)
            events += taken
            if taken.isEmpty { Thread.sleep(forTimeInterval: 0.002) }
        }
        return events
    }

    @Test func eachInputsRecordsComeInOrderAndItsEndAfterThem() throws {
        let workspace = Workspace()
        let first = Self.header + rows(0..<3)
        // Blank lines after the last record: read, and counted, though no record follows them.
        let second = Self.header + rows(3..<5) + "\n\n"
        let a = workspace.write("a.csv", first)
        let b = workspace.write("b.csv", second)
        let pump = started([a, b])
        guard case .opened(let names, let total) = try #require(pump.opening) else {
            Issue.record("opening failed")
            return
        }
        #expect(names == [a, b])
        #expect(total == Int64(first.utf8.count + second.utf8.count))
        let events = drain(pump, limit: 2)
        #expect(events.count == 7)
        let shape = events.map { event -> String in
            switch event {
            case .record(_, let input, _): "r\(input)"
            case .finished(let input, _, _): "f\(input)"
            case .damaged(let input, _): "d\(input)"
            }
        }
        #expect(shape == ["r0", "r0", "r0", "f0", "r1", "r1", "f1"])
        guard case .finished(_, let ended, let noRows) = events[3] else { return }
        #expect(
            ended
                == RunInput(
                    path: a, sha256: SHA256.hex(of: Array(first.utf8)), bytes: Int64(first.utf8.count), complete: true))
        #expect(noRows == nil)
        if case .record(let record, _, let consumed) = events[4] {
            #expect(record.line == 2)
            #expect(consumed <= Int64(second.utf8.count))
        }
        // Every byte of both inputs was taken, each input's once.
        #expect(pump.bytesRead == Int64(first.utf8.count + second.utf8.count))
        #expect(pump.bytesTakenOfCurrent == 0)
        #expect(pump.take(limit: 10).isEmpty)
    }

    /// Part of the second input taken: the first counts whole, the second as far as its records taken.
    @Test func theBytesTakenOfTheCurrentInputAddToThoseOfTheInputsTakenToTheirEnd() throws {
        let workspace = Workspace()
        let first = Self.header + rows(0..<10)
        let second = Self.header + rows(10..<20_000)
        let pump = started([workspace.write("a.csv", first), workspace.write("b.csv", second)])
        // The first input's 10 records and its end, then 100 records of the second.
        #expect(take(11 + 100, from: pump).count == 111)
        let ofSecond = Int64((Self.header + rows(10..<110)).utf8.count)
        #expect(pump.bytesTakenOfCurrent == ofSecond)
        #expect(pump.bytesRead == Int64(first.utf8.count) + ofSecond)
        #expect(!pump.isDone, "records are still buffered")
        pump.cancel()
    }

    /// A compressed input's end counts every raw byte of it, the gzip trailer after the last
    /// record's bytes included: progress ends at 100%, and `runs.inputs` records the file's size.
    @Test func aCompressedInputCountsEveryRawByteOnceTakenToItsEnd() throws {
        let workspace = Workspace()
        let plain = workspace.write("in.csv", Self.header + rows(0..<2_000))
        let gzip = try runProgram("/usr/bin/env", ["gzip", "-c", "-n", plain]).requireSuccess().outputBytes
        let pump = started([workspace.write("in.csv.gz", Array(gzip))])
        let events = drain(pump)
        guard case .finished(0, let ended, _) = try #require(events.last) else { return }
        #expect(ended.bytes == Int64(gzip.count))
        #expect(pump.bytesRead == Int64(gzip.count))
    }

    @Test func anInputWithoutRowsSaysWhyAtItsEnd() throws {
        let workspace = Workspace()
        let pump = started([workspace.write("a.csv", Self.header)])
        let events = drain(pump)
        guard case .finished(0, _, let noRows) = try #require(events.last) else {
            Issue.record("\(events)")
            return
        }
        #expect(noRows == .headerOnly)
    }

    /// The exit status follows the cause: a missing file 66, a name that tells no format 64, a
    /// file that is no table 65. No event follows, and the inputs opened before are closed.
    @Test(
        arguments: [
            ("missing.csv", nil, ExitCode.noInput), ("dir.csv", nil, ExitCode.noInput),
            ("data.bin", "profileId,originalTransactionId\n", ExitCode.usage),
            ("sheet.csv", "PK\u{3}\u{4}" + String(repeating: "\u{0}", count: 64), ExitCode.dataError),
        ] as [(String, String?, Int32)])
    func anInputThatCannotBeOpenedFailsTheOpeningWithItsExitStatus(name: String, content: String?, code: Int32) throws {
        let workspace = Workspace()
        let good = workspace.write("good.csv", Self.header + rows(0..<2))
        let path = workspace.path + "/" + name
        if name == "dir.csv" {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } else if let content {
            _ = workspace.write(name, content)
        }
        let pump = started([good, path])
        guard case .failed(let error) = try #require(pump.opening) else {
            Issue.record("opened \(name)")
            return
        }
        #expect(error.exitCode == code, "\(error.message)")
        #expect(pump.isDone && pump.take(limit: 10).isEmpty)
        #expect(closes(good), "the input opened before it is closed")
        // A run that waits for events from a pump that will hand none over is told at once.
        let woken = Atomic<Int>(0)
        pump.attach { woken.add(1, ordering: .relaxed) }
        #expect(woken.load(ordering: .relaxed) == 1)
    }

    /// Damage part-way ends the events with the input that held it: what came before was handed over.
    @Test func damagePartWayIsTheLastEvent() throws {
        let workspace = Workspace()
        let plain = workspace.write("big.csv", Self.header + rows(0..<200_000))
        let gzip = try runProgram("/usr/bin/env", ["gzip", "-c", "-n", plain]).requireSuccess().outputBytes
        let cut = workspace.write("big.csv.gz", Array(gzip.prefix(gzip.count * 7 / 10)))
        let pump = started([cut])
        guard case .opened = try #require(pump.opening) else {
            Issue.record("the damage was found at opening")
            return
        }
        let events = drain(pump, limit: 4_096)
        guard case .damaged(0, let message) = try #require(events.last) else {
            Issue.record("no damage reported")
            return
        }
        #expect(message.contains("big.csv.gz"))
        #expect(events.dropLast().allSatisfy { if case .record = $0 { true } else { false } })
        #expect(events.count > 1_000)
    }

    /// The run is woken when it found the buffer empty and an event arrives, and when reading
    /// ends; never for events it has not waited for.
    @Test func theRunIsWokenOnlyWhenItWaits() throws {
        let workspace = Workspace()
        let fifo = workspace.path + "/in.csv"
        #expect(mkfifo(fifo, 0o600) == 0)
        let opened = DispatchSemaphore(value: 0)
        let pump = InputPump(paths: [fifo], format: nil, options: InputOptions()) { opened.signal() }
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        writer.write(Data((Self.header + rows(0..<1)).utf8))
        #expect(opened.wait(timeout: .now() + 30) == .success)
        guard case .opened(_, let total) = try #require(pump.opening) else { return }
        #expect(total == nil, "a stream's size is not known")
        let wakes = Atomic<Int>(0)
        pump.attach { wakes.add(1, ordering: .relaxed) }
        #expect(take(1, from: pump).count == 1)
        let afterFirst = wakes.load(ordering: .relaxed)
        #expect(afterFirst <= 1, "one wake for the first record at most")
        // The run has taken what there was without finding the buffer empty: a row that arrives now
        // does not wake it, since it did not wait.
        writer.write(Data(rows(1..<2).utf8))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(wakes.load(ordering: .relaxed) == afterFirst)
        #expect(take(1, from: pump).count == 1)
        // Asking for nothing (no room) is not waiting: a row that arrives now wakes no one.
        #expect(pump.take(limit: 0).isEmpty)
        writer.write(Data(rows(2..<3).utf8))
        Thread.sleep(forTimeInterval: 0.3)
        #expect(wakes.load(ordering: .relaxed) == afterFirst)
        #expect(take(1, from: pump).count == 1)
        // Now it finds the buffer empty and waits: the next row wakes it, once.
        #expect(pump.take(limit: 10).isEmpty)
        writer.write(Data(rows(3..<4).utf8))
        let deadline = Date().addingTimeInterval(30)
        while wakes.load(ordering: .relaxed) == afterFirst && Date() < deadline { Thread.sleep(forTimeInterval: 0.002) }
        #expect(wakes.load(ordering: .relaxed) == afterFirst + 1)
        #expect(take(1, from: pump).count == 1)
        // The end of the stream wakes it too, whether it waits or not.
        writer.closeFile()
        while !pump.isDone && Date() < deadline { _ = pump.take(limit: 10); Thread.sleep(forTimeInterval: 0.002) }
        #expect(pump.isDone)
        #expect(wakes.load(ordering: .relaxed) >= afterFirst + 2)
    }

    /// A cancelled pump hands nothing more over and wakes no one.
    @Test func aCancelledPumpWakesNoOne() throws {
        let workspace = Workspace()
        let pump = started([workspace.write("big.csv", Self.header + rows(0..<20_000))])
        let wakes = Atomic<Int>(0)
        pump.attach { wakes.add(1, ordering: .relaxed) }
        pump.cancel()
        let before = wakes.load(ordering: .relaxed)
        let events = drain(pump, limit: 4_096)
        #expect(events.count <= InputPump.capacity, "nothing handed over past the buffer")
        #expect(pump.isDone)
        #expect(wakes.load(ordering: .relaxed) == before)
    }

    /// A run that stops reading stops the thread even while the buffer is full and nothing more
    /// is taken: the input is closed, not held open for the rest of the process.
    @Test func aCancelledPumpClosesItsInputThoughItsBufferIsFull() throws {
        let workspace = Workspace()
        let path = workspace.write("big.csv", Self.header + rows(0..<20_000))
        let pump = started([path])
        // The thread fills its buffer (4,096 of the 20,000 records) and waits for room.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(isOpen(path), "the input is open while the thread waits for room")
        pump.cancel()
        #expect(closes(path))
    }
}
