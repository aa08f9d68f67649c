import BotsiAPI
import BotsiFiles
import BotsiJournal
import Dispatch
import Foundation
import Synchronization

/// Runs one job: sets up its parts — the inputs (opened on their own thread), the journal with
/// the run's record, the client — and hands them, whole, to an `ActiveRun`, the isolated run that
/// reads, sends and journals until it is done. A stop (SIGINT/SIGTERM) may come at any moment:
/// while the inputs open it ends the run at once with nothing recorded; once the journal holds the
/// run's record it is carried into the run, which then sends nothing and records itself stopped.
public final class Runner: Sendable {
    /// Setting up, then handed over to the run; a stop during setup waits here for the run.
    private enum Stage {
        case settingUp(stop: Int32?)
        case running(ActiveRun)
    }

    private let options: RunOptions
    private let apiKey: String
    private let toolVersion: String
    private let progressInterval: Double
    private let onProgress: (@Sendable (RunProgress) -> Void)?
    private let onWouldSend: (@Sendable (WouldSend) -> Void)?
    private let startedAt = Date()
    private let stage = Mutex(Stage.settingUp(stop: nil))
    /// Wakes `run()` while it waits for the inputs to open: they opened, or a stop came.
    private let setupEvent = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let result = Mutex<RunSummary?>(nil)

    public init(
        options: RunOptions, apiKey: String, toolVersion: String, progressInterval: Double = 1,
        onProgress: (@Sendable (RunProgress) -> Void)? = nil, onWouldSend: (@Sendable (WouldSend) -> Void)? = nil
    ) {
        self.onWouldSend = onWouldSend
        self.options = options
        self.apiKey = apiKey
        self.toolVersion = toolVersion
        self.progressInterval = progressInterval
        self.onProgress = onProgress
    }

    /// Asks the run to stop dispatching, let in-flight requests end and journal (SIGINT/SIGTERM).
    /// Safe from any thread, at any moment.
    public func requestStop(signal: Int32) {
        let loop = stage.withLock { stage -> ActiveRun? in
            switch stage {
            case .settingUp(let stop):
                stage = .settingUp(stop: stop ?? signal)
                return nil
            case .running(let loop):
                return loop
            }
        }
        if let loop {
            loop.enter { $0.requestStop(signal: signal) }
        } else {
            setupEvent.signal()
        }
    }

    /// Runs to the end and returns what happened. Blocks the calling thread.
    public func run() throws(RunSetupError) -> RunSummary {
        try RunPreflight.checkClient(options, apiKey: apiKey, toolVersion: toolVersion)
        let pump = RunSetup.openInputs(options) { [setupEvent] in setupEvent.signal() }
        // The inputs open on their own thread (reading stdin's header may wait for a writer): a stop
        // meanwhile ends the run before it touched the journal.
        var names: [String] = []
        var totalBytes: Int64?
        while true {
            if let signal = pendingStop, pump.opening == nil {
                pump.cancel()
                return stoppedBeforeStart(signal: signal)
            }
            switch pump.opening {
            case .opened(let opened, let bytes)?:
                names = opened
                totalBytes = bytes
            case .failed(let error)?:
                throw error
            case nil:
                setupEvent.wait()
                continue
            }
            break
        }
        let journal: RunSetup.OpenedJournal
        do throws(RunSetupError) {
            journal = try RunSetup.openJournal(options, startedAt: startedAt, toolVersion: toolVersion)
        } catch {
            pump.cancel()
            throw error
        }
        // With the cutoff of a stopped selection this run continues, if it is one.
        let options = journal.options
        let temporaryDirectory = journal.temporaryDirectory
        defer { if let temporaryDirectory { Files.removePrivateDirectory(temporaryDirectory) } }
        let sender: RunParts.Sender
        if options.dryRun {
            sender = .dryRun
        } else {
            let handOff = ResultHandOff()
            do throws(RunSetupError) {
                let client = try RunSetup.startClient(options, apiKey: apiKey, toolVersion: toolVersion) {
                    handOff.deliver($0)
                }
                sender = .client(client, handOff)
            } catch {
                pump.cancel()
                journal.writer.endBeforeSending(exitCode: error.exitCode, message: error.message)
                throw error
            }
        }
        let feeder = InputFeeder(
            pump: pump, names: names, options: options, mode: OutcomePolicy.RunMode(options),
            runID: journal.writer.runID, startedAt: startedAt)
        let parts = RunParts(
            writer: journal.writer, feeder: feeder, pump: pump, sender: sender, totalBytes: totalBytes,
            recovered: journal.recovered, continuingFrom: journal.continuingFrom)
        let loop = ActiveRun(
            parts: parts, options: options, startedAt: startedAt,
            executor: RunExecutor(label: "botsi-restore.run"), progressInterval: progressInterval,
            onProgress: onProgress, onWouldSend: onWouldSend
        ) { [self] summary in
            result.withLock { $0 = summary }
            finished.signal()
        }
        // From here on a stop goes to the run; one that came during setup is handed over with it.
        let stop = stage.withLock { stage -> Int32? in
            guard case .settingUp(let stop) = stage else { return nil }
            stage = .running(loop)
            return stop
        }
        loop.enter { $0.start(stoppingFor: stop.map(RunStop.signal)) }
        finished.wait()
        return result.withLock { $0 } ?? RunSummary()
    }

    private var pendingStop: Int32? {
        stage.withLock { stage in
            if case .settingUp(let stop) = stage { return stop }
            return nil
        }
    }

    /// A stop while the inputs were still opening: nothing was read, recorded or sent.
    private func stoppedBeforeStart(signal: Int32) -> RunSummary {
        let stop = RunStop.signalBeforeStart(signal)
        var summary = RunSummary()
        summary.dryRun = options.dryRun
        summary.stopMessage = stop.message
        summary.stopCause = stop.cause
        summary.stoppedAt = Timestamp.string(Date())
        summary.exitCode = stop.exitCode
        summary.durationSeconds = Date().timeIntervalSince(startedAt)
        summary.nextCommand = RunAdvice.continuing(
            RunAdvice.runCommand(options, inputs: options.inputs), keyFile: options.keyFile)
        return summary
    }
}
