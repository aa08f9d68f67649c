import BotsiInput

/// The input side of `RunOptions`: the names the command line and job files use, and the
/// reader's options they stand for. The CLI checks values with these, so it needs no BotsiInput.
extension RunOptions {
    /// `--format` values.
    public static let formatNames = InputFormat.allCases.map(\.rawValue)
    /// `--encoding` values.
    public static let encodingNames = InputEncoding.allCases.map(\.rawValue)
    /// `--environment` values.
    public static let environmentNames = PurchaseEnvironment.allCases.map(\.rawValue)

    /// The byte a `--delimiter` value names: `,` `;` `|` or any other single ASCII punctuation
    /// character, or `tab` (also `\t` or a tab itself); nil for anything else.
    public static func delimiterByte(_ text: String) -> UInt8? {
        switch text.lowercased() {
        case "tab", "\\t", "\t": return 0x09
        case "comma": return UInt8(ascii: ",")
        case "semicolon": return UInt8(ascii: ";")
        case "pipe": return UInt8(ascii: "|")
        default:
            guard text.utf8.count == 1, let byte = text.utf8.first, byte > 0x20, byte < 0x7F,
                byte != UInt8(ascii: "\""),
                !(byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")),
                !((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z"))
            else { return nil }
            return byte
        }
    }

    /// The encoding a `--encoding` value names (a few common spellings accepted), as its
    /// canonical name; nil for an unknown one.
    public static func encodingName(_ text: String) -> String? {
        switch text.lowercased() {
        case "utf-8", "utf8": "utf-8"
        case "utf-16", "utf16", "unicode": "utf-16"
        case "windows-1252", "cp1252", "windows1252": "windows-1252"
        case "latin1", "latin-1", "iso-8859-1", "iso8859-1": "latin1"
        default: nil
        }
    }

    /// What the reader is told; values were checked when the options were built.
    public var inputOptions: InputOptions {
        var options = InputOptions()
        options.delimiter = delimiter.flatMap(Self.delimiterByte)
        options.encoding = encoding.flatMap(Self.encodingName).flatMap(InputEncoding.init(rawValue:))
        options.bundleId = bundleId
        options.environment = environment.flatMap(PurchaseEnvironment.init(rawValue:))
        if noHeader {
            options.hasHeader = false
            options.positions = ColumnPositions(
                profile: profileColumn.flatMap { Int($0) } ?? 1, transaction: transactionColumn.flatMap { Int($0) } ?? 2
            )
        } else {
            options.columns = ColumnNames(profile: profileColumn, transaction: transactionColumn)
        }
        return options
    }
}
