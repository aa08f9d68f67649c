#!/usr/bin/env bash
# Runs one botsi-restore job from cron: at most one at a time, key from a 0600 env file, every line
# of output appended to a log with a timestamp, and a closing log line that says what the exit
# status means and what to do. Exits with botsi-restore's own status.
#
# usage: botsi-restore-cron.sh JOB_FILE [more run options...]
#
# Settings (environment; defaults suit the crontab in this directory):
#   BOTSI_RESTORE_BIN  the botsi-restore binary        (default: botsi-restore on PATH)
#   BOTSI_ENV_FILE     KEY=VALUE lines, mode 0600      (default: /etc/botsi-restore/env)
#   BOTSI_LOG_FILE     log appended to                 (default: /var/log/botsi-restore/cron.log)
#   BOTSI_LOCK_FILE    flock lock file                 (default: /run/lock/botsi-restore-cron.lock)
#   BOTSI_WORKDIR      working directory for the run   (default: /var/lib/botsi-restore)
#
# A second invocation while one runs logs "skipped" and exits 75 (EX_TEMPFAIL: try again later),
# the status botsi-restore itself uses for "another run holds the journal".
set -u -o pipefail
umask 077

bin=${BOTSI_RESTORE_BIN:-botsi-restore}
env_file=${BOTSI_ENV_FILE:-/etc/botsi-restore/env}
log_file=${BOTSI_LOG_FILE:-/var/log/botsi-restore/cron.log}
lock_file=${BOTSI_LOCK_FILE:-/run/lock/botsi-restore-cron.lock}
workdir=${BOTSI_WORKDIR:-/var/lib/botsi-restore}

log() {
    printf '%(%Y-%m-%dT%H:%M:%S%z)T [cron %d] %s\n' -1 "$$" "$*" >>"$log_file"
}

# Until the log is known to be writable, complaints go to stderr (cron mails them).
if ! mkdir -p "$(dirname "$log_file")" || ! touch "$log_file"; then
    echo "botsi-restore-cron: cannot write the log $log_file; set BOTSI_LOG_FILE" >&2
    exit 73
fi

if [ $# -lt 1 ]; then
    log "usage: botsi-restore-cron.sh JOB_FILE [run options...]; nothing was run"
    echo "usage: botsi-restore-cron.sh JOB_FILE [run options...]" >&2
    exit 64
fi
job=$1
shift

# One at a time: the lock is held on descriptor 9 until this script and botsi-restore (which
# inherits it) have both exited, however they exit.
exec 9>>"$lock_file" || { log "cannot open the lock file $lock_file; nothing was run"; exit 73; }
if ! flock --nonblock 9; then
    log "skipped: another botsi-restore-cron run holds $lock_file (exit 75: nothing to do; if this repeats every night, the job outgrew its window — see 'botsi-restore status')"
    exit 75
fi

# The env file holds the API key: it must belong to this user and be readable by nobody else.
refuse_env() {
    log "refused: $1; nothing was run"
    echo "botsi-restore-cron: $1" >&2
    exit 78
}
[ -f "$env_file" ] || refuse_env "env file $env_file does not exist (create it with mode 0600: KEY=VALUE lines)"
mode=$(stat -c '%a' "$env_file") || refuse_env "cannot stat $env_file"
owner=$(stat -c '%u' "$env_file")
if [ $((8#$mode & 8#077)) -ne 0 ]; then
    refuse_env "env file $env_file has mode $mode but holds the API key; run: chmod 600 $env_file"
fi
[ "$owner" = "$(id -u)" ] || refuse_env "env file $env_file belongs to uid $owner, not to $(id -un); chown it"

# KEY=VALUE lines, read without running them as shell code; blank lines and # comments skipped.
line_number=0
while IFS= read -r line || [ -n "$line" ]; do
    line_number=$((line_number + 1))
    line=${line%$'\r'}
    case $line in '' | '#'*) continue ;; esac
    line=${line#export }
    name=${line%%=*}
    value=${line#*=}
    if [ "$name" = "$line" ] || ! [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        refuse_env "env file $env_file line $line_number is not NAME=VALUE"
    fi
    case $value in
        \"*\") value=${value:1:${#value}-2} ;;
        \'*\') value=${value:1:${#value}-2} ;;
    esac
    export "$name=$value"
done <"$env_file"

cd "$workdir" || { log "cannot enter the working directory $workdir; nothing was run"; exit 73; }

log "start: $bin run --job $job${*:+ $*}"
stamp() {
    local text
    while IFS= read -r text || [ -n "$text" ]; do
        printf '%(%Y-%m-%dT%H:%M:%S%z)T %s\n' -1 "$text"
    done
}
fifo_dir=$(mktemp -d) || { log "cannot make a temporary directory; nothing was run"; exit 73; }
trap 'rm -rf "$fifo_dir"' EXIT
mkfifo "$fifo_dir/output"
stamp <"$fifo_dir/output" >>"$log_file" &
stamper=$!
"$bin" run --job "$job" "$@" >"$fifo_dir/output" 2>&1 &
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
    65) advice="input unusable: re-export the input file; nothing was sent from it" ;;
    66) advice="input missing: check that the export ran and the job's inputs paths" ;;
    69) advice="unavailable (TLS failure, or too many rows failing): look at the lines above; see failures with 'botsi-restore report --run latest --status failed --format table'" ;;
    70) advice="internal error: keep this log and report it" ;;
    73) advice="journal unusable (disk full, permissions, not a journal): fix as the message says; committed rows are safe" ;;
    75) advice="rows remain pending (window ended, retries spent, or another run holds the journal): nothing to do, the next run continues; if it repeats for days see 'botsi-restore status'" ;;
    77) advice="the API key was refused: put a valid key in $env_file" ;;
    78) advice="the App Store connection is not set up in Botsi for this app: set it up in Botsi, then the next run continues" ;;
    126 | 127) advice="botsi-restore could not be started ($bin): set BOTSI_RESTORE_BIN or install it" ;;
    130 | 143) advice="stopped by a signal after in-flight requests finished: the next run continues" ;;
    *) advice="unexpected exit status: look at the lines above" ;;
esac
log "end: exit $status — $advice"
exit "$status"
