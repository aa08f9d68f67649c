import BotsiBasics

/// Which CSV column holds each field, from the header's names. Names match as people write them:
/// case, spaces, `_` and `-` are ignored (`Original Transaction ID`, `original-transaction-id`).
/// Ambiguity is an error: two columns that match one field stop the reader, naming both and how
/// to pick one.
enum HeaderMapping {
    struct Header {
        /// Trimmed, lossy UTF-8.
        let names: [String]
        let line: Int
        /// Some name was not valid UTF-8 (the file is probably in a Windows code page).
        let hasNonUTF8Names: Bool
    }

    /// The column index of each `Field`, -1 where the header has none.
    static func columns(header: Header, context: ParserContext, delimiter: UInt8) throws(InputError) -> [Int] {
        let accepted = context.fieldNames.map { Set($0.map(key)) }
        var matches = Field.allCases.map { _ in [Int]() }
        for (index, name) in header.names.enumerated() {
            let key = key(name)
            // A column serves the first field that accepts its name, so a column the user named
            // for the transaction (say `receipt`) is not also read as a receipt.
            if let field = accepted.firstIndex(where: { $0.contains(key) }) { matches[field].append(index) }
        }
        var columns = Field.allCases.map { _ in -1 }
        for field in Field.allCases {
            var found = matches[field.rawValue]
            if found.count > 1, let chosen = explicitName(field, context.columns) {
                // Names that differ only in case: the one spelled exactly as given wins.
                let exact = found.filter { header.names[$0] == chosen.trimmingWhitespace() }
                if exact.count == 1 { found = exact }
            }
            if found.count > 1 {
                throw InputError(
                    kind: .notTabular, path: context.path,
                    message: ambiguityMessage(field, found, header: header, context: context))
            }
            columns[field.rawValue] = found.first ?? -1
        }
        let hasTransaction = [Field.transaction, .signedTransaction, .receipt].contains { columns[$0.rawValue] >= 0 }
        guard columns[Field.profile.rawValue] >= 0, hasTransaction else {
            throw InputError(
                kind: .missingColumns, path: context.path,
                message: missingMessage(
                    header: header, context: context, delimiter: delimiter,
                    profileFound: columns[Field.profile.rawValue] >= 0, transactionFound: hasTransaction))
        }
        return columns
    }

    /// A header name as it is compared: ASCII case folded; spaces, `_` and `-` left out.
    static func key(_ name: String) -> String {
        String(ASCIICase.lowercased(name.trimmingWhitespace()).filter { $0 != " " && $0 != "_" && $0 != "-" })
    }

    /// A header name near enough to one of a missing field's names to be that field misspelt
    /// (`original_transaction`), with the flag that reads it; nil when none is near.
    private static func nearMiss(_ field: Field, header: Header, context: ParserContext) -> String? {
        guard let flag = field.flag else { return nil }
        let names = context.fieldNames[field.rawValue].map(key)
        guard
            let name = header.names.first(where: { name in
                let typed = key(name)
                return !typed.isEmpty && Basics.nearest(to: typed, among: names) != nil
            })
        else { return nil }
        return
            " Did you mean \(RowValidation.display(name)) for the \(field.title)? If so, pass \(flag) \(shellWord(name))."
    }

    /// A name as a shell reads it back as one word. Never empty: `nearMiss` skips empty names.
    private static func shellWord(_ name: String) -> String {
        let plain = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || "_.-".utf8.contains(byte)
        }
        return plain
            ? name : "'" + name.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    private static func explicitName(_ field: Field, _ columns: ColumnNames) -> String? {
        switch field {
        case .profile: columns.profile
        case .transaction: columns.transaction
        case .signedTransaction, .receipt: nil
        }
    }

    private static func ambiguityMessage(_ field: Field, _ found: [Int], header: Header, context: ParserContext)
        -> String
    {
        let listed = found.map { "\(RowValidation.display(header.names[$0])) (column \($0 + 1))" }
        let both = listed.dropLast().joined(separator: ", ") + " and " + listed.last!
        var message =
            "Input '\(context.displayName)' has \(found.count) columns for the \(field.title) in its header on line \(header.line): \(both). "
        let identical = Set(found.map { header.names[$0] }).count == 1
        if let flag = field.flag, !identical {
            message += "Name the one to read with \(flag) NAME; nothing was sent."
        } else {
            message += "Remove or rename all but one of them; nothing was sent."
        }
        return message
    }

    private static func missingMessage(
        header: Header, context: ParserContext, delimiter: UInt8, profileFound: Bool, transactionFound: Bool
    ) -> String {
        var missing: [String] = []
        if !profileFound { missing.append("the profile column (\(context.profileNames.joined(separator: " or ")))") }
        if !transactionFound {
            missing.append(
                "the transaction column (\(context.transactionNames.joined(separator: " or ")), or a signedTransaction or receipt column)"
            )
        }
        let names = header.names
        let shown = names.prefix(20).map { RowValidation.display($0) }.joined(separator: ", ")
        let more = names.count > 20 ? " and \(names.count - 20) more" : ""
        var message =
            "Input '\(context.displayName)' lacks \(missing.joined(separator: " and ")) in its header on line \(header.line), which has \(shown)\(more); name the columns with --profile-column and --transaction-column."
        if !profileFound, let hint = nearMiss(.profile, header: header, context: context) { message += hint }
        if !transactionFound, let hint = nearMiss(.transaction, header: header, context: context) { message += hint }
        if header.hasNonUTF8Names {
            message +=
                " Some column names are not UTF-8 text: if Excel on Windows wrote the file, pass --encoding windows-1252, or save it as CSV UTF-8."
        }
        if names.contains(where: { $0.utf8.count >= 6 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) {
            message +=
                " The first line looks like a row, not a header: pass --no-header with --profile-column N --transaction-column M (1-based positions)."
        }
        if names.count == 1, let only = names.first,
            let other = InputOptions.detectedDelimiters.first(where: { $0 != delimiter && only.utf8.contains($0) })
        {
            message +=
                " The header seems to be separated by \(DelimiterNames.name(other)); pass --delimiter \(DelimiterNames.flagValue(other))."
        }
        return message
    }
}

/// How messages and flags spell a delimiter.
public enum DelimiterNames {
    public static func name(_ byte: UInt8) -> String {
        switch byte {
        case ASCII.comma: "commas"
        case 0x3B: "semicolons"
        case ASCII.tab: "tabs"
        case 0x7C: "pipes (|)"
        default: "'\(Character(Unicode.Scalar(byte)))'"
        }
    }

    /// The value `--delimiter` takes for it.
    public static func flagValue(_ byte: UInt8) -> String {
        switch byte {
        case ASCII.tab: "tab"
        case 0x3B: "';'"
        case 0x7C: "'|'"
        default: String(Character(Unicode.Scalar(byte)))
        }
    }
}
