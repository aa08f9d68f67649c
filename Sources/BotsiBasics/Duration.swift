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

    /// `%.1f` without Foundation: rounded to the nearest tenth.
    private static func tenths(_ seconds: Double) -> String {
        let scaled = Int((seconds * 10).rounded())
        return "\(scaled / 10).\(scaled % 10)"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
