extension Basics {
    /// Edits between two names, for "did you mean": insertions, deletions, substitutions and
    /// swaps of two neighbouring characters each count one (optimal string alignment), and case
    /// is ignored.
    ///
    /// Why this rule: a swap (`--jbo`) is the commonest slip at a keyboard and should cost what a
    /// single wrong letter costs; and the names it serves mix cases (job-file keys are camelCase,
    /// people type `maxattempts` or `max_attempts`), which is no reason not to recognise them.
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased())
        let b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // Three rows of the table: the one before last is needed for swaps.
        var beforeLast = [Int](repeating: 0, count: b.count + 1)
        var last = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = last[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(last[j] + 1, current[j - 1] + 1, substitution)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforeLast[j - 2] + 1)
                }
            }
            (beforeLast, last, current) = (last, current, beforeLast)
        }
        return last[b.count]
    }

    /// The known name nearest to a mistyped one, when it is near enough to be a slip: at most one
    /// edit per three characters typed, and always one. A short name must be nearly exact (two
    /// edits turn a three-letter word into another word), a long one may hold a couple of slips;
    /// anything farther is not suggested at all, because a wrong suggestion misleads more than
    /// none. Ties go to the name listed first.
    public static func nearest(to typed: String, among names: [String]) -> String? {
        let allowed = max(1, typed.count / 3)
        var best: (name: String, distance: Int)?
        for name in names {
            let distance = editDistance(typed, name)
            if distance <= allowed, distance < (best?.distance ?? Int.max) { best = (name, distance) }
        }
        return best?.name
    }
}
