import BotsiBasics
import BotsiFiles
import BotsiJournal
import Foundation

/// What to do after a run, in words that name the journal and give a command that does what they
/// say: the same service, key, CA, pace and shard as the run, so it sends what the journal owes.
public enum RunAdvice {
    /// The options that continue a selection run started at `startedAt` that stopped before it
    /// took up all it chose: the final rows it did get to were answered after its start, and are
    /// left out (`--answered-before`), so that a window-bound run gets through its selection.
    public static func continuingSelection(_ options: RunOptions, startedAt: Date) -> RunOptions {
        guard options.retryFailed || options.refreshOlderThan != nil else { return options }
        var continued = options
        let earlier = options.answeredBefore.flatMap(Timestamp.date)
        continued.answeredBefore = Timestamp.string(min(earlier ?? startedAt, startedAt))
        return continued
    }

    /// The systemd unit whose key file this is (`LoadCredential=` hands it in
    /// `/run/credentials/UNIT/`, or `$XDG_RUNTIME_DIR/credentials/UNIT/` for a user's unit, which
    /// is `/run/user/UID/credentials/UNIT/`): that file exists only while the unit runs, so the
    /// command that goes on is the unit's own, not a run that names the file.
    public static func credentialUnit(ofKeyFile path: String?) -> (name: String, user: Bool)? {
        guard let path, path.hasPrefix("/run/") else { return nil }
        var parts = path.dropFirst("/run/".count).split(separator: "/", omittingEmptySubsequences: false)
        let user = parts.count == 5 && parts[0] == "user" && !parts[1].isEmpty && parts[1].allSatisfy(\.isNumber)
        if user { parts.removeFirst(2) }
        // `@system` holds credentials the machine was given, not a unit's.
        guard parts.count == 3, parts[0] == "credentials", !parts[1].isEmpty, !parts[1].hasPrefix("@"),
            !parts[2].isEmpty
        else { return nil }
        return (String(parts[1]), user)
    }

    /// What sends what the journal owes: `command`, or `systemctl start UNIT` (`--user` for a
    /// user's unit) for a run whose key systemd handed to its unit (the unit runs the same job,
    /// with the key).
    public static func continuing(_ command: String, keyFile: String?) -> String {
        guard let unit = credentialUnit(ofKeyFile: keyFile) else { return command }
        return "systemctl \(unit.user ? "--user " : "")start \(shellQuoted(unit.name))"
    }

    /// `run --release-held` with the run's service, key and pace: the held rows, sent after review.
    public static func releaseCommand(_ options: RunOptions) -> String {
        var release = options
        (release.retryFailed, release.refreshOlderThan, release.releaseHeld) = (false, nil, true)
        // The unit's own command does not release held rows, and its key file is gone once it
        // ends: the person who reviewed them names the key's file.
        if credentialUnit(ofKeyFile: release.keyFile) != nil { release.keyFile = "KEY_FILE" }
        return runCommand(release, selection: true)
    }

    /// `botsi-restore run [INPUT...] --journal J ...`: without inputs it sends the rows the journal
    /// owes; with them it also reads them (finished rows are skipped). `selection`: also choose the
    /// final rows the run chose (`--retry-failed`, `--refresh-older-than`, `--release-held`), for a
    /// run that stopped before it took them all up.
    public static func runCommand(_ options: RunOptions, inputs: [String] = [], selection: Bool = false) -> String {
        let defaults = RunOptions()
        let options = options.advisesAbsolutePaths ? absolutePaths(options) : options
        // An input named like an option (`-big.csv`) would be taken for one: `./-big.csv` is the file.
        let inputs =
            options.advisesAbsolutePaths
            ? inputs.map(realPath) : inputs.map { $0.hasPrefix("-") && $0 != "-" ? "./" + $0 : $0 }
        var words = ["botsi-restore", "run"] + inputs + ["--journal", options.journalPath]
        if selection {
            if options.retryFailed { words.append("--retry-failed") }
            if let age = options.refreshOlderThan { words += ["--refresh-older-than", Basics.durationOption(age)] }
            if let before = options.answeredBefore, options.retryFailed || options.refreshOlderThan != nil {
                words += ["--answered-before", before]
            }
            if options.releaseHeld { words.append("--release-held") }
        }
        if !inputs.isEmpty {
            if let format = options.format { words += ["--format", format] }
            if let delimiter = options.delimiter { words += ["--delimiter", delimiter] }
            if let encoding = options.encoding { words += ["--encoding", encoding] }
            if options.noHeader { words.append("--no-header") }
            if let column = options.profileColumn { words += ["--profile-column", column] }
            if let column = options.transactionColumn { words += ["--transaction-column", column] }
            // The filters the run read with: without them the rows it refused are sent.
            if let bundle = options.bundleId { words += ["--bundle-id", bundle] }
            if let environment = options.environment { words += ["--environment", environment] }
        }
        if options.onConflict != defaults.onConflict { words += ["--on-conflict", options.onConflict.rawValue] }
        if options.baseURL != defaults.baseURL { words += ["--base-url", options.baseURL] }
        if options.keyEnvironmentVariable != defaults.keyEnvironmentVariable {
            words += ["--key-env", options.keyEnvironmentVariable]
        }
        // What the next run needs to reach the service with the same key, to keep to the budget
        // the job was given and to stop where the job would (a reviewer: the command without
        // --key-file exited 64, a shard's without --job-rate paced as if alone, and one without
        // --max-failure-rate 20 went on to 50%). Retries, timeouts and the time window are this
        // run's own and stay out: the command is short enough to read.
        if let path = options.keyFile { words += ["--key-file", path] }
        if let proxy = options.proxy { words += ["--proxy", proxy] }
        if options.noProxy { words.append("--no-proxy") }
        if let path = options.caCertificatePath { words += ["--cacert", path] }
        if options.insecureSkipTLSVerify { words.append("--insecure-skip-tls-verify") }
        let concurrency = options.concurrencyAsked ?? options.concurrency
        if concurrency != defaults.concurrency { words += ["--concurrency", "\(concurrency)"] }
        if let rate = options.rate { words += ["--rate", RunOptions.number(rate)] }
        if !options.adaptive { words.append("--no-adaptive") }
        if options.headroom != defaults.headroom { words += ["--headroom", RunOptions.number(options.headroom) + "%"] }
        if options.shardCount > 1 { words += ["--shard", "\(options.shardIndex)/\(options.shardCount)"] }
        if let rate = options.jobRate { words += ["--job-rate", RunOptions.number(rate)] }
        if options.maxFailureRate != defaults.maxFailureRate {
            words += ["--max-failure-rate", RunOptions.number(options.maxFailureRate)]
        }
        if options.minSample != defaults.minSample { words += ["--min-sample", "\(options.minSample)"] }
        return words.map(shellQuoted).joined(separator: " ")
    }

    /// The journal, key file and CA file of `options` named from `/`, as a job's advice names them.
    public static func absolutePaths(_ options: RunOptions) -> RunOptions {
        var options = options
        options.journalPath = realPath(options.journalPath)
        options.keyFile = options.keyFile.map(realPath)
        options.caCertificatePath = options.caCertificatePath.map(realPath)
        return options
    }

    /// The file `path` names, links and `..` resolved as the system does (`data/../j.sqlite`
    /// through a linked `data` is not `./j.sqlite`); a path to nothing, from the working directory.
    public static func realPath(_ path: String) -> String {
        guard path != "-", let resolved = ResolvedPath.realPath(path) else { return absolutePath(path) }
        return resolved
    }

    /// What an input is, however it was named: its real path (links and `..` resolved), so that a
    /// file read through a link and through its own path is one input; for a file that is gone,
    /// its directory's real path and its name; `-` as itself.
    public static func inputIdentity(_ path: String) -> String {
        guard path != "-" else { return path }
        if let resolved = ResolvedPath.realPath(path) { return resolved }
        // A directory that is gone too is named from the working directory (`realPath`'s fallback).
        let absolute = URL(fileURLWithPath: absolutePath(path))
        let directory = absolute.deletingLastPathComponent().path
        return URL(fileURLWithPath: realPath(directory), isDirectory: true)
            .appendingPathComponent(absolute.lastPathComponent).path
    }

    /// `path` from the working directory, or `-` (stdin) as itself.
    public static func absolutePath(_ path: String) -> String {
        guard path != "-" else { return path }
        let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        return URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL.path
    }

    /// `options` with how the run that named `unread` read its inputs (format, delimiter, encoding,
    /// header, columns) and its shard: an input an earlier run left unread is read again as that run
    /// read it, not as the latest run read its own (or nothing).
    public static func readingAs(_ unread: UnreadInput?, _ options: RunOptions) -> RunOptions {
        guard let unread else { return options }
        let naming = RecordedOptions(unread.options)
        var options = options
        options.format = naming.format
        options.delimiter = naming.delimiter
        options.encoding = naming.encoding
        options.noHeader = naming.noHeader ?? false
        options.profileColumn = naming.profileColumn
        options.transactionColumn = naming.transactionColumn
        options.bundleId = naming.bundleId
        options.environment = naming.environment
        options.shardIndex = naming.shardIndex ?? 0
        options.shardCount = naming.shardCount ?? 1
        return options
    }

    /// "read the input a run did not finish (a.csv)": the inputs named, since the run that left
    /// them unread may be an earlier one than the latest.
    public static func readAgain(_ unread: [String], by run: String) -> String {
        "read the input\(unread.count > 1 ? "s" : "") \(run) did not finish (\(unread.joined(separator: ", ")))"
    }

    /// A run of the journal without `--shard` and without inputs: it sends the owed rows an earlier
    /// split left to other shards, at no more than this shard's share of a `--job-rate`.
    public static func otherShardsCommand(_ options: RunOptions) -> String {
        var all = options
        all.inputs = []
        // This shard's cap (`--rate`, or its share of `--job-rate`) as a plain --rate.
        (all.rate, all.jobRate) = (options.rateCap, nil)
        (all.shardIndex, all.shardCount) = (0, 1)
        // A unit's key file is gone once it ends, and the unit runs its own shard: the person names the key.
        if credentialUnit(ofKeyFile: all.keyFile) != nil { all.keyFile = "KEY_FILE" }
        return runCommand(all, inputs: [], selection: true)
    }

    /// The owed rows a sharded run passed over as other shards', up to the command that sends them.
    public static func otherShardsOwed(_ count: Int, of run: String = "this run's") -> String {
        "the journal owes \(count) row\(count == 1 ? "" : "s") of other shards than \(run) (an earlier run "
            + "split the job another way, or not at all), which no run with its --shard sends: send "
            + "\(count == 1 ? "it" : "them") with"
    }

    /// Inputs a run did not read to their end whose files are gone: their rest was never sent.
    /// `paths`: the same inputs by the paths their runs recorded (real, from `/`), which the
    /// `--forget-input` advised names: a name typed relative to another run's directory would
    /// name another file here (or none).
    public static func goneInputs(_ gone: [String], paths: [String]? = nil) -> String {
        "\(gone.map(shellQuoted).joined(separator: ", ")), which a run did not read to its end, no longer "
            + "exist\(gone.count == 1 ? "s" : ""): the rows after that point were never sent; if it moved, name its "
            + "new path in a run to finish it; if it is not coming back, run again with "
            + (paths ?? gone).map { "--forget-input \(shellQuoted($0))" }.joined(separator: " ")
            + " to stop naming it (the rows already read from it stay in the journal)"
    }

    /// An input read to its end that holds fewer bytes than earlier runs had read of it before
    /// they stopped: the file was replaced by a shorter one (or another, shorter stream piped in),
    /// and what lay past its end in the earlier one was never read. The run counts it read (it
    /// read what is there).
    public static func shorterInput(_ path: String, bytes: Int64, earlierBytes: Int64, isStream: Bool = false)
        -> String
    {
        "warning: \(shellQuoted(path)) holds \(bytes) bytes, fewer than the "
            + "\(earlierBytes) bytes an earlier run had read of it before it stopped: "
            + (isStream ? "another, shorter export was piped in" : "it was replaced by a shorter file")
            + ", and the rows past that point in the earlier one were never read; this run read "
            + "the new \(isStream ? "stream" : "file") to its end and counts it read. "
            + keptEarlier(isStream: isStream)
    }

    /// An input read to its end whose first bytes, those an earlier run had read of it before it
    /// stopped, held rows that run never recorded: another file now has its name (another export
    /// was piped in), and what lay past that point in the earlier one may never have been read.
    public static func replacedInput(_ path: String, newRows: Int, earlierBytes: Int64, isStream: Bool = false)
        -> String
    {
        "warning: \(shellQuoted(path)) is not the \(isStream ? "stream" : "file") an earlier run stopped in: "
            + "\(Basics.count(newRows, "row", "rows")) within the first \(earlierBytes) bytes, which that run had "
            + "read, \(newRows == 1 ? "was" : "were") new to the journal. "
            + (isStream ? "Another export was piped in" : "It was replaced")
            + ", and the rows past that point in the earlier one may never have been read; this run read the new "
            + "\(isStream ? "stream" : "file") to its end and counts it read. " + keptEarlier(isStream: isStream)
    }

    private static func keptEarlier(isStream: Bool) -> String {
        isStream
            ? "If the earlier export is kept somewhere, pipe it into a run to send the rest"
            : "If the earlier file is kept somewhere, name it in a run to send the rest"
    }

    /// The unread inputs a run's `--forget-input` ended.
    /// A dry run's: those the run would end (it records nothing, so it ends none).
    public static func forgotten(_ forgotten: [String], dryRun: Bool = false) -> String {
        let names = forgotten.map(shellQuoted).joined(separator: ", ")
        let them = forgotten.count == 1 ? "it" : "them"
        guard !dryRun else {
            return "would forget \(names): a run would no longer name \(them) as unfinished (this dry run forgot "
                + "nothing); the rows read from \(them) would stay in the journal"
        }
        return "forgot \(names): no longer named as unfinished; the rows read from \(them) stay in the journal"
    }

    /// The `--forget-input` paths that named no unfinished input.
    public static func forgetMatchingNothing(_ paths: [String], dryRun: Bool = false) -> String {
        "warning: --forget-input \(paths.map(shellQuoted).joined(separator: ", ")) named no input an earlier run "
            + "left unfinished: \(dryRun ? "a run would forget nothing" : "nothing forgotten") "
            + "(botsi-restore status names those inputs)"
    }

    /// `botsi-restore report --journal J ARGUMENTS...`.
    public static func reportCommand(journalPath: String, _ arguments: [String]) -> String {
        (["botsi-restore", "report", "--journal", journalPath] + arguments).map(shellQuoted).joined(separator: " ")
    }

    /// `botsi-restore status --journal J`.
    public static func statusCommand(journalPath: String) -> String {
        ["botsi-restore", "status", "--journal", journalPath].map(shellQuoted).joined(separator: " ")
    }

    /// What must change before another run can get anywhere, for the causes that need a fix first.
    static func fixFirst(_ cause: StopCause) -> String? {
        switch cause {
        case .unauthorized, .forbidden:
            return
                "fix the key first (the raw key of this app, without \"Bearer \", in the variable or the --key-file "
                + "the run reads)"
        case .iosSettingsMissing:
            return "set up the app's App Store connection (iOS settings) in Botsi first"
        case .tlsFailure:
            return "fix the TLS problem first (check --base-url; for a private CA pass --cacert FILE)"
        case .journalFailure:
            return
                "make the journal usable first (free disk space, permissions, the file system; a journal moved away goes "
                + "back to its path)"
        case .inputDamaged:
            // The next command reads the same path: as it is, it stops at the same place.
            return "replace the damaged input with an intact copy first (download or export it again)"
        case .failureThreshold, .windowEnd, .signal:
            return nil
        }
    }

    /// A damaged input stops the run: how far into the file it got, and what the next run does.
    static func damagedInput(_ message: String, file: String, rowsRead: Int, rowsSent: Int) -> String {
        "\(message) — \(rowsRead) rows of it were read before that point and \(rowsSent) of them sent (their "
            + "outcomes are in the journal); the next run reads \(file) again from the start and skips the rows "
            + "already finished"
    }

    /// A word as a POSIX shell reads it back: left alone when it holds nothing special, else in
    /// single quotes. A word with a control or invisible character (a file named with a line
    /// break) is written `$'…'`, each such character as its UTF-8 bytes (`\xE2\x80\xAE`), which
    /// bash, zsh and ksh read back whatever the locale (dash and fish do not read `$'…'`): shown
    /// raw, it would break the line it is on, or hide what it names.
    public static func shellQuoted(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy { scalar in
            CharacterSet.alphanumerics.contains(scalar) || "@%+=:,./_-".unicodeScalars.contains(scalar)
        }
        if plain && !word.isEmpty { return word }
        guard word.unicodeScalars.contains(where: VisibleText.isActive) else {
            return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        var quoted = "$'"
        for scalar in word.unicodeScalars {
            switch scalar {
            case "\\": quoted += "\\\\"
            case "'": quoted += "\\'"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case "\r": quoted += "\\r"
            case _ where VisibleText.isActive(scalar):
                for byte in String(scalar).utf8 { quoted += "\\x" + String(format: "%02X", byte) }
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "'"
    }
}
