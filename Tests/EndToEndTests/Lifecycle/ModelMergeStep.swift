import BotsiTestSupport
import Foundation

/// `merge` as a step of the model (issue 20, item 1), as the chaos run met it: the journal is
/// copied; the journal runs (a step the model checks as any other), then the copy runs the same
/// input later against a server that fails every request (as a second machine with a copy of
/// last night's journal would); the two are merged into the journal the next steps use. The rules
/// of a run hold across the merge: no final row regressed (a final record is kept over a later one
/// that owes the row), no row lost, and the attempts of the history both share counted once.
extension ModelSequence {
    func mergeCopy(_ run: RunStep) throws -> [Violation] {
        guard FileManager.default.fileExists(atPath: journal), let shared = try JournalTables.read(journal) else {
            return try query()
        }
        let copy = workspace.file("copy.sqlite")
        let merged = workspace.file("merged.sqlite")
        for path in [copy, merged] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        // What the journal holds, committed frames of its WAL included.
        try SQLiteTool.execute(journal, ".backup '\(copy)'")

        let observation = try execute(run)
        var violations = checkRun(observation)
        record(observation)
        guard let ran = observation.after else { return violations }

        var failing = run
        failing.world.faultRate = 1
        failing.world.faults = [.internalError]
        failing.maxAttempts = 1
        let simulator = try failing.world.makeSimulator(keys: keys, seed: stepSeed &+ 1)
        let copyRun = try botsi(
            arguments(failing, simulator: simulator, journal: copy), key: keys.key(for: failing.world), in: workspace)
        simulator.stop()
        guard let copied = try JournalTables.read(copy) else {
            return violations + [Violation(nil, "the copy could not be read after its run: \(copyRun.stderr)")]
        }
        let merge = try botsi(["merge", merged, journal, copy], key: nil, in: workspace)
        guard merge.status == 0, let result = try JournalTables.read(merged) else {
            return violations + [
                Violation(nil, "merge of the journal and its copy failed (\(merge.status)): \(merge.stderr)")
            ]
        }
        violations += mergeChecks(shared: shared, journal: ran, copy: copied, merged: result)
        // The merged journal is the one the next steps use.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: journal + suffix) }
        guard rename(merged, journal) == 0 else {
            return violations + [Violation(nil, "could not put the merged journal in place: errno \(errno)")]
        }
        if let last = result.runs.last, last.id > (ran.runs.last?.id ?? 0) { snapshots[last.id] = result.items }
        return violations
    }

    private func mergeChecks(shared: JournalTables, journal: JournalTables, copy: JournalTables, merged: JournalTables)
        -> [Violation]
    {
        var violations: [Violation] = []
        let final = JournalView.finalStatuses
        for pair in Set(journal.items.keys).union(copy.items.keys) {
            let name = ModelUniverse.short(pair)
            guard let kept = merged.items[pair] else {
                violations.append(Violation(nil, "merge lost \(name)"))
                continue
            }
            let records = [journal.items[pair], copy.items[pair]].compactMap { $0 }
            let finals = records.filter { final.contains($0.status) }
            let held = records.map(\.stateDescription).joined(separator: " and ")
            if !finals.isEmpty && !final.contains(kept.status) {
                violations.append(
                    Violation(nil, "merge regressed \(name) to \(kept.stateDescription); the shards held \(held)"))
            } else if finals.count == 1, !kept.sameState(as: finals[0]) {
                violations.append(
                    Violation(
                        nil, "merge kept \(kept.stateDescription) for \(name), not its one final record (\(held))"))
            }
            // Each side's attempts, those of the history both share once.
            let expected =
                (journal.items[pair]?.attempts ?? 0) + (copy.items[pair]?.attempts ?? 0)
                - (shared.items[pair]?.attempts ?? 0)
            if kept.attempts != expected {
                violations.append(
                    Violation(nil, "merge counts \(kept.attempts) attempts for \(name), not \(expected) (\(held))"))
            }
        }
        let runs = journal.runs.count + copy.runs.count - shared.runs.count
        if merged.runs.count != runs {
            violations.append(
                Violation(nil, "merge holds \(merged.runs.count) runs, not \(runs) (the shared ones once)"))
        }
        if merged.integrity != "ok" { violations.append(Violation(nil, "merged integrity: \(merged.integrity)")) }
        return violations
    }
}
