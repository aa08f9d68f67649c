/// Text made safe to show, the one choke point for every character a terminal, a spreadsheet or
/// a reader's eye would act on instead of display, or would not see at all.
///
/// **Active** scalars, one definition for every output:
/// - controls: C0 (U+0000–U+001F), DEL (U+007F), C1 (U+0080–U+009F, where U+009B works as ESC [
///   on some terminals);
/// - invisible ones (`isInvisible`): every format character (Unicode category Cf — among them the
///   bidirectional marks U+061C, U+200E, U+200F, the embeddings, overrides and isolates
///   U+202A–U+202E and U+2066–U+2069 that reorder what follows them, U+00AD SOFT HYPHEN, U+180E,
///   the zero-width space, joiners and word joiner U+200B–U+200D, U+2060, the byte-order mark
///   U+FEFF, the tag characters U+E0001–U+E007F), the line and paragraph separators U+2028 and
///   U+2029, and every other default-ignorable code point (variation selectors, U+034F COMBINING
///   GRAPHEME JOINER, the Hangul fillers): nothing, or next to nothing, is drawn for them, so two
///   values that differ by one look the same.
///
/// Three ways to make text safe, each for its place:
/// - `escaped`: every active scalar as a visible escape (`\u001B`, `\u200B`; beyond U+FFFF its
///   UTF-16 pair, `\uDB40\uDC41`), which is also a valid JSON string escape. For everything shown:
///   terminals, logs, reports.
/// - `quoted`: a value inside a message, `'…'`, escaped the same way and cut to 64 scalars.
/// - `oneLine`: text from a server kept as a one-line message: controls become spaces, length is
///   bounded; the rest stays as received, for `escaped` to show on the way out.
public enum VisibleText {
    /// Controls a caller may let through: CSV quotes line breaks, a log keeps its own newlines.
    public struct Kept: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let tab = Kept(rawValue: 1)
        public static let lineFeed = Kept(rawValue: 2)
        public static let carriageReturn = Kept(rawValue: 4)
    }

    /// True for the scalars listed above: controls and invisible ones.
    public static func isActive(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 || value == 0x7F { return true }
        if value < 0x80 { return false }
        return value <= 0x9F || isInvisible(scalar)
    }

    /// Format characters (Cf), U+2028 and U+2029, and every other default-ignorable code point.
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.value >= 0xAD else { return false }
        let properties = scalar.properties
        if properties.isDefaultIgnorableCodePoint { return true }
        switch properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// "U+200B ZERO WIDTH SPACE": the code point and, when Unicode gives it one, its name.
    public static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return scalar.properties.name.map { "\(code) \($0)" } ?? code
    }

    /// True for the first byte of an active scalar's UTF-8 form (`mayContainActive` looks for
    /// them): the ASCII controls and DEL, and C2 CD D8 DB DC E0 E1 E2 E3 EF F0 F3.
    public static let mayStartActive: [Bool] = (0...255).map { byte in
        byte < 0x20 || byte == 0x7F || activeLeadBytes.contains(UInt8(byte))
    }
    /// Lead bytes of the non-ASCII active scalars (VisibleTextTests checks every scalar against it).
    static let activeLeadBytes: Set<UInt8> = [0xC2, 0xCD, 0xD8, 0xDB, 0xDC, 0xE0, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3]

    /// True when some UTF-8 byte could start an active scalar: a cheap first look that lets text
    /// without any (nearly all of it) be used as it is. May say true for harmless text (`€`, `£`).
    public static func mayContainActive(_ text: String) -> Bool {
        mayStartActive.withUnsafeBufferPointer { table in text.utf8.contains { table[Int($0)] } }
    }

    /// `\u001B` for ESC: a backslash, `u`, four upper-case hex digits; beyond U+FFFF, the two
    /// UTF-16 halves so written (`\uDB40\uDC41` for U+E0041), as JSON spells it.
    public static func escape(_ scalar: Unicode.Scalar) -> String {
        var result = ""
        for unit in String(scalar).utf16 {
            let hex = String(unit, radix: 16, uppercase: true)
            result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return result
    }

    /// `text` with every active scalar escaped, except the controls in `kept`.
    public static func escaped(_ text: String, keeping kept: Kept = []) -> String {
        guard mayContainActive(text) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isActive(scalar) && !isKept(scalar, kept) {
                result.append(contentsOf: escape(scalar).unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// Lines for a person, each escaped as one line and joined by line feeds: a line break inside
    /// one (a file named with it) would otherwise forge the lines after it.
    public static func joinedLines(_ lines: [String]) -> String {
        lines.map { escaped($0, keeping: .tab) }.joined(separator: "\n")
    }

    /// A value inside a message: `'…'`, escaped, cut to `limit` scalars with `…`.
    public static func quoted(_ text: String, limit: Int = 64) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return "'" + escaped(text) + "'" }
        return "'" + escaped(String(String.UnicodeScalarView(scalars.prefix(limit)))) + "…'"
    }

    /// Text a server sent, as a one-line message: every control a space, at most `limit` scalars
    /// (then `…`). Invisible scalars stay: every output escapes them.
    public static func oneLine(_ text: String, limit: Int = 500) -> String {
        var scalars = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            // The ellipsis says something was cut: text of exactly `limit` scalars has none.
            if count == limit {
                scalars.append("…")
                break
            }
            scalars.append(scalar.properties.generalCategory == .control ? " " : scalar)
            count += 1
        }
        return String(scalars)
    }

    private static func isKept(_ scalar: Unicode.Scalar, _ kept: Kept) -> Bool {
        switch scalar {
        case "\t": kept.contains(.tab)
        case "\n": kept.contains(.lineFeed)
        case "\r": kept.contains(.carriageReturn)
        default: false
        }
    }
}
