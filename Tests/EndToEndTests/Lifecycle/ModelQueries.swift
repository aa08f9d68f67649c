import Foundation

/// `status`, `runs` and `report` against the journal: the counts every row of it (R4), the
/// changes between runs (R7), and the key in no output.
extension ModelSequence {
    /// JSON objects, one a line; lines that are not JSON objects are skipped.
    static func jsonObjects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// The `--log-format json` summary object of a run.
    static func summary(_ stderr: String) -> [String: Any]? {
        jsonObjects(stderr).last { $0["event"] as? String == "summary" }
    }

    func runsLines() -> [[String: Any]] {
        guard let finished = try? botsi(["runs", "--journal", journal, "--format", "jsonl"], key: nil, in: workspace)
        else { return [] }
        return Self.jsonObjects(finished.stdout)
    }

    /// R4 journal-wide: `status` and `report` count every row; the journal is sound.
    func journalWideChecks(_ tables: JournalTables?) throws -> [Violation] {
        guard let tables else { return [] }
        var violations: [Violation] = []
        if tables.integrity != "ok" {
            violations.append(Violation(nil, "PRAGMA integrity_check says \(tables.integrity)"))
        }
        let expected = tables.statusCounts
        let status = try botsi(["status", "--journal", journal, "--format", "json"], key: nil, in: workspace)
        let statusObject = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any]
        let statusCounts = (statusObject?["statuses"] as? [String: Int])?.filter { $0.value != 0 }
        if !tables.runs.isEmpty && statusCounts != expected {
            violations.append(
                Violation(
                    nil, "`status` counts \(statusCounts ?? [:]), the journal holds \(expected): \(tail(status.stderr))"
                ))
        }
        let unread = ModelTable.unreadInputs(tables.runs)
        if !tables.runs.isEmpty, statusObject?["unreadInputs"] as? [String] != unread {
            violations.append(
                Violation(
                    nil,
                    "`status` names \(statusObject?["unreadInputs"] ?? "nothing") as unread, the runs left \(unread)"
                ))
        }
        let rejected = (statusObject?["rejected"] as? [String: Int])?.values.reduce(0, +) ?? 0
        if !tables.runs.isEmpty && rejected != tables.rejections {
            violations.append(
                Violation(nil, "`status` counts \(rejected) refused input rows, the journal \(tables.rejections)"))
        }
        let report = try botsi(["report", "--journal", journal], key: nil, in: workspace)
        var reportCounts: [String: Int] = [:]
        for object in Self.jsonObjects(report.stdout) {
            reportCounts[object["status"] as? String ?? "?", default: 0] += 1
        }
        var expectedReport = expected
        if tables.rejections > 0 { expectedReport["rejected", default: 0] += tables.rejections }
        if report.status == 0 && reportCounts != expectedReport {
            violations.append(Violation(nil, "`report` counts \(reportCounts), the journal holds \(expectedReport)"))
        }
        return violations
    }

    /// The key (accepted, refused or forbidden) in no file of the workspace: journal, its -wal,
    /// reports, and every command's stdout and stderr.
    func secretChecks() -> [Violation] {
        let keys = keys.all.map { Data($0.utf8) }
        var violations: [Violation] = []
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: workspace.path)) ?? [] {
            guard let data = FileManager.default.contents(atPath: workspace.file(name)) else { continue }
            if keys.contains(where: { data.range(of: $0) != nil }) {
                violations.append(Violation(nil, "a key appears in \(name)"))
            }
        }
        return violations
    }

    /// `report` in its other forms, and R7: `report --changes` between two runs lists the rows
    /// whose state (status, code, snapshot) differs between the journal at each run's end.
    func query() throws -> [Violation] {
        var violations: [Violation] = []
        guard let tables = try JournalTables.read(journal) else { return [] }
        let csvPath = workspace.file("report.csv")
        let csv = try botsi(
            ["report", "--journal", journal, "--format", "csv", "--output", csvPath], key: nil, in: workspace)
        let csvRows = parseCSV((try? String(contentsOfFile: csvPath, encoding: .utf8)) ?? "").count - 1
        if csv.status != 0 || csvRows != tables.items.count + tables.rejections {
            violations.append(
                Violation(
                    nil,
                    "`report --format csv` exited \(csv.status) with \(csvRows) rows for \(tables.items.count) items and \(tables.rejections) refused rows"
                ))
        }
        let table = try botsi(["report", "--journal", journal, "--format", "table"], key: nil, in: workspace)
        if table.status != 0 { violations.append(Violation(nil, "`report --format table` exited \(table.status)")) }
        if !skip.contains(.regression) { violations += try changesChecks() }
        return violations
    }

    private func changesChecks() throws -> [Violation] {
        let runIds = snapshots.keys.sorted()
        guard runIds.count >= 2, let later = runIds.last else { return [] }
        // The run before the later one, or an older one.
        let earlier = runIds[runIds.count - 2 - Int(seed % UInt64(min(runIds.count - 1, 3)))]
        let before = snapshots[earlier]!
        let after = snapshots[later]!
        let changes = try botsi(
            ["report", "--journal", journal, "--changes", "--since-run", "\(earlier)", "--run", "\(later)"], key: nil,
            in: workspace)
        let listed = Set(
            Self.jsonObjects(changes.stdout).map {
                Pair($0["profileId"] as? String ?? "", $0["originalTransactionId"] as? String ?? "")
            })
        var violations: [Violation] = []
        let changed = Set(after.filter { pair, item in before[pair].map { !$0.sameState(as: item) } ?? true }.keys)
        let falseChanges = listed.subtracting(changed)
        if !falseChanges.isEmpty {
            let examples = falseChanges.sorted { $0.description < $1.description }.prefix(4).map {
                "\($0) \(after[$0]?.stateDescription ?? "absent")"
            }
            violations.append(
                Violation(
                    .regression,
                    "`report --changes --since-run \(earlier) --run \(later)` lists rows whose state did not change: \(examples)"
                ))
        }
        // Rows that became final, or another final status, must be listed.
        let missed = changed.filter { pair in
            guard let now = after[pair], ModelTable.finalStatuses.contains(now.status) else { return false }
            guard let then = before[pair], ModelTable.finalStatuses.contains(then.status) else { return true }
            return then.status != now.status
        }.subtracting(listed)
        if !missed.isEmpty {
            violations.append(
                Violation(
                    .regression,
                    "`report --changes --since-run \(earlier) --run \(later)` misses rows whose status changed: \(missed.sorted { $0.description < $1.description }.prefix(4))"
                ))
        }
        return violations
    }
}
