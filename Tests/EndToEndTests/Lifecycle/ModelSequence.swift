import BotsiSimulator
import BotsiTestSupport
import Foundation

/// What one `run` step left behind.
struct RunObservation {
    let run: RunStep
    let finished: Finished
    /// Ended by the step's own kill -9.
    let killed: Bool
    let stats: SimulatorStats
    let before: JournalTables?
    let after: JournalTables?
    let selection: ModelTable.Selection
}

/// One sequence: a workspace with one journal, driven by the real binary through steps, and the
/// model's view of the journal after each (the last state that passed every check).
final class ModelSequence {
    let seed: UInt64
    let table: ModelTable
    let keys: World.Keys
    let workspace = Workspace()
    let verbose: Bool
    /// The journal as of the last step that passed.
    var current: JournalTables?
    /// The rows as the journal held them at the end of each run (R7), by run id.
    var snapshots: [Int64: [Pair: JournalTables.Item]] = [:]
    private(set) var stepNumber = 0
    var skip: Set<Problem> { table.skip }
    var journal: String { workspace.journal }

    init(seed: UInt64, table: ModelTable, verbose: Bool) {
        self.seed = seed
        self.table = table
        self.verbose = verbose
        keys = World.Keys(seed: seed)
        try? FileManager.default.createDirectory(atPath: workspace.file("sub"), withIntermediateDirectories: true)
    }

    /// A seed for the step's simulator (faults, jitter) that repeats with the sequence's seed.
    var stepSeed: UInt64 { seed &* 1_000_003 &+ UInt64(stepNumber) }

    /// Performs a step and checks it; returns what broke (empty: the step passed).
    func perform(_ step: Step) throws -> [Violation] {
        stepNumber += 1
        if verbose { print("  seed \(seed) step \(stepNumber): \(step)") }
        var violations: [Violation]
        switch step {
        case .run(let run):
            let observation = try execute(run)
            violations = checkRun(observation)
            record(observation)
            if verbose {
                let exit = observation.killed ? "killed" : "exit \(observation.finished.status)"
                print("    \(exit), \(observation.stats.requests) requests")
            }
        case .concurrent(let first, let second):
            violations = try concurrent(first, second: second)
        case .preflight(let fault, let dryRun):
            violations = try preflight(fault, dryRun: dryRun)
        case .reportOntoJournal(let target):
            violations = try reportOntoJournal(target)
        case .query:
            violations = try query()
        case .mergeCopy(let run):
            violations = try mergeCopy(run)
        }
        let after = try JournalTables.read(journal)
        violations += try journalWideChecks(after)
        violations += secretChecks()
        if verbose {
            print(
                "    journal: \(after?.statusCounts.sorted { $0.key < $1.key } ?? []), \(after?.runs.count ?? 0) runs")
        }
        current = after
        return violations
    }

    /// Keeps the rows as they were at the end of the run the step recorded.
    func record(_ observation: RunObservation) {
        guard let after = observation.after, let last = after.runs.last,
            last.id > (observation.before?.runs.last?.id ?? 0)
        else { return }
        snapshots[last.id] = after.items
    }

    func inputArguments(_ run: RunStep) -> [String] {
        guard let input = run.input else { return [] }
        if run.fileName == "-" { return ["-", "--format", "csv"] }
        let text = run.fileName.hasSuffix(".jsonl") ? InputLine.jsonLines(input) : InputLine.csv(input)
        return [workspace.write(run.fileName, text)]
    }

    func arguments(_ run: RunStep, simulator: Simulator, journal: String? = nil) -> [String] {
        var extra =
            ["--concurrency", "\(run.concurrency)", "--max-attempts", "\(run.maxAttempts)"] + run.mode.arguments
            + run.forget.flatMap { ["--forget-input", workspace.file($0)] }
        switch run.stop {
        case .window(let milliseconds): extra += ["--max-duration", "\(milliseconds)ms"]
        case .threshold: extra += ["--max-failure-rate", "20", "--min-sample", "4"]
        case .none, .signal, .kill: break
        }
        if run.jsonLog { extra += ["--log-format", "json"] }
        var arguments = runArguments(inputArguments(run), workspace, simulator, extra)
        if let journal, let index = arguments.firstIndex(of: "--journal") { arguments[index + 1] = journal }
        return arguments
    }

    func execute(_ run: RunStep) throws -> RunObservation {
        let before = try JournalTables.read(journal)
        let selection = table.selection(before: before, run: run)
        let simulator = try run.world.makeSimulator(keys: keys, seed: stepSeed)
        defer { simulator.stop() }
        let child = try Child(
            arguments(run, simulator: simulator), key: keys.key(for: run.world), in: workspace,
            holdStdin: run.fileName == "-")
        switch run.stop {
        case .signal(let signal, let after):
            if waitUntilRecordedAsRunning(child) && !child.hasExited(within: Double(after) / 1000) {
                child.send(signal)
            }
        case .kill(let after):
            if !child.hasExited(within: Double(after) / 1000) { child.send(SIGKILL) }
        case .none, .window, .threshold: break
        }
        return try finish(child, run: run, simulator: simulator, before: before, selection: selection)
    }

    func finish(
        _ child: Child, run: RunStep, simulator: Simulator, before: JournalTables?, selection: ModelTable.Selection
    ) throws -> RunObservation {
        let finished = child.wait(timeout: 90)
        simulator.settle()
        let killed: Bool
        if case .kill = run.stop {
            killed = finished.killedBySignal && finished.status == SIGKILL
        } else {
            killed = false
        }
        return RunObservation(
            run: run, finished: finished, killed: killed, stats: simulator.stats(), before: before,
            after: try JournalTables.read(journal), selection: selection)
    }

    /// Waits until the child's run is in the journal's `runs` as running (it holds the journal).
    func waitUntilRecordedAsRunning(_ child: Child, timeout: Double = 30) -> Bool {
        eventually(timeout: timeout) {
            guard child.isRunning else { return true }
            let tables = try? JournalTables.read(journal, checkIntegrity: false)
            return tables?.runs.contains { $0.pid == Int64(child.pid) && $0.state == "running" } ?? false
        } && child.isRunning
    }

    /// Files the tool made in the workspace (the test's own child output files left out).
    func listing() -> Set<String> {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: workspace.path)) ?? []
        return Set(names.filter { !$0.hasPrefix("child-") })
    }
}
