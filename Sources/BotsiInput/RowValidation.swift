import BotsiBasics

/// A field as a reader found it, before validation.
enum FieldInput {
    /// The column or key is not there (a short CSV record, a JSON object without the key).
    case absent
    /// JSON `null`: treated like an empty value, so it is reported as missing.
    case null
    /// The text of the field: CSV content with quotes collapsed, a decoded JSON string, or a
    /// JSON number token exactly as written.
    case text(UnsafeBufferPointer<UInt8>)
    /// A JSON value that cannot be an id (boolean, object, array), with its source text.
    case wrongType(kind: String, source: UnsafeBufferPointer<UInt8>)
}

/// The rules a row must pass before anything is sent.
///
/// - Both fields are trimmed of Unicode whitespace (spaces, tabs, no-break spaces…) at both ends.
/// - `profileId`: non-empty, at most 128 Unicode scalars, valid UTF-8, no control characters
///   (Unicode category Cc, which includes NUL), and no invisible ones (`VisibleText.isInvisible`:
///   format characters such as bidi marks, zero-width spaces and joiners, the byte-order mark,
///   U+2028/U+2029, variation selectors, tag characters…): an id holding one prints like another
///   id and would be sent as a pair of its own. The message names the code point.
/// - `originalTransactionId`: 1–20 ASCII digits whose value fits `UInt64`. A leading zero is
///   rejected as `invalid_transaction_id`: Apple's ids never start with 0, so a zero-padded id
///   was rewritten by some tool, and stripping the zeros would be a guess about which id was meant.
///   Text that looks like scientific notation (`2.00000E+15`, `2E15`, `2,5e+15`) is rejected as
///   `scientific_notation`, since a spreadsheet has already lost digits of the real id.
enum RowValidation {
    static let maxProfileIdScalars = 128
    static let maxTransactionIdDigits = 20
    /// Raw values kept for the journal are cut to this many Unicode scalars.
    static let maxRawValueScalars = 256

    enum Check {
        case valid(String)
        case rejected(RejectionReason, String)
    }

    static func record(line: Int, profile: FieldInput, transaction: FieldInput) -> InputRecord {
        let profileCheck = checkProfile(profile)
        let transactionCheck = checkTransaction(transaction)
        switch (profileCheck, transactionCheck) {
        case (.valid(let profileId), .valid(let transactionId)):
            return .row(InputRow(profileId: profileId, originalTransactionId: transactionId, line: line))
        case (.rejected(let reason, let message), _), (_, .rejected(let reason, let message)):
            return .rejected(
                RejectedRow(
                    line: line, reason: reason, message: message, profileId: rawValue(profile),
                    originalTransactionId: rawValue(transaction)))
        }
    }

    /// The field as read, for the journal: lossy UTF-8, cut to `maxRawValueScalars`.
    static func rawValue(_ field: FieldInput) -> String? {
        switch field {
        case .absent: nil
        case .null: "null"
        case .text(let bytes), .wrongType(_, let bytes): truncated(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A signed transaction's or receipt's opening, for the transaction column of a row rejected
    /// before it gave an id: enough to recognise it (`eyJhbGciOi…`, `MIIT…`), not kilobytes of
    /// base64 in every report (its file and line say where the whole is).
    static func proofOpening(_ field: FieldInput) -> String? {
        guard let raw = rawValue(field) else { return nil }
        let scalars = raw.unicodeScalars
        guard scalars.count > maxProofOpeningScalars else { return raw }
        return String(String.UnicodeScalarView(scalars.prefix(maxProofOpeningScalars))) + "…"
    }

    static let maxProofOpeningScalars = 24

    static func truncated(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > maxRawValueScalars else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(maxRawValueScalars))) + "…"
    }

    /// The value quoted for a message: controls and invisible characters escaped, cut to 64 scalars.
    static func display(_ text: String) -> String {
        VisibleText.quoted(text)
    }

    private static func display(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        display(String(decoding: bytes, as: UTF8.self))
    }

    // MARK: profileId

    static func checkProfile(_ field: FieldInput) -> Check {
        let bytes: UnsafeBufferPointer<UInt8>
        switch field {
        case .absent, .null:
            return .rejected(.missingProfileId, "profileId is missing.")
        case .wrongType(let kind, let source):
            return .rejected(
                .invalidProfileId, "profileId is \(kind) (\(display(source))), but it must be a string.")
        case .text(let text):
            bytes = text
        }
        switch trimmed(bytes) {
        case .invalidUTF8:
            return .rejected(
                .invalidProfileId,
                "profileId \(display(bytes)) is not valid UTF-8 text; export the file as CSV UTF-8, or pass --encoding windows-1252 if Excel on Windows wrote it."
            )
        case .empty:
            return .rejected(.missingProfileId, "profileId is empty.")
        case .ascii(let range):
            let value = UnsafeBufferPointer(rebasing: bytes[range])
            for byte in value where byte < 0x20 || byte == 0x7F {
                return .rejected(
                    .invalidProfileId, "profileId \(display(value)) contains a control character.")
            }
            guard value.count <= maxProfileIdScalars else {
                return .rejected(
                    .invalidProfileId,
                    "profileId \(display(value)) is \(value.count) characters long; at most \(maxProfileIdScalars) are allowed."
                )
            }
            return .valid(String(decoding: value, as: UTF8.self))
        case .unicode(let text):
            if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return .rejected(.invalidProfileId, "profileId \(display(text)) contains a control character.")
            }
            if let invisible = text.unicodeScalars.first(where: VisibleText.isInvisible) {
                return .rejected(
                    .invalidProfileId,
                    "profileId \(display(text)) contains \(VisibleText.describe(invisible)), an invisible character, so it looks like another id; remove it from the export."
                )
            }
            let count = text.unicodeScalars.count
            guard count <= maxProfileIdScalars else {
                return .rejected(
                    .invalidProfileId,
                    "profileId \(display(text)) is \(count) characters long; at most \(maxProfileIdScalars) are allowed."
                )
            }
            return .valid(text)
        }
    }

    // MARK: originalTransactionId

    static func checkTransaction(_ field: FieldInput) -> Check {
        let bytes: UnsafeBufferPointer<UInt8>
        switch field {
        case .absent, .null:
            return .rejected(.missingTransactionId, "originalTransactionId is missing.")
        case .wrongType(let kind, let source):
            return .rejected(
                .invalidTransactionId,
                "originalTransactionId is \(kind) (\(display(source))), but it must be a string or number of digits.")
        case .text(let text):
            bytes = text
        }
        let value: String
        switch trimmed(bytes) {
        case .invalidUTF8:
            return .rejected(
                .invalidTransactionId,
                "originalTransactionId \(display(bytes)) is not valid UTF-8 text; it must be digits only.")
        case .empty:
            return .rejected(.missingTransactionId, "originalTransactionId is empty.")
        case .ascii(let range):
            let digits = UnsafeBufferPointer(rebasing: bytes[range])
            if digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                return checkDigits(digits)
            }
            value = String(decoding: digits, as: UTF8.self)
        case .unicode(let text):
            // Trimming non-ASCII whitespace (a no-break space) may leave plain digits.
            if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                var digits = text
                return digits.withUTF8 { checkDigits($0) }
            }
            value = text
        }
        if looksLikeScientificNotation(value) {
            return .rejected(
                .scientificNotation,
                "originalTransactionId \(display(value)) is in scientific notation: a spreadsheet probably rewrote the id; export the column as text."
            )
        }
        return .rejected(.invalidTransactionId, describeNonDigits(value))
    }

    private static func checkDigits(_ digits: UnsafeBufferPointer<UInt8>) -> Check {
        let text = String(decoding: digits, as: UTF8.self)
        if digits[0] == UInt8(ascii: "0") {
            return .rejected(
                .invalidTransactionId,
                "originalTransactionId \(display(text)) starts with 0, which Apple's ids never do; the id was probably padded or changed, so export it unchanged."
            )
        }
        // Only a 20-digit number can exceed UInt64.max (20 digits long itself).
        guard digits.count < maxTransactionIdDigits || (digits.count == maxTransactionIdDigits && UInt64(text) != nil)
        else {
            return .rejected(
                .invalidTransactionId,
                "originalTransactionId \(display(text)) is larger than the largest possible id (\(UInt64.max)); check the column."
            )
        }
        return .valid(text)
    }

    /// `[sign] digits [(.|,) digits] (e|E) [sign] digits`, or a mantissa that starts with the separator.
    static func looksLikeScientificNotation(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        func dropDigits() -> Int {
            let before = bytes.count
            while let byte = bytes.first, isDigit(byte) { bytes = bytes.dropFirst() }
            return before - bytes.count
        }
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var mantissaDigits = dropDigits()
        if let separator = bytes.first, separator == UInt8(ascii: ".") || separator == ASCII.comma {
            bytes = bytes.dropFirst()
            mantissaDigits += dropDigits()
        }
        guard mantissaDigits > 0, let marker = bytes.first, marker == UInt8(ascii: "e") || marker == UInt8(ascii: "E")
        else { return false }
        bytes = bytes.dropFirst()
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        return dropDigits() > 0 && bytes.isEmpty
    }

    private static func describeNonDigits(_ value: String) -> String {
        let shown = display(value)
        let scalars = Array(value.unicodeScalars)
        if let invisible = scalars.first(where: VisibleText.isInvisible) {
            return
                "originalTransactionId \(shown) contains \(VisibleText.describe(invisible)), an invisible character; it must be digits only."
        }
        func isASCIIDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }
        let isFullWidthDigit = { (scalar: Unicode.Scalar) in scalar.value >= 0xFF10 && scalar.value <= 0xFF19 }
        if scalars.contains(where: isFullWidthDigit) && scalars.allSatisfy({ isASCIIDigit($0) || isFullWidthDigit($0) })
        {
            return
                "originalTransactionId \(shown) contains full-width digits; it must be written with ASCII digits 0-9."
        }
        if scalars.contains(where: { $0.properties.isWhitespace }) {
            return "originalTransactionId \(shown) contains whitespace; it must be digits only."
        }
        if let first = scalars.first, first == "+" || first == "-",
            scalars.dropFirst().allSatisfy(isASCIIDigit)
        {
            return "originalTransactionId \(shown) has a sign; it must be digits only."
        }
        let separators = scalars.filter { $0 == "." || $0 == "," }
        if !separators.isEmpty && scalars.allSatisfy({ isASCIIDigit($0) || $0 == "." || $0 == "," || $0 == "-" }) {
            return
                "originalTransactionId \(shown) is not a whole number of digits: a spreadsheet probably formatted or rounded the id; export the column as text."
        }
        if scalars.contains(where: { $0.properties.isAlphabetic }) {
            return
                "originalTransactionId \(shown) contains letters; it must be 1-20 digits (are the columns mixed up?)."
        }
        return "originalTransactionId \(shown) must be 1-20 digits (0-9) and nothing else."
    }

    // MARK: trimming

    private enum Trimmed {
        case empty
        case invalidUTF8
        /// All bytes ASCII: the trimmed range.
        case ascii(Range<Int>)
        /// Non-ASCII text, validated and trimmed.
        case unicode(String)
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> Trimmed {
        var isASCII = true
        for byte in bytes where byte >= 0x80 {
            isASCII = false
            break
        }
        if isASCII {
            var lower = 0
            var upper = bytes.count
            while lower < upper && isASCIIWhitespace(bytes[lower]) { lower += 1 }
            while upper > lower && isASCIIWhitespace(bytes[upper - 1]) { upper -= 1 }
            return lower == upper ? .empty : .ascii(lower..<upper)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .invalidUTF8 }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return .empty }
        return .unicode(String(scalars[first...last]))
    }

    @inline(__always)
    private static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
        byte == ASCII.space || (byte >= 0x09 && byte <= 0x0D)
    }
}
