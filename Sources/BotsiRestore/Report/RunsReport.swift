import BotsiBasics
import BotsiJournal
import Foundation

/// One line per run for `botsi-restore runs`: start, duration, inputs, counts, exit code.
public struct RunLine: Sendable, Equatable {
    public var id: Int64
    public var startedAt: String
    public var endedAt: String?
    public var durationSeconds: Double?
    /// `finished`, `stopped`, `running`, or `killed` (no end recorded, nobody holds the lock).
    public var state: String
    public var exitCode: Int?
    public var inputs: [String]
    /// Rows this run sent, by the status they ended in.
    public var statuses: [String: Int]
    public var rejectedInput: Int
    public var requests: Int
    public var retries: Int
    public var host: String
    /// For a run that never wrote its summary: counts come from its attempts so far.
    public var countsFromAttempts: Bool

    public static func make(
        runs: [RunRecord], attemptOutcomes: [Int64: [String: Int]], holder: LockHolder?, now: Date
    ) -> [RunLine] {
        runs.map { run in
            let isLatest = run.id == runs.last?.id
            var state = run.state
            if run.endedAt == nil { state = isLatest && holder != nil ? "running" : "killed" }
            let start = Timestamp.date(run.startedAt)
            let end = run.endedAt.flatMap(Timestamp.date) ?? (state == "running" ? now : nil)
            let counts = StatusReport.jsonValue(run.counts) as? [String: Any] ?? [:]
            var statuses = (counts["statuses"] as? [String: Any])?.compactMapValues { ($0 as? NSNumber)?.intValue }
            let outcomes = attemptOutcomes[run.id] ?? [:]
            let fromAttempts = statuses == nil
            // Attempts that left the row as it was (`retry`, `kept`) are no row's status.
            if statuses == nil { statuses = outcomes.filter { $0.key != "retry" && $0.key != "kept" } }
            let rejected = (counts["rejectedByReason"] as? [String: Any])?.values
                .compactMap { ($0 as? NSNumber)?.intValue }.reduce(0, +)
            return RunLine(
                id: run.id, startedAt: run.startedAt, endedAt: run.endedAt,
                durationSeconds: start.flatMap { start in end.map { max($0.timeIntervalSince(start), 0) } },
                state: state, exitCode: run.exitCode, inputs: inputPaths(run), statuses: statuses ?? [:],
                rejectedInput: rejected ?? 0,
                requests: (counts["requests"] as? NSNumber)?.intValue ?? outcomes.values.reduce(0, +),
                retries: (counts["retries"] as? NSNumber)?.intValue ?? outcomes["retry"] ?? 0, host: run.host,
                countsFromAttempts: fromAttempts)
        }
    }

    static func inputPaths(_ run: RunRecord) -> [String] {
        if let inputs = StatusReport.jsonValue(run.inputs) as? [[String: Any]], !inputs.isEmpty {
            return inputs.compactMap { $0["path"] as? String }
        }
        return (StatusReport.jsonValue(run.options) as? [String: Any])?["inputs"] as? [String] ?? []
    }
}

public enum RunsFormat: String, Sendable, CaseIterable {
    case table, jsonl
}

public enum RunsWriter {
    static let tableColumns = [
        "run", "started", "duration", "state", "exit", "restored", "nothing", "notFound", "failed", "pending",
        "rejected", "requests", "inputs",
    ]

    public static func write(_ lines: [RunLine], format: RunsFormat, to write: @escaping (String) -> Void) {
        switch format {
        case .jsonl:
            for line in lines { write(json(line) + "\n") }
        case .table:
            let table = TextTable(columns: tableColumns, maxWidth: 60, write: write)
            for line in lines {
                let count = { (status: String) in String(line.statuses[status] ?? 0) }
                table.add([
                    String(line.id), line.startedAt, line.durationSeconds.map { Basics.duration($0) } ?? "?",
                    line.state, line.exitCode.map(String.init) ?? "-", count("restored"), count("nothing_to_restore"),
                    count("profile_not_found"),
                    String((line.statuses["failed"] ?? 0) + (line.statuses["rejected"] ?? 0)),
                    count("pending"), String(line.rejectedInput), String(line.requests),
                    line.inputs.joined(separator: " "),
                ])
            }
            table.finish()
        }
    }

    static func json(_ line: RunLine) -> String {
        var object: [String: Any] = [
            "run": line.id, "startedAt": line.startedAt, "state": line.state, "inputs": line.inputs,
            "statuses": line.statuses, "rejectedInput": line.rejectedInput, "requests": line.requests,
            "retries": line.retries, "host": line.host, "countsFromAttempts": line.countsFromAttempts,
        ]
        object["endedAt"] = line.endedAt ?? NSNull()
        object["durationSeconds"] = line.durationSeconds ?? NSNull()
        object["exitCode"] = line.exitCode ?? NSNull()
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        // Inside JSON strings the visible escapes are JSON escapes: input names keep no raw bidi override.
        return VisibleText.escaped(String(decoding: data, as: UTF8.self))
    }
}
