/// Text made safe to show: every character a terminal, a spreadsheet or a reader's eye would act on
/// instead of display is written as a visible escape such as `\u001B`.
///
/// Escaped: C0 controls (U+0000–U+001F), DEL (U+007F), C1 controls (U+0080–U+009F, where U+009B
/// works as ESC [ on some terminals), and the bidirectional overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069) that reorder what follows them. The escape is also a valid JSON string escape, so
/// the same text is safe inside a JSON string.
public enum VisibleText {
    /// Controls a caller may let through: CSV quotes line breaks, a log keeps its own newlines.
    public struct Kept: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let tab = Kept(rawValue: 1)
        public static let lineFeed = Kept(rawValue: 2)
        public static let carriageReturn = Kept(rawValue: 4)
    }

    /// True for the scalars listed above.
    public static func isActive(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
            || (0x2066...0x2069).contains(value)
    }

    /// True when some UTF-8 byte could start an active scalar: a cheap first look that lets text
    /// without any (nearly all of it) be used as it is. May say true for harmless text (`€`, `£`).
    public static func mayContainActive(_ text: String) -> Bool {
        // C1 controls are C2 80–C2 9F in UTF-8, the bidi controls E2 80 AA–E2 81 A9.
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }
    }

    /// `\u001B` for ESC: a backslash, `u`, four upper-case hex digits.
    public static func escape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
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

    private static func isKept(_ scalar: Unicode.Scalar, _ kept: Kept) -> Bool {
        switch scalar {
        case "\t": kept.contains(.tab)
        case "\n": kept.contains(.lineFeed)
        case "\r": kept.contains(.carriageReturn)
        default: false
        }
    }
}
