import BotsiJournal
import Foundation

/// The journal's row writes as tests spell them: a source as `file:line` and times as the ISO
/// text they read back, turned into what schema 5 stores (an input and a line, milliseconds).
extension Journal {
    /// One pair, a batch of one (a run admits a take's rows together).
    public func admit(
        profileId: String, originalTransactionId: String, source: RowSource, runID: Int64, now: Int64,
        holdConflicts: Bool = false
    ) throws(JournalError) -> Admission {
        let pair = PairToAdmit(profileId: profileId, originalTransactionId: originalTransactionId, source: source)
        return try admit([pair], runID: runID, now: now, holdConflicts: holdConflicts)[0]
    }

    public func admit(
        profileId: String, originalTransactionId: String, source: String, runID: Int64, now: String,
        holdConflicts: Bool = false
    ) throws(JournalError) -> Admission {
        try admit(
            profileId: profileId, originalTransactionId: originalTransactionId, source: try rowSource(source),
            runID: runID, now: Timestamp.milliseconds(now) ?? 0, holdConflicts: holdConflicts)
    }

    @discardableResult
    public func markInFlight(
        itemID: Int64, runID: Int64, now: String, keepsStatus: Bool = false, known: InFlightMark? = nil
    ) throws(JournalError) -> InFlightMark {
        try markInFlight(
            itemID: itemID, runID: runID, now: Timestamp.milliseconds(now) ?? 0, keepsStatus: keepsStatus,
            known: known)
    }

    public func recordOutcome(
        itemID: Int64, status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: String,
        profile: ProfileRecord?
    ) throws(JournalError) {
        try recordOutcome(
            itemID: itemID, status: status, code: code, httpStatus: httpStatus, message: message,
            now: Timestamp.milliseconds(now) ?? 0, profile: profile)
    }

    public func recordRejection(
        file: String, line: Int, reason: String, message: String, profileId: String?, originalTransactionId: String?,
        runID: Int64, now: String
    ) throws(JournalError) {
        try recordRejection(
            source: RowSource(input: try inputID(path: file), line: line), reason: reason, message: message,
            profileId: profileId, originalTransactionId: originalTransactionId, runID: runID,
            now: Timestamp.milliseconds(now) ?? 0)
    }

    /// `file:line`, the line after the last colon.
    public func rowSource(_ text: String) throws(JournalError) -> RowSource {
        let colon = text.lastIndex(of: ":") ?? text.endIndex
        let line = colon < text.endIndex ? Int(text[text.index(after: colon)...]) ?? 0 : 0
        return RowSource(input: try inputID(path: String(text[..<colon])), line: line)
    }
}

extension OutcomeRecord {
    public init(
        status: ItemStatus, code: String?, httpStatus: Int?, message: String?, now: String, profile: ProfileRecord?
    ) {
        self.init(
            status: status, code: code, httpStatus: httpStatus, message: message,
            now: Timestamp.milliseconds(now) ?? 0, profile: profile)
    }
}
