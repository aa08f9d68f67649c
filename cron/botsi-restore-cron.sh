#!/usr/bin/env bash
# Runs one botsi-restore job from cron: at most one at a time, the key from a 0600 env file, every
# line of output appended to a log with a timestamp, and a closing log line that says what the exit
# status means and what to do. Exits with botsi-restore's own status.
#
# usage: botsi-restore-cron.sh JOB_FILE [more run options...]
# (a relative JOB_FILE is taken from the directory the wrapper starts in, as a shell would; the
# job's own relative paths from BOTSI_WORKDIR, where the run works)
#
# Settings (environment; defaults suit the crontab in this directory):
#   BOTSI_RESTORE_BIN  the botsi-restore binary        (default: botsi-restore on PATH)
#   BOTSI_ENV_FILE     the key's env file, mode 0600   (default: /etc/botsi-restore/env)
#   BOTSI_LOG_FILE     log appended to                 (default: /var/log/botsi-restore/cron.log)
#   BOTSI_WORKDIR      working directory for the run   (default: /var/lib/botsi-restore)
#   BOTSI_HTML_REPORT  after the run, write its page    (default: none; e.g.
#                      (report --format html) there       /var/log/botsi-restore/last-run.html)
#
# What it trusts, and why (docs/security.md, "The cron wrapper"):
# - The env file sets the key and nothing else: the variable the job's keyEnv names (or
#   --key-env on this command line; default BOTSI_SECRET_KEY), plus TZ, HTTPS_PROXY/https_proxy
#   and NO_PROXY/no_proxy. Any other name is refused with its line number (exit 78): a file that
#   holds a key must never become a way to run code.
# - botsi-restore inherits only PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*, TZ, the proxy
#   variables above and SSL_CERT_FILE/SSL_CERT_DIR from the caller; LD_PRELOAD, BASH_ENV,
#   SSLKEYLOGFILE and everything else are dropped before any command runs.
# - The lock is .botsi-restore-cron.lock in the working directory (or in $RUNTIME_DIRECTORY under
#   systemd), which must belong to this user and be writable by no one else (exit 78 otherwise);
#   the log's directory must belong to this user or root and be writable by no one else (exit 73).
#
# A second invocation while one runs logs "skipped" and exits 75 (EX_TEMPFAIL: try again later),
# the status botsi-restore itself uses for "another run holds the journal".
#
# Started by another shell (`sh botsi-restore-cron.sh JOB`: dash stopped at the next line with
# "set: Illegal option -o pipefail", exit 2, nothing logged), it runs itself again with bash.
# This guard is POSIX sh: everything after it is bash.
if [ -z "${BASH_VERSION:-}" ]; then
    if [ -r "$0" ] && command -v bash >/dev/null 2>&1; then exec bash "$0" "$@"; fi
    echo "botsi-restore-cron: this script needs bash, and bash was not found: run it with bash (bash $0 JOB_FILE); nothing was run" >&2
    exit 64
fi
set -u -o pipefail
set +o xtrace +o verbose
umask 077

readonly bin=${BOTSI_RESTORE_BIN:-botsi-restore}
readonly env_file=${BOTSI_ENV_FILE:-/etc/botsi-restore/env}
readonly log_file=${BOTSI_LOG_FILE:-/var/log/botsi-restore/cron.log}
readonly workdir=${BOTSI_WORKDIR:-/var/lib/botsi-restore}
readonly html_report=${BOTSI_HTML_REPORT:-}
readonly lock_dir=${RUNTIME_DIRECTORY:+${RUNTIME_DIRECTORY%%:*}}
readonly old_lock_setting=${BOTSI_LOCK_FILE:-}
readonly self_uid=$EUID

# The caller's environment, cut down to what botsi-restore needs.
for name in $(compgen -e); do
    case $name in
        PATH | HOME | USER | LOGNAME | LANG | LANGUAGE | LC_[A-Z]* | TZ) ;;
        HTTPS_PROXY | https_proxy | NO_PROXY | no_proxy | SSL_CERT_FILE | SSL_CERT_DIR) ;;
        *) unset -v "$name" 2>/dev/null || export -n "$name" ;;
    esac
done

# mode_of PATH prints "OWNER_UID OCTAL_MODE" of PATH itself (a symlink is not followed).
mode_of() { stat -c '%u %a' -- "$1" 2>/dev/null; }

# Until the log is open, complaints go to stderr (cron mails them).
log_dir=$(dirname -- "$log_file")
if ! mkdir -p -- "$log_dir"; then
    echo "botsi-restore-cron: cannot create the log directory $log_dir; set BOTSI_LOG_FILE" >&2
    exit 73
fi
# Whoever can write the log's directory can point the log at any file this user may write.
read -r owner mode < <(mode_of "$log_dir/.")
if [ "$owner" != "$self_uid" ] && [ "$owner" != 0 ]; then
    echo "botsi-restore-cron: the log directory $log_dir belongs to uid $owner, not to $(id -un) or root; use a directory of your own (BOTSI_LOG_FILE)" >&2
    exit 73
fi
if [ $((8#$mode & 8#022)) -ne 0 ]; then
    echo "botsi-restore-cron: the log directory $log_dir has mode $mode: others could replace the log; run: chmod 700 $log_dir" >&2
    exit 73
fi
if [ -L "$log_file" ] || { [ -e "$log_file" ] && [ ! -f "$log_file" ]; } || ! exec 8>>"$log_file"; then
    echo "botsi-restore-cron: cannot append to the log $log_file (it must be a regular file); set BOTSI_LOG_FILE" >&2
    exit 73
fi

log() {
    printf '%(%Y-%m-%dT%H:%M:%S%z)T [cron %d] %s\n' -1 "$$" "$*" >&8
}

if [ $# -lt 1 ]; then
    log "usage: botsi-restore-cron.sh JOB_FILE [run options...]; nothing was run"
    echo "usage: botsi-restore-cron.sh JOB_FILE [run options...]" >&2
    exit 64
fi
# A relative JOB_FILE is the caller's, from where the wrapper was started (cron: $HOME), not
# from the working directory it changes to: named so, it exited 66 'cannot read job file'.
if [[ $1 == /* ]]; then readonly job=$1; else readonly job=$(pwd)/$1; fi
shift

refuse() {
    log "refused: $1; nothing was run"
    echo "botsi-restore-cron: $1" >&2
    exit 78
}

# private_dir PATH SHOWN WHAT: the directory must belong to this user and be writable by no one
# else, or another user could plant a file (a lock, a journal) in it.
private_dir() {
    local owner mode
    read -r owner mode < <(mode_of "$1/.") || refuse "cannot stat the $3 $2"
    [ "$owner" = "$self_uid" ] || refuse "the $3 $2 belongs to uid $owner, not to $(id -un); chown it to the user the job runs as"
    [ $((8#$mode & 8#022)) -eq 0 ] || refuse "the $3 $2 has mode $mode: others could plant files in it; run: chmod 700 $2"
}

cd -- "$workdir" || { log "cannot enter the working directory $workdir; nothing was run"; exit 73; }
private_dir . "$workdir" "working directory"
[ -z "$old_lock_setting" ] || log "note: BOTSI_LOCK_FILE is no longer read; the lock lives in ${lock_dir:-the working directory}"

# The journal is the job's (or --journal's), relative paths from the working directory as for the
# run: the advice below (a skipped run's too) and the page name it.
journal=botsi-restore.sqlite
if [ -r "$job" ] && [[ $(<"$job") =~ \"journal\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]]; then journal=${BASH_REMATCH[1]}; fi
previous=""
for argument in "$@"; do
    case $argument in --journal=*) journal=${argument#--journal=} ;; esac
    [ "$previous" = --journal ] && journal=$argument
    previous=$argument
done
# Absolute, as the run resolved it from the working directory: the advice is read and typed elsewhere.
[[ $journal == /* ]] || journal=$PWD/$journal
printf -v journal_arg '%q' "$journal"

# One at a time: the lock is held on descriptor 9 until this script and botsi-restore (which
# inherits it) have both exited, however they exit.
if [ -n "$lock_dir" ]; then
    private_dir "$lock_dir" "$lock_dir" "runtime directory"
    readonly lock_file=$lock_dir/.botsi-restore-cron.lock
else
    readonly lock_file=$PWD/.botsi-restore-cron.lock
fi
if [ -L "$lock_file" ] || ! exec 9>>"$lock_file"; then
    log "cannot open the lock file $lock_file; nothing was run"
    exit 73
fi
if ! flock --nonblock 9; then
    log "skipped: another botsi-restore-cron run holds $lock_file (exit 75: nothing to do; if this repeats every night, the job outgrew its window — see 'botsi-restore status --journal $journal_arg')"
    exit 75
fi

# The one variable the env file may name for the key: --key-env here, else the job's keyEnv.
key_variable=BOTSI_SECRET_KEY
if [ -r "$job" ] && [[ $(<"$job") =~ \"keyEnv\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]]; then
    key_variable=${BASH_REMATCH[1]}
fi
previous=""
for argument in "$@"; do
    case $argument in --key-env=*) key_variable=${argument#--key-env=} ;; esac
    [ "$previous" = --key-env ] && key_variable=$argument
    previous=$argument
done
# Not a name the shell already uses (its own, the environment kept above, this script's), nor one
# that the loader, libc, OpenSSL or libcurl reads.
if ! [[ $key_variable =~ ^[A-Z][A-Z0-9_]*$ ]]; then
    refuse "the job's key variable '$key_variable' is not an upper-case environment variable name (keyEnv or --key-env)"
fi
case $key_variable in
    LD_* | GCONV_PATH | GETCONF_DIR | GLIBC_TUNABLES | HOSTALIASES | LOCALDOMAIN | LOCPATH | MALLOC_* | NIS_PATH | \
        NLSPATH | RESOLV_HOST_CONF | RES_OPTIONS | TMPDIR | TZDIR | TZ | LANG* | LC_* | BASH* | ENV | IFS | SHELL* | \
        PS4 | CDPATH | GLOBIGNORE | POSIXLY_CORRECT | *_PROXY | SSL* | OPENSSL* | CURL*) reserved=1 ;;
    *) reserved=0 ;;
esac
if [ "$reserved" = 1 ] || [[ -v $key_variable ]]; then
    refuse "the job names $key_variable as its key variable, but that name is read by something else; name another (keyEnv or --key-env), e.g. BOTSI_SECRET_KEY"
fi

# The env file holds the API key: it must belong to this user and be readable by nobody else.
[ -f "$env_file" ] || refuse "env file $env_file does not exist (create it with mode 0600: $key_variable=...)"
read -r owner mode < <(stat -L -c '%u %a' -- "$env_file") || refuse "cannot stat $env_file"
if [ $((8#$mode & 8#077)) -ne 0 ]; then
    refuse "env file $env_file has mode $mode but holds the API key; run: chmod 600 $env_file"
fi
[ "$owner" = "$self_uid" ] || refuse "env file $env_file belongs to uid $owner, not to $(id -un); chown it"

# NAME=VALUE lines, read without running them as shell code; blank lines and # comments skipped.
# Only the key and the allow-list are taken; the message names the line, never its value.
line_number=0
while IFS= read -r line || [ -n "$line" ]; do
    line_number=$((line_number + 1))
    line=${line%$'\r'}
    case $line in '' | '#'*) continue ;; esac
    line=${line#export }
    name=${line%%=*}
    value=${line#*=}
    if [ "$name" = "$line" ] || ! [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        refuse "env file $env_file line $line_number is not NAME=VALUE"
    fi
    case $name in
        "$key_variable" | TZ | HTTPS_PROXY | https_proxy | NO_PROXY | no_proxy) ;;
        *) refuse "env file $env_file line $line_number sets $name; it may set only $key_variable (the key this job reads) and TZ, HTTPS_PROXY, NO_PROXY" ;;
    esac
    case $value in
        \"*\") value=${value:1:${#value}-2} ;;
        \'*\') value=${value:1:${#value}-2} ;;
    esac
    export "$name=$value"
done <"$env_file"
unset -v line name value

log "start: $bin run --job $job${*:+ $*}"
# One stamp a line, in this log's format: botsi-restore's periodic lines carry their own UTC time
# (for a log written without this wrapper), which is left out here rather than written twice.
stamp() {
    local text
    local own='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z (.*)$'
    while IFS= read -r text || [ -n "$text" ]; do
        [[ $text =~ $own ]] && text=${BASH_REMATCH[2]}
        printf '%(%Y-%m-%dT%H:%M:%S%z)T %s\n' -1 "$text"
    done
}
fifo_dir=$(mktemp -d) || { log "cannot make a temporary directory; nothing was run"; exit 73; }
trap 'rm -rf "$fifo_dir"' EXIT
mkfifo "$fifo_dir/output"
# The stamper outlives a TERM or INT to the process group (systemd's stop, timeout, Ctrl-C): it
# logs botsi-restore's drain and summary, and ends when botsi-restore closes the pipe.
(
    trap '' TERM INT
    stamp
) <"$fifo_dir/output" >&8 &
stamper=$!
"$bin" run --job "$job" "$@" >"$fifo_dir/output" 2>&1 8>&- &
child=$!
# SIGTERM or SIGINT to this script reaches botsi-restore, which drains and journals (exit 143/130).
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
status=0
while :; do
    wait "$child"
    status=$?
    # wait returns early (above 128) when a trapped signal arrives; wait again until it exits.
    kill -0 "$child" 2>/dev/null || break
done
wait "$stamper"

case $status in
    0) advice="ok: every row reached a final status; nothing to do" ;;
    64) advice="usage error: fix the job file or the crontab line (the message above names the option)" ;;
    65) advice="input unusable: every row rejected, or every row of one input (see 'botsi-restore report --journal $journal_arg --status rejected'), not data at all, or damaged part-way (rows before the damage were sent and journaled): fix or re-export the input file" ;;
    66) advice="input or job file missing: check that the export ran, the job's inputs paths and the job file's path on the crontab line" ;;
    69) advice="unavailable (TLS failure, or too many rows failing): look at the lines above; see failures with 'botsi-restore report --journal $journal_arg --run latest --status failed --status pending --format table'" ;;
    70) advice="internal error: keep this log and report it" ;;
    71) advice="a local resource ran out (memory, file descriptors, a thread): raise what the message above names (ulimit -n, ulimit -v, the unit's LimitNOFILE=); nothing was sent, the next run continues" ;;
    73) advice="journal unusable (disk full, permissions, not a journal): fix as the message says; committed rows are safe" ;;
    75) advice="rows remain pending (window ended, retries spent, or another run holds the journal): nothing to do, the next run continues; if it repeats for days see 'botsi-restore status --journal $journal_arg'" ;;
    77) advice="the API key was refused: put a valid key in $env_file" ;;
    78) advice="the App Store connection is not set up in Botsi for this app: set it up in Botsi, then the next run continues" ;;
    126 | 127) advice="botsi-restore could not be started ($bin): set BOTSI_RESTORE_BIN or install it" ;;
    129 | 130 | 143) advice="stopped by a signal after in-flight requests finished: the next run continues" ;;
    *) advice="unexpected exit status: look at the lines above" ;;
esac
log "end: exit $status — $advice"

# Last night's page beside the log, when asked for. A failure is logged, never the exit. The
# command logged beside it writes the page again from anywhere: --output named absolute, as the
# report resolved it from the working directory (without it the page went to the terminal).
if [ -n "$html_report" ] && [ "$status" != 126 ] && [ "$status" != 127 ]; then
    if [[ $html_report == /* ]]; then page=$html_report; else page=$PWD/$html_report; fi
    printf -v page_arg '%q' "$page"
    if page_error=$("$bin" report --journal "$journal" --format html --output "$html_report" 2>&1 8>&-); then
        log "page: $page (botsi-restore report --journal $journal_arg --format html --output $page_arg)"
    else
        log "page: not written to $page: ${page_error//$'\n'/ }"
    fi
fi
exit "$status"
