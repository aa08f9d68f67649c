import BotsiJournal
import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

extension Workspace {
    /// Readable by all: some tests run the binary as another user on the same input.
    @discardableResult
    func csv(_ rows: [Pair], name: String = "in.csv") -> String {
        let path = csv(name, rows: rows.map { ($0.profileId, $0.transactionId) })
        chmod(path, 0o644)
        return path
    }
}

struct Pair: Hashable, Sendable, CustomStringConvertible {
    let profileId: String
    let transactionId: String

    init(_ profileId: String, _ transactionId: String) {
        self.profileId = profileId
        self.transactionId = transactionId
    }

    var description: String { "\(profileId)/\(transactionId)" }

    /// `count` distinct pairs that the simulator's rule finishes: ids ending in 0 answer
    /// nothing_to_restore, the others restored.
    static func generate(_ count: Int, prefix: String = "p") -> [Pair] {
        (0..<count).map { Pair("\(prefix)-\($0)", String(2_000_000_000_000_000 + $0)) }
    }
}

/// A simulator whose every reply is a 500: a run against it leaves its rows pending.
func startFailingSimulator() throws -> Simulator {
    try startSimulator {
        $0.faultRate = 1
        $0.faults = [.internalError]
    }
}

extension Simulator {
    /// Restore requests per pair so far.
    func requestsByPair() -> [Pair: Int] {
        var counts: [Pair: Int] = [:]
        for pair in stats().pairs { counts[Pair(pair.profileId, pair.originalTransactionId)] = pair.requests }
        return counts
    }

    /// Waits until no request is being answered (those the killed child sent still count).
    func settle() {
        _ = eventually(timeout: 10) { stats().inFlight == 0 }
    }
}

/// A read-only look into a journal, as `report` takes it.
struct JournalView {
    /// Items (sent rows) by pair; input rejections are not items.
    var items: [Pair: ReportRecord] = [:]
    /// Rows the input checks refused.
    var rejections: [ReportRecord] = []
    var integrity = ""
    var attempts: Int { items.values.reduce(0) { $0 + $1.attempts } }

    func pairs(where predicate: (String) -> Bool) -> Set<Pair> {
        Set(items.filter { predicate($0.value.status.rawValue) }.keys)
    }

    static let finalStatuses: Set<String> = [
        "restored", "nothing_to_restore", "profile_not_found", "rejected", "failed",
    ]

    var finalPairs: Set<Pair> { pairs { Self.finalStatuses.contains($0) } }

    /// Opens the journal read-only; nil while it does not exist or is not yet set up.
    static func read(_ path: String, integrity checkIntegrity: Bool = false) -> JournalView? {
        guard let journal = try? Journal(path: path, create: false, readOnly: true) else { return nil }
        defer { journal.close() }
        var view = JournalView()
        do {
            try journal.forEachReportRecord(ReportFilter()) { record in
                // Input rejections come last and carry no attempt; server rejections are items.
                if record.status == .rejected && record.attempts == 0 && record.httpStatus == nil {
                    view.rejections.append(record)
                } else {
                    view.items[Pair(record.profileId, record.originalTransactionId)] = record
                }
            }
            if checkIntegrity { view.integrity = try journal.integrityCheck() }
        } catch {
            return nil
        }
        return view
    }
}

/// A minimal RFC 4180 reader for the CSV reports (quoted cells may hold commas).
func parseCSV(_ text: String) -> [[String]] {
    var rows: [[String]] = []
    var row: [String] = []
    var cell = ""
    var quoted = false
    var characters = Array(text).makeIterator()
    var pending: Character? = nil
    while let character = pending ?? characters.next() {
        pending = nil
        if quoted {
            if character == "\"" {
                if let next = characters.next() {
                    if next == "\"" { cell.append("\"") } else { quoted = false; pending = next }
                } else {
                    quoted = false
                }
            } else {
                cell.append(character)
            }
            continue
        }
        switch character {
        case "\"": quoted = true
        case ",":
            row.append(cell)
            cell = ""
        case "\r\n", "\n":
            row.append(cell)
            rows.append(row)
            row = []
            cell = ""
        default: cell.append(character)
        }
    }
    if !cell.isEmpty || !row.isEmpty {
        row.append(cell)
        rows.append(row)
    }
    return rows
}
