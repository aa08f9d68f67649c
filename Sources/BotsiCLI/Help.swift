/// Help texts. Each command's text lists every option it accepts.
enum Help {
    static let usageLines = """
        usage: botsi-restore run [INPUT ...] [options]      restore every pair in the inputs
               botsi-restore report [options]               print the journal, one record per row
               botsi-restore status [options]               the run in progress or the last one
               botsi-restore runs [options]                 one line per run
               botsi-restore merge OUT SHARD...             combine shard journals into a new one
               botsi-restore simulate [options]             serve a local Botsi restore API for rehearsals
               botsi-restore demo                           run the bundled sample against the simulator
               botsi-restore --help | --version | <command> --help
        """

    static let overview = """
        botsi-restore \(CLI.version) — restore App Store purchases in bulk through Botsi's restore endpoint.

        \(usageLines)

        The API key is read from the environment (BOTSI_SECRET_KEY, or the variable --key-env names),
        never from the command line. Every outcome is journaled in SQLite: rerunning the same command
        continues where the last run stopped and never resends finished rows.
        """

    static func usage(for command: String) -> String {
        switch command {
        case "run": return "usage: botsi-restore run [INPUT ...] [options]; see 'botsi-restore run --help'"
        case "report": return "usage: botsi-restore report [options]; see 'botsi-restore report --help'"
        case "status": return "usage: botsi-restore status [--journal PATH] [--format text|json]"
        case "runs": return "usage: botsi-restore runs [--journal PATH] [--format table|jsonl]"
        case "merge": return "usage: botsi-restore merge OUT.sqlite SHARD.sqlite..."
        case "simulate": return "usage: botsi-restore simulate [options]; see 'botsi-restore simulate --help'"
        case "demo": return "usage: botsi-restore demo [--keep-journal PATH]"
        default: return usageLines
        }
    }

    static func command(_ name: String) -> String? {
        switch name {
        case "run": return run
        case "report": return report
        case "status": return status
        case "runs": return runs
        case "merge": return merge
        case "simulate": return simulate
        case "demo": return demo
        default: return nil
        }
    }

    static let run = """
        usage: botsi-restore run [INPUT ...] [options]

        Sends every (profileId, originalTransactionId) pair of the inputs to
        POST {base-url}/v2/purchases/apple-store/restore and journals each outcome.
        INPUT is a .csv, .jsonl or .ndjson file (optionally .gz), or - for stdin.

        Job:
          --job FILE                    take options from a job file (jobs/*.json); flags given here win
        Input:
          --format csv|jsonl            format, when the file name does not tell
          --profile-column NAME         CSV/JSON column holding the profile id (default profileId or profile_id)
          --transaction-column NAME     column holding the original transaction id
                                        (default originalTransactionId or original_transaction_id)
        Journal:
          --journal PATH                SQLite journal (default botsi-restore.sqlite)
          --retry-failed                also resend failed, profile_not_found and server-rejected rows
          --refresh-older-than DUR      also resend restored rows last restored longer ago than DUR (e.g. 7d)
          --dry-run                     read and check the input, say what would be sent, send nothing
        API:
          --base-url URL                default https://api.botsi.com; http:// only for loopback hosts
          --key-env NAME                environment variable holding the key (default BOTSI_SECRET_KEY)
          --cacert FILE                 CA bundle for a private certificate authority
          --insecure-skip-tls-verify    do not verify the server's certificate (never in production)
        Pace and retries:
          --concurrency N               requests in flight at most (default 8)
          --max-attempts N              attempts per row per run (default 6)
          --timeout DUR                 per request (default 30s); --connect-timeout DUR (default 10s)
          --backoff-base DUR            first retry waits up to this (default 500ms), doubling
          --backoff-cap DUR             longest backoff (default 30s)
          --retry-after-cap DUR         longest wait a Retry-After can impose (default 120s)
          --rate N                      requests per second at most, evenly spaced (Apple allows ~50/s per app)
          --no-adaptive                 do not slow down on 429/503 (adaptive throttling is on by default)
          --max-failure-rate PCT        stop (exit 69) when more than PCT% of rows sent failed or ran out of
                                        attempts (default 50), once --min-sample rows were sent (default 1000)
        Time window:
          --max-duration DUR            stop dispatching after DUR (e.g. 6h), drain, exit 75; rerun continues
          --stop-at HH:MM               the same at the next local HH:MM
        Sharding:
          --shard I/N                   only rows whose profileId hashes to shard I of N (0 <= I < N)
        Output:
          --quiet                       no progress, only the summary and errors
          --log-interval DUR            progress log line period when stderr is not a terminal (default 30s)
          --log-format text|json        json: progress, stop, error and summary as one JSON object a line

        Exit status: 0 every row final; 64 usage; 65 input unusable; 66 input missing; 69 TLS failure or
        failure threshold; 73 journal unusable; 75 rows remain pending, the time window ended, or the
        journal is in use; 77 key refused;
        78 App Store connection not set up in Botsi; 130/143 stopped by SIGINT/SIGTERM.
        """

    static let report = """
        usage: botsi-restore report [options]

        Prints the journal, one record per row: profileId, originalTransactionId, status, code,
        httpStatus, attempts, source (file:line), updatedAt, and the profile snapshot (profileState,
        activeAccessLevels, expiresAt, willRenew, accessLevels). Safe while a run writes the journal.

          --journal PATH        journal to read (default botsi-restore.sqlite)
          --run ID|latest       only rows that run sent or rejected
          --status STATUS       restored, nothing_to_restore, profile_not_found, rejected, failed,
                                pending or in_flight (repeatable)
          --code CODE           only rows with this code (repeatable)
          --since TIME          only rows updated since TIME (ISO-8601) or within a duration (e.g. 24h)
          --format FORMAT       jsonl (default), csv, or table (aligned columns for a terminal);
                                CSV cells starting with = + - @ tab or CR are prefixed with '
          --output FILE         write there (mode 0600) instead of stdout

        Changes between two runs (the nightly audit):
          --changes             rows whose status or profile snapshot differs between two runs, with
                                before/after columns and a change: newly_failing, newly_restored,
                                lost_access, gained_access, snapshot_changed, recovered, new,
                                status_changed
          --run ID|latest       the later run (default latest)
          --since-run ID        the earlier run (default the run before --run)

        See docs/reports.md for every column.
        """

    static let status = """
        usage: botsi-restore status [--journal PATH] [--format text|json]

        The run in progress or the last one: when it started, its options and inputs, whether a live
        process still holds the journal, requests and retries so far, the rate over the last minute,
        row counts by status and code, and an ETA for the pending rows. Reads the journal read-only,
        so it is safe while a run writes it.

          --journal PATH        journal to read (default botsi-restore.sqlite)
          --format text|json    default text
        """

    static let runs = """
        usage: botsi-restore runs [--journal PATH] [--format table|jsonl]

        One line per run: id, start, duration, state (finished, stopped, running, killed), exit code,
        rows by status, rejected input rows, requests and inputs.

          --journal PATH        journal to read (default botsi-restore.sqlite)
          --format table|jsonl  default table
        """

    static let merge = """
        usage: botsi-restore merge OUT.sqlite SHARD.sqlite...

        Combines the journals of sharded runs (run --shard I/N, each with its own journal) into a new
        journal OUT for report, runs and status. OUT must not exist. Runs are renumbered by start time
        and note their source journal in their options (mergedFrom); a pair found in several shards
        keeps the record updated last. Refuses a shard a live run still holds (exit 75).
        """

    static let simulate = """
        usage: botsi-restore simulate [options]

        Serves POST /v2/purchases/apple-store/restore (on loopback unless --host says otherwise), behaving
        as Botsi documents, for rehearsals and tests. GET /__simulator/stats returns counts (?pairs=1 with
        an accepted key lists every pair). Stops on SIGINT/SIGTERM. Details: docs/simulator.md.

          --host ADDRESS        default 127.0.0.1; any other address is reachable by others (warned)
          --port N              default 8080; 0 picks a free port
          --key KEY             accepted key (repeatable; default sim_secret_key)
          --scenario FILE       profiles and transactions (JSON; see docs/simulator.md)
          --mode normal|no-ios-settings
        Latency and faults:
          --latency MS          fixed latency per reply (default 0)
          --jitter MS           extra uniform latency 0..MS (default 0)
          --fault-rate P        probability 0..1 of a fault per request (default 0)
          --faults LIST         comma list of 429,500,502,503,reset,stall,truncated (default all)
          --stall DUR           how long a stall fault holds the reply before closing (default 300s)
          --seed N              makes faults and jitter reproducible (default 1)
        Rate limit:
          --limit-rate N        admit N requests/s: at most N × window in any window, 429 for the rest
          --limit-window DUR    the limiter's window, whole seconds (default 1s; N × window must be whole)
          --rate-limit-headers ietf|ratelimit-limit|x-ratelimit
                                describe the limiter on its replies: RateLimit + RateLimit-Policy,
                                RateLimit-Limit/-Remaining/-Reset, or X-RateLimit-* (reset as UNIX time)
          --retry-after SECONDS the wait sent with 429 and 503 (default 1)
          --retry-after-format seconds|unix-ms|unix|http-date
                                how Retry-After is written (default seconds; unix-ms is Apple's form)
        Limits:
          --idle-timeout DUR    close connections idle (or slow to send a request) this long (default 60s)
          --max-connections N   connections open at once; more wait in the backlog (default 1024)
        """

    static let demo = """
        usage: botsi-restore demo [--keep-journal PATH]

        Starts the simulator on a free port with some faults and latency, runs the bundled sample
        through the real run path with a throw-away journal, and shows the progress and summary.
        """
}
