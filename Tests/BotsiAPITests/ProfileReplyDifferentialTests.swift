import BotsiAPI
import BotsiBasics
import Foundation
import Testing

/// The hand-written 200 decoder against what the reply means: random replies written with every
/// freedom JSON allows (whitespace, key order, escapes, numbers' forms, fields of the wrong type,
/// fields it skips) must give the profile their model says, and the same replies broken by one
/// byte must give nothing wherever Foundation's parser refuses them too. Seeded; a failure
/// prints the seed and the body.
@Suite struct ProfileReplyDifferentialTests {
    /// A JSON value as the generator builds it.
    indirect enum Value {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case array([Value])
        case object([(key: String, value: Value)])
    }

    struct Writer {
        var random: SplitMix64

        mutating func chance(_ share: Double) -> Bool { random.nextUnit() < share }
        mutating func pick<T>(_ choices: [T]) -> T { choices[random.nextIndex(below: choices.count)] }

        /// Whitespace between tokens: none most often, as a server writes it.
        mutating func space() -> String {
            guard chance(0.3) else { return "" }
            return (0..<(1 + random.nextIndex(below: 3))).map { _ in pick([" ", "\n", "\r", "\t"]) }.joined()
        }

        /// A number in any of JSON's forms. Its exponent has one digit: a byte inserted there makes at
        /// most two, which Foundation's parser still reads (it refuses what overflows a Double,
        /// which JSON allows and the decoder rightly skips).
        mutating func number() -> String {
            var text = chance(0.3) ? "-" : ""
            text += chance(0.2) ? "0" : String(1 + random.nextIndex(below: 9)) + digits(random.nextIndex(below: 4))
            if chance(0.3) { text += "." + digits(1 + random.nextIndex(below: 3)) }
            if chance(0.3) {
                text += pick(["e", "E"]) + pick(["", "+", "-"]) + digits(1)
            }
            return text
        }

        mutating func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(random.nextIndex(below: 10))) })
        }

        /// Text with what a JSON string must escape, non-ASCII text and characters beyond the BMP.
        mutating func text() -> String {
            let pieces = [
                "a", "Z", "7", "-", "_", " ", "\"", "\\", "/", "\n", "\t", "\u{08}", "\u{0C}", "\r",
                "\u{01}", "\u{1F}", "é", "€", "😀", "\u{7F}", "premium", "2027-10-07T00:00:00Z",
            ]
            return (0..<random.nextIndex(below: 6)).map { _ in pick(pieces) }.joined()
        }

        /// `text` as a JSON string literal, each character written plainly or escaped at random.
        mutating func literal(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += chance(0.5) ? "\\\"" : unicodeEscape(scalar)
                case "\\": out += chance(0.5) ? "\\\\" : unicodeEscape(scalar)
                case "\u{08}": out += chance(0.5) ? "\\b" : unicodeEscape(scalar)
                case "\u{0C}": out += chance(0.5) ? "\\f" : unicodeEscape(scalar)
                case "\n": out += chance(0.5) ? "\\n" : unicodeEscape(scalar)
                case "\r": out += chance(0.5) ? "\\r" : unicodeEscape(scalar)
                case "\t": out += chance(0.5) ? "\\t" : unicodeEscape(scalar)
                case "/": out += chance(0.3) ? "\\/" : "/"
                default:
                    if scalar.value < 0x20 || chance(0.1) {
                        out += unicodeEscape(scalar)
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            return out + "\""
        }

        /// `\uXXXX`, a surrogate pair beyond the BMP, in either case of hex digit.
        mutating func unicodeEscape(_ scalar: Unicode.Scalar) -> String {
            let units = Array(String(scalar).utf16)
            let upper = chance(0.5)
            return units.map { unit in
                let hex = String(unit, radix: 16)
                let padded = String(repeating: "0", count: 4 - hex.count) + hex
                return "\\u" + (upper ? padded.uppercased() : padded)
            }.joined()
        }

        mutating func write(_ value: Value) -> String {
            switch value {
            case .null: return "null"
            case .bool(let flag): return flag ? "true" : "false"
            case .number(let text): return text
            case .string(let text): return literal(text)
            case .array(let items):
                return "[" + space() + items.map { write($0) }.joined(separator: space() + "," + space()) + space()
                    + "]"
            case .object(let fields):
                let members = fields.map { field in
                    literal(field.key) + space() + ":" + space() + write(field.value)
                }
                return "{" + space() + members.joined(separator: space() + "," + space()) + space() + "}"
            }
        }

        /// A value the decoder skips, nested a few levels.
        mutating func anyValue(depth: Int = 0) -> Value {
            switch random.nextIndex(below: depth > 2 ? 4 : 6) {
            case 0: return .null
            case 1: return .bool(chance(0.5))
            case 2: return .number(number())
            case 3: return .string(text())
            case 4: return .array((0..<random.nextIndex(below: 4)).map { _ in anyValue(depth: depth + 1) })
            default:
                return .object(
                    (0..<random.nextIndex(below: 4)).map { index in ("x\(index)" + text(), anyValue(depth: depth + 1)) }
                )
            }
        }

        /// A field the decoder reads: a value of its type most often, else null or another type
        /// (lenient: nil), or absent.
        mutating func field<T>(_ key: String, _ typed: (T, Value)) -> (T?, [(String, Value)]) {
            switch random.nextIndex(below: 6) {
            case 0: return (nil, [])
            case 1: return (nil, [(key, .null)])
            case 2:
                var other = anyValue()
                if case .string = other, T.self == String.self { other = .number(number()) }
                if case .bool = other, T.self == Bool.self { other = .null }
                return (nil, [(key, other)])
            default: return (typed.0, [(key, typed.1)])
            }
        }

        mutating func shuffled(_ fields: [(String, Value)]) -> Value {
            var fields = fields.map { (key: $0.0, value: $0.1) }
            fields.shuffle(using: &random)
            return .object(fields)
        }

        /// A reply and the profile it carries (nil when `ok` is not true or `data` no object).
        mutating func reply() -> (body: String, expected: ProfileSnapshot?) {
            var profile = ProfileSnapshot()
            var fields: [(String, Value)] = []
            let id = text()
            let (profileId, idFields) = field("profileId", (id, .string(id)))
            let named = pick(["subscribed", "active", text()])
            let (state, stateFields) = field("state", (named, .string(named)))
            profile.profileId = profileId
            profile.state = state
            fields += idFields + stateFields
            if chance(0.8) {
                var levels: [(String, Value)] = []
                for index in 0..<random.nextIndex(below: 4) {
                    let name = pick(["premium", "pro", "", "é😀"]) + "\(index)"
                    guard chance(0.85) else {
                        levels.append((name, pick([.null, .number("1"), .string(text()), .array([])])))
                        continue
                    }
                    var level = AccessLevelSnapshot()
                    var levelFields: [(String, Value)] = []
                    let flags = (chance(0.5), chance(0.5))
                    let texts = (text(), text())
                    let (active, a) = field("isActive", (flags.0, .bool(flags.0)))
                    let (renew, w) = field("willRenew", (flags.1, .bool(flags.1)))
                    let (expires, e) = field("expiresAt", (texts.0, .string(texts.0)))
                    let (product, p) = field("sourceProductId", (texts.1, .string(texts.1)))
                    level.isActive = active
                    level.willRenew = renew
                    level.expiresAt = expires
                    level.sourceProductId = product
                    levelFields = a + w + e + p
                    for extra in 0..<random.nextIndex(below: 3) { levelFields.append(("x\(extra)", anyValue())) }
                    if chance(0.3) {
                        levelFields.append((pick(["isActiveSince", "willRenewal", "expiresAtUtc"]), anyValue()))
                    }
                    levels.append((name, shuffled(levelFields)))
                    profile.accessLevels[name] = level
                }
                fields.append(("accessLevels", shuffled(levels)))
            } else if chance(0.5) {
                fields.append(("accessLevels", pick([.null, .array([]), .string("premium")])))
            }
            for extra in 0..<random.nextIndex(below: 3) { fields.append(("x\(extra)", anyValue())) }
            // Names that begin with a field's and go on: not the field.
            if chance(0.3) { fields.append((pick(["stateX", "profileId_", "accessLevelsOld"]), anyValue())) }
            var top: [(String, Value)] = []
            var expected: ProfileSnapshot? = profile
            switch random.nextIndex(below: 10) {
            case 0: break
            case 1: top.append(("ok", .null))
            case 2:
                top.append(("ok", .bool(false)))
                expected = nil
            default: top.append(("ok", .bool(true)))
            }
            switch random.nextIndex(below: 12) {
            case 0: expected = nil
            case 1:
                top.append(("data", pick([.null, .array([]), .string("x"), .number("0")])))
                expected = nil
            default: top.append(("data", shuffled(fields)))
            }
            for extra in 0..<random.nextIndex(below: 3) { top.append(("x\(extra)", anyValue())) }
            if chance(0.3) { top.append((pick(["okay", "dataset"]), anyValue())) }
            return (space() + write(shuffled(top)) + space(), expected)
        }
    }

    private func decoded(_ body: [UInt8]) -> ProfileSnapshot? {
        guard case .restored(let snapshot) = classifyReply(httpStatus: 200, body: body, retryAfter: nil) else {
            return nil
        }
        return snapshot
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomRepliesGiveTheProfileTheyCarry(seed: UInt64) {
        var writer = Writer(random: SplitMix64(seed: seed))
        for _ in 0..<1_000 {
            let (body, expected) = writer.reply()
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(body.utf8))) != nil,
                "seed \(seed): the test wrote bad JSON: \(body)")
            let got = decoded(Array(body.utf8))
            #expect(got == expected, "seed \(seed): \(body)")
            if got != expected { return }
        }
    }

    /// One byte deleted, inserted, changed, or the body cut short: whatever Foundation's parser
    /// refuses, the decoder refuses too (a 200 it cannot read is retried, never recorded).
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func repliesBrokenByOneByteAreRefusedWhereTheParserRefusesThem(seed: UInt64) {
        var writer = Writer(random: SplitMix64(seed: seed))
        let bytes: [UInt8] =
            Array("{}[]:,\"\\ 0123456789.eE+-tfnula\u{0C}\u{0B}\u{01}x".utf8) + [0xC3, 0xFF, 0x80, 0x00]
        var refused = 0
        for _ in 0..<3_000 {
            var body = Array(writer.reply().body.utf8)
            guard !body.isEmpty else { continue }
            let at = writer.random.nextIndex(below: body.count)
            switch writer.random.nextIndex(below: 4) {
            case 0: body.remove(at: at)
            case 1: body.insert(writer.pick(bytes), at: at)
            case 2: body[at] = writer.pick(bytes)
            default: body.removeSubrange(at...)
            }
            guard (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] == nil else { continue }
            refused += 1
            let got = decoded(body)
            #expect(
                got == nil,
                "seed \(seed): read \(String(describing: got)) from \(String(decoding: body, as: UTF8.self).debugDescription)"
            )
            if got != nil { return }
        }
        #expect(refused > 1_000, "seed \(seed): only \(refused) broken bodies")
    }
}
