import BotsiBasics
import Foundation

/// A run's options as `run` takes them: how `status` shows the run a journal recorded.
extension RunOptions {
    /// The options that differ from the defaults, as one would type them (`--stop-at 06:30`,
    /// `--refresh-older-than 7d`), in the order `run --help` lists them: never an internal field
    /// name, a default, or a number of seconds since 2001. The inputs and the journal are not
    /// among them (`status` shows them on lines of their own), nor is the key, which is never an
    /// option.
    public var arguments: [String] {
        let defaults = RunOptions()
        var words: [String] = []
        func add(_ flag: String, _ value: String?) { if let value { words += [flag, value] } }
        func add(_ flag: String, _ on: Bool) { if on { words.append(flag) } }
        func add(_ flag: String, _ value: Double, _ fallback: Double, duration: Bool = true) {
            if value != fallback { words += [flag, duration ? Basics.durationOption(value) : Self.number(value)] }
        }
        func add(_ flag: String, _ value: Int, _ fallback: Int) {
            if value != fallback { words += [flag, "\(value)"] }
        }
        // Input
        add("--format", format)
        add("--profile-column", profileColumn)
        add("--transaction-column", transactionColumn)
        add("--delimiter", delimiter)
        add("--encoding", encoding)
        add("--no-header", noHeader)
        add("--bundle-id", bundleId)
        add("--environment", environment)
        // Journal
        add("--retry-failed", retryFailed)
        add("--refresh-older-than", refreshOlderThan.map(Basics.durationOption))
        add("--answered-before", answeredBefore)
        if onConflict != defaults.onConflict { add("--on-conflict", onConflict.rawValue) }
        add("--release-held", releaseHeld)
        add("--dry-run", dryRun)
        for path in forgetInputs { add("--forget-input", path) }
        // API
        if baseURL != defaults.baseURL { add("--base-url", baseURL) }
        if keyEnvironmentVariable != defaults.keyEnvironmentVariable { add("--key-env", keyEnvironmentVariable) }
        add("--key-file", keyFile)
        add("--proxy", proxy)
        add("--no-proxy", noProxy)
        add("--cacert", caCertificatePath)
        add("--insecure-skip-tls-verify", insecureSkipTLSVerify)
        // Pace and retries
        add("--concurrency", concurrency, defaults.concurrency)
        add("--max-attempts", maxAttempts, defaults.maxAttempts)
        add("--timeout", timeout, defaults.timeout)
        add("--connect-timeout", connectTimeout, defaults.connectTimeout)
        add("--backoff-base", backoffBase, defaults.backoffBase)
        add("--backoff-cap", backoffCap, defaults.backoffCap)
        add("--retry-after-cap", retryAfterCap, defaults.retryAfterCap)
        add("--rate", rate.map(Self.number))
        add("--no-adaptive", !adaptive)
        if headroom != defaults.headroom { add("--headroom", Self.number(headroom) + "%") }
        add("--max-failure-rate", maxFailureRate, defaults.maxFailureRate, duration: false)
        add("--min-sample", minSample, defaults.minSample)
        add("--seed", seed.map { "\($0)" })
        // Time window: as given; the deadline they made is shown apart (a run of an older version
        // recorded only the deadline).
        add("--max-duration", maxDuration.map(Basics.durationOption))
        add("--stop-at", stopAt)
        // Sharding
        if shardCount > 1 { add("--shard", "\(shardIndex)/\(shardCount)") }
        add("--job-rate", jobRate.map(Self.number))
        return words
    }

    /// The options a run recorded (`runs.options`), with this version's defaults for what an older
    /// version did not record; a field of another shape (a hand edit) is left at its default
    /// rather than losing the rest. Nil when the text is not a JSON object.
    public static func recorded(_ json: String) -> RunOptions? {
        guard let recorded = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let defaults = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(RunOptions())) as? [String: Any]
        else { return nil }
        func decode(_ object: [String: Any]) -> RunOptions? {
            guard let data = try? JSONSerialization.data(withJSONObject: object) else { return nil }
            return try? JSONDecoder().decode(RunOptions.self, from: data)
        }
        if let options = decode(defaults.merging(recorded) { $1 }) { return options }
        var merged = defaults
        for (key, value) in recorded where decode(merged.merging([key: value]) { $1 }) != nil { merged[key] = value }
        return decode(merged)
    }

    /// `20`, `12.5`: a number as one types it.
    static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return "\(Int(value))" }
        // Never an exponent (1e-05), which the options do not read back.
        var text = String(format: "%.6f", value)
        while text.hasSuffix("0") { text.removeLast() }
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }
}
