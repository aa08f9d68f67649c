import BotsiBasics
import BotsiSimulator
import Foundation

/// Steps that must change nothing: a second run while the first holds the journal, a preflight
/// that refuses, a report written onto the journal.
extension ModelSequence {
    /// Makes `spelling` of the journal's path; returns the path to pass and the working directory.
    func spell(_ spelling: Spelling) throws -> (path: String, workingDirectory: String) {
        switch spelling {
        case .same: return (journal, workspace.path)
        case .symlink:
            let link = workspace.file("journal-symlink.sqlite")
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: journal)
            return (link, workspace.path)
        case .hardlink:
            let link = workspace.file("journal-hardlink.sqlite")
            try FileManager.default.linkItem(atPath: journal, toPath: link)
            return (link, workspace.path)
        case .dotDot: return (workspace.file("sub/../journal.sqlite"), workspace.path)
        case .relative: return ("journal.sqlite", workspace.path)
        }
    }

    func removeLinks() {
        for name in [
            "journal-symlink.sqlite", "journal-hardlink.sqlite", "report-symlink.sqlite", "report-hardlink.sqlite",
        ] {
            try? FileManager.default.removeItem(atPath: workspace.file(name))
        }
    }

    /// A run reading stdin holds the journal; a second run through `spelling` must be refused with
    /// 75 and change nothing (no row, no run record, no file); then the first finishes its input.
    func concurrent(_ first: RunStep, second spelling: Spelling) throws -> [Violation] {
        let problem: Problem? = spelling == .same ? nil : .lockBySpelling
        let before = try JournalTables.read(journal)
        let selection = table.selection(before: before, run: first)
        let simulator = try first.world.makeSimulator(keys: keys, seed: stepSeed)
        defer { simulator.stop() }
        let child = try Child(
            arguments(first, simulator: simulator), key: keys.accepted, in: workspace, holdStdin: true)
        var violations: [Violation] = []
        // The header first: the run opens its journal once it knows its input is usable.
        let text = InputLine.csv(first.input ?? [])
        let header = text.prefix { $0 != "\n" } + "\n"
        child.writeStdin(Data(header.utf8))
        if waitUntilRecordedAsRunning(child) {
            // Let it finish what it owes, so that the journal holds still while the second run tries.
            _ = eventually(timeout: 30) {
                let earlier = try? JournalTables.read(journal, checkIntegrity: false)
                usleep(300_000)
                let later = try? JournalTables.read(journal, checkIntegrity: false)
                return simulator.stats().inFlight == 0 && earlier != nil && earlier == later
            }
            violations += try secondRun(through: spelling, problem: problem)
        } else {
            violations.append(Violation(nil, "the first run never held the journal: \(tail(child.stderrSoFar))"))
        }
        // A journal with a second name is refused by every command (73), so the link goes before
        // the reports that judge the first run.
        removeLinks()
        child.closeStdin(after: Data(text.dropFirst(header.count).utf8))
        let observation = try finish(child, run: first, simulator: simulator, before: before, selection: selection)
        // A second run that got in has changed what the first one works on: judge only the refusal.
        if violations.isEmpty { violations += checkRun(observation) }
        record(observation)
        removeLinks()
        return violations
    }

    private func secondRun(through spelling: Spelling, problem: Problem?) throws -> [Violation] {
        let (path, workingDirectory) = try spell(spelling)
        let held = try JournalTables.read(journal, checkIntegrity: false)
        let files = listing()
        let other = try World(generation: 0).makeSimulator(keys: keys, seed: stepSeed &+ 1)
        defer { other.stop() }
        var second = RunStep()
        var random = SplitMix64(seed: stepSeed)
        second.input = Array(ModelUniverse.pairs.shuffled(using: &random).prefix(6).map(InputLine.pair))
        second.fileName = "second.csv"
        let refused = try botsi(
            arguments(second, simulator: other, journal: path), key: keys.accepted, in: workspace,
            workingDirectory: workingDirectory)
        other.settle()
        var violations: [Violation] = []
        if refused.status != 75 || refused.killedBySignal {
            violations.append(
                Violation(
                    problem,
                    "a second run through \(spelling.rawValue) exited \(refused.status), not 75: \(tail(refused.stderr))"
                ))
        }
        if other.stats().requests > 0 {
            violations.append(Violation(problem, "the refused second run sent \(other.stats().requests) requests"))
        }
        let now = try JournalTables.read(journal, checkIntegrity: false)
        if held?.items != now?.items { violations.append(Violation(problem, "the refused second run changed rows")) }
        if held?.runs.count != now?.runs.count {
            violations.append(Violation(problem, "the refused second run recorded a run"))
        }
        let newFiles = listing().subtracting(files).subtracting(["second.csv"])
        if !newFiles.isEmpty {
            violations.append(Violation(problem, "the refused second run left files behind: \(newFiles.sorted())"))
        }
        return violations
    }

    /// R5 and R6: a bad setup is refused with the same status with and without --dry-run, before
    /// anything is sent or written.
    func preflight(_ fault: PreflightFault, dryRun: Bool) throws -> [Violation] {
        let problem: Problem? = dryRun ? .dryRunPreflight : nil
        let before = try JournalTables.read(journal, checkIntegrity: false)
        let simulator = try World().makeSimulator(keys: keys, seed: stepSeed)
        defer { simulator.stop() }
        var run = RunStep()
        run.input = Array(ModelUniverse.pairs.prefix(8).map(InputLine.pair))
        run.mode.dryRun = dryRun
        var arguments = arguments(run, simulator: simulator)
        var key: String? = keys.accepted
        let missingDirectory = workspace.file("missing-directory")
        switch fault {
        case .noKey: key = nil
        case .publicHTTP: arguments += ["--base-url", "http://api.botsi.example"]
        case .missingCACert: arguments += ["--cacert", workspace.file("missing-ca.pem")]
        case .journalInMissingDirectory:
            arguments[arguments.firstIndex(of: "--journal")! + 1] = missingDirectory + "/journal.sqlite"
        }
        let files = listing()
        let finished = try botsi(arguments, key: key, in: workspace)
        simulator.settle()
        var violations: [Violation] = []
        if finished.status != fault.exitStatus || finished.killedBySignal {
            violations.append(
                Violation(
                    problem,
                    "run\(dryRun ? " --dry-run" : "") with \(fault.rawValue) exited \(finished.status), the real run's status is \(fault.exitStatus): \(tail(finished.stderr))"
                ))
        }
        if simulator.stats().requests > 0 { violations.append(Violation(nil, "a refused run sent requests")) }
        let after = try JournalTables.read(journal, checkIntegrity: false)
        // A real run may recover rows a killed run left in flight before it refuses; nothing else.
        let changed = (before?.items ?? [:]).filter { pair, item in
            guard let now = after?.items[pair] else { return true }
            return now != item && (dryRun || item.status != "in_flight" || now.status != "pending")
        }
        if !changed.isEmpty || after?.items.count != before?.items.count && before != nil {
            violations.append(
                Violation(
                    nil,
                    "a refused run\(dryRun ? " --dry-run" : "") changed rows of the journal: \(changed.keys.map(ModelUniverse.short).sorted())"
                ))
        }
        // A real run that refuses may have created an empty journal first; a dry run writes nothing.
        let newFiles = listing().subtracting(files)
        if dryRun && !newFiles.isEmpty {
            violations.append(Violation(problem, "a refused --dry-run left files behind: \(newFiles.sorted())"))
        }
        return violations
    }

    /// `report --output` onto the journal or one of its files is refused and changes nothing.
    func reportOntoJournal(_ target: OutputTarget) throws -> [Violation] {
        guard let before = try JournalTables.read(journal) else { return try query() }
        let path: String
        var workingDirectory = workspace.path
        switch target {
        case .journal: path = journal
        case .symlink:
            path = workspace.file("report-symlink.sqlite")
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: journal)
        case .hardlink:
            path = workspace.file("report-hardlink.sqlite")
            try FileManager.default.linkItem(atPath: journal, toPath: path)
        case .dotDot: path = workspace.file("sub/../journal.sqlite")
        case .relative:
            path = "journal.sqlite"
            workingDirectory = workspace.path
        case .wal, .shm, .lock: path = journal + target.rawValue
        }
        let files = listing()
        let existing = FileManager.default.contents(atPath: path.hasPrefix("/") ? path : workspace.file(path))
        let journalBytes = FileManager.default.contents(atPath: journal)
        let finished = try botsi(
            ["report", "--journal", journal, "--output", path], key: nil, in: workspace,
            workingDirectory: workingDirectory)
        var violations: [Violation] = []
        if finished.status == 0 {
            violations.append(
                Violation(.reportOverJournal, "`report --output` onto the journal (\(target.rawValue)) was not refused")
            )
        }
        let after = try JournalTables.read(journal)
        if !before.sameContent(as: after) || after?.integrity != "ok"
            || FileManager.default.contents(atPath: journal) != journalBytes
        {
            violations.append(
                Violation(
                    .reportOverJournal, "`report --output` onto the journal (\(target.rawValue)) changed the journal"))
        }
        if FileManager.default.contents(atPath: path.hasPrefix("/") ? path : workspace.file(path)) != existing {
            violations.append(Violation(.reportOverJournal, "`report --output` wrote over \(target.rawValue)"))
        }
        let newFiles = listing().subtracting(files)
        if !newFiles.isEmpty {
            violations.append(
                Violation(
                    .reportOverJournal, "`report --output` onto the journal left files behind: \(newFiles.sorted())"))
        }
        removeLinks()
        return violations
    }
}
