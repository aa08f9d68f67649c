import Glibc

extension Basics {
    /// A duration for people: `4.2s`, `3m07s`, `2h05m`; `?` for what is not one (negative, infinite,
    /// not a number), so that a broken clock or an empty estimate cannot trap the conversion.
    ///
    /// Below a minute it shows tenths, which a short run's summary needs; `wholeSeconds` drops them
    /// where the figure is an estimate anyway (an ETA), so the progress line does not flicker.
    public static func duration(_ seconds: Double, wholeSeconds: Bool = false) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 60 { return wholeSeconds ? "\(Int(seconds))s" : tenths(seconds) + "s" }
        let whole = seconds < Double(Int.max) ? Int(seconds) : Int.max
        if whole < 3600 { return "\(whole / 60)m\(twoDigits(whole % 60))s" }
        return "\(whole / 3600)h\(twoDigits((whole % 3600) / 60))m"
    }

    /// A number of seconds someone stated, such as a `Retry-After` header or a `--retry-after-cap` flag:
    /// `12 s`, `0.05 s`, `2.30242e+09 s` (whole numbers below 10⁹ as they are, others as `%g`, so a
    /// timestamp sent where a delay belongs stays short). `duration` is for time that has passed, in
    /// the unit that reads at a glance (`3m07s`); this one stays in seconds, the unit the value was given in.
    public static func seconds(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), abs(seconds) < 1e9 { return "\(Int(seconds)) s" }
        // `%g` from the C library: Foundation's `String(format:)` calls the same, and this target has none.
        var buffer = [CChar](repeating: 0, count: 32)
        let length = withVaList([seconds]) { vsnprintf(&buffer, buffer.count, "%g", $0) }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) + " s"
    }

    /// A duration as an option takes it back (`7d`, `12h`, `90m`, `30s`, `500ms`): the largest unit
    /// that holds it whole, so a command built from a run's options reads as it was typed.
    public static func durationOption(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e15 else { return "\(seconds)" }
        let units: [(suffix: String, scale: Double)] = [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
        for unit in units where seconds >= unit.scale || unit.scale == 1 {
            let count = seconds / unit.scale
            if count == count.rounded() { return "\(Int(count))\(unit.suffix)" }
        }
        let milliseconds = seconds * 1000
        if milliseconds == milliseconds.rounded() { return "\(Int(milliseconds))ms" }
        return "\(seconds)"
    }

    /// `%.1f` without Foundation: rounded to the nearest tenth.
    private static func tenths(_ seconds: Double) -> String {
        let scaled = Int((seconds * 10).rounded())
        return "\(scaled / 10).\(scaled % 10)"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

extension Basics {
    /// `1 request`, `2 requests`: a count with its noun in the number it takes.
    public static func count(_ count: Int, _ singular: String, _ plural: String) -> String {
        "\(count) \(count == 1 ? singular : plural)"
    }
}
