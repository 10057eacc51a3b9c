#!/usr/bin/env bash
# mxmatrixd's journal entries, read back with journalctl from a real
# systemd-journald that runs in a private mount namespace (a tmpfs on /run,
# so the host's journal is neither used nor touched): job, run, attempt,
# configuration and level fields, MESSAGE_IDs that journalctl can match
# (every crash of one configuration), the command's output as its own
# entries, the call site (CODE_FILE/LINE/FUNC), and the catalog that
# explains the MESSAGE_IDs (journalctl -x). Root only; exit 0 pass, 1 fail,
# 77 skip.
set -u

if [ -z "${MX_JOURNAL_NS:-}" ]; then
        [ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a mount namespace"; exit 77; }
        command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) is not installed"; exit 77; }
        unshare -m --propagation private true 2>/dev/null ||
                { echo "SKIP: cannot create a mount namespace here"; exit 77; }
        MX_JOURNAL_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"

journald=/lib/systemd/systemd-journald
[ -x "$journald" ] || skip "$journald is not installed"
command -v journalctl >/dev/null || skip "journalctl is not installed"
[ -s /etc/machine-id ] || skip "no /etc/machine-id: journald cannot name its files"

step="private journald"
mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a tmpfs on /run"
mkdir -p /run/systemd/journal /run/systemd/journald.conf.d
# Volatile storage only (under our /run), and nothing read from or sent to the host's kernel log or consoles.
cat >/run/systemd/journald.conf.d/mxregress.conf <<'EOF'
[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
RateLimitBurst=0
EOF
SYSTEMD_LOG_TARGET=console "$journald" >"$T/journald.log" 2>&1 &
journald_pid=$!
journal_socket() {
        kill -0 "$journald_pid" 2>/dev/null || fail "journald exited: $(cat "$T/journald.log")"
        [ -S /run/systemd/journal/socket ]
}
wait_until "journald's socket" journal_socket
jdir=/run/log/journal
# jctl ARGS...: our journal only, as JSON lines.
jctl() {
        journalctl --directory="$jdir" --no-pager -o json "$@" 2>/dev/null
}
ok "journald pid $journald_pid on /run/systemd/journal/socket"

step="daemon logs to the journal"
mxd_start SLEEP=0.2 -- --log-target=journal
job=$(submit feature=fast)
expect_exit 1 follow_job "$job"
show=$(mxj show "$job")
mapfile -t runs < <(jq '.runs[].id' <<<"$show")
[ "${#runs[@]}" = 5 ] || fail "job $job has ${#runs[@]} runs"
crash_run=$(jq '.runs[] | select(.result == "crashed") | .id' <<<"$show")
crash_key=$(jq -r '.runs[] | select(.result == "crashed") | .config_key' <<<"$show")
[ -n "$crash_run" ] || fail "no crashed run in job $job"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "exit status $MXD_STATUS"
# Stopped, so everything it sent has been received; journald writes as it receives.
last_entry_there() {
        [ -n "$(jctl SYSLOG_IDENTIFIER=mxmatrixd MESSAGE=stopped)" ]
}
wait_until "the daemon's last entry" last_entry_there
grep -q 'mxmatrixd: info:' "$MXD_LOG" && fail "the daemon wrote to stderr despite --log-target=journal"
ok "job $job with runs ${runs[*]}; nothing on stderr"

# The message IDs of daemon/base/log.h.
declare -A msgid
while read -r _ name id; do
        msgid[${name#MX_MSGID_}]=${id//\"/}
done < <(grep '^#define MX_MSGID_' "$MX_SOURCE_DIR/daemon/base/log.h")
[ "${#msgid[@]}" -ge 9 ] || fail "read ${#msgid[@]} MESSAGE_IDs from daemon/base/log.h"

step="job fields"
e=$(jctl MESSAGE_ID="${msgid[JOB_ACCEPTED]}")
[ "$(jq -s length <<<"$e")" = 1 ] || fail "want one job-accepted entry: $e"
jq -e --arg j "$job" '.MXMATRIX_JOB == $j and .MXMATRIX_FEATURE == "fast" and .PRIORITY == "6"
        and .SYSLOG_IDENTIFIER == "mxmatrixd" and (.MESSAGE | startswith("job \($j) accepted"))
        and (.CODE_FILE | endswith("submit.c")) and .CODE_FUNC == "submit_store"
        and (.CODE_LINE | test("^[0-9]+$"))' >/dev/null <<<"$e" || fail "job-accepted entry: $e"
n=$(jctl MXMATRIX_JOB="$job" | jq -s length)
[ "$n" -ge 25 ] || fail "only $n entries with MXMATRIX_JOB=$job"
ok "job-accepted entry with MXMATRIX_JOB=$job, MXMATRIX_FEATURE; $n entries of the job"

step="run fields"
for r in "${runs[@]}"; do
        key=$(jq -r ".runs[] | select(.id == $r) | .config_key" <<<"$show")
        e=$(jctl MESSAGE_ID="${msgid[RUN_STARTED]}" MXMATRIX_RUN="$r")
        jq -se --arg j "$job" --arg k "$key" 'length == 1 and .[0].MXMATRIX_JOB == $j
                and .[0].MXMATRIX_CONFIG == $k and .[0].MXMATRIX_ATTEMPT == "1"' >/dev/null <<<"$e" ||
                fail "run-started entry of r$r: $e"
        # Every entry about the run names its configuration.
        jctl MXMATRIX_RUN="$r" | jq -se --arg k "$key" 'length >= 4 and all(.[]; .MXMATRIX_CONFIG == $k)' \
                >/dev/null || fail "entries of r$r without MXMATRIX_CONFIG=$key"
        # Level entries carry the level and the verdict.
        e=$(jctl MESSAGE_ID="${msgid[LEVEL_FINISHED]}" MXMATRIX_RUN="$r")
        jq -se '[.[].MXMATRIX_LEVEL] == ["L1", "L1.5"] and all(.[]; .MXMATRIX_VERDICT | length > 0)' \
                >/dev/null <<<"$e" || fail "level entries of r$r: $e"
        if [ "$r" = "$crash_run" ]; then
                id=${msgid[RUN_CRASHED]}
        else
                id=${msgid[RUN_FINISHED]}
        fi
        jctl MESSAGE_ID="$id" MXMATRIX_RUN="$r" |
                jq -se 'length == 1 and (.[0].MXMATRIX_OUTCOME | length > 0)' \
                >/dev/null || fail "no finished entry ($id) for r$r"
done
jctl MXMATRIX_LEVEL=L1 | jq -se 'length >= 5' >/dev/null || fail "MXMATRIX_LEVEL=L1 finds too little"
ok "started/level/finished entries of ${#runs[@]} runs with MXMATRIX_RUN, _CONFIG, _ATTEMPT, _LEVEL"

step="crashes of one configuration"
e=$(jctl MESSAGE_ID="${msgid[RUN_CRASHED]}" MXMATRIX_CONFIG="$crash_key")
jq -se --arg r "$crash_run" 'length == 1 and .[0].MXMATRIX_RUN == $r
        and .[0].MXMATRIX_CRASH_CLASS == "signal" and .[0].MXMATRIX_OUTCOME == "crashed"
        and .[0].PRIORITY == "4"' >/dev/null <<<"$e" ||
        fail "journalctl MESSAGE_ID=<crashed> MXMATRIX_CONFIG=$crash_key: $e"
[ -z "$(jctl MESSAGE_ID="${msgid[RUN_CRASHED]}" MXMATRIX_CONFIG=mode=ok,speed=slow)" ] ||
        fail "a crash entry for a configuration that did not crash"
ok "journalctl MESSAGE_ID=${msgid[RUN_CRASHED]} MXMATRIX_CONFIG=$crash_key finds r$crash_run"

step="command output"
for r in "${runs[@]}"; do
        key=$(jq -r ".runs[] | select(.id == $r) | .config_key" <<<"$show")
        mode=${key#mode=}
        mode=${mode%%,*}
        e=$(jctl SYSLOG_IDENTIFIER=command MXMATRIX_RUN="$r")
        jq -se --arg j "$job" --arg k "$key" --arg m "run in $MXD_STATE/runs/$r/1: mode=$mode speed=" \
                'length >= 1 and (.[0].MESSAGE | startswith($m)) and .[0].MXMATRIX_JOB == $j
                 and .[0].MXMATRIX_CONFIG == $k and .[0].MXMATRIX_ATTEMPT == "1"' >/dev/null <<<"$e" ||
                fail "command output of r$r: $e"
done
ok "each run's output line under SYSLOG_IDENTIFIER=command with the run's fields"

step="call sites"
e=$(jctl SYSLOG_IDENTIFIER=mxmatrixd)
n=$(jq -s length <<<"$e")
# One value each (strings, not arrays), naming the caller rather than the logging code.
jq -se 'all(.[]; (.CODE_FILE | type == "string" and (endswith("/log.c") | not))
        and (.CODE_LINE | type == "string" and test("^[1-9][0-9]*$"))
        and (.CODE_FUNC | type == "string" and . != "mx_log_internal"))' >/dev/null <<<"$e" ||
        fail "an mxmatrixd entry without exactly one caller's CODE_FILE/CODE_LINE/CODE_FUNC"
jq -se "[.[] | select(.MESSAGE_ID == \"${msgid[DAEMON_STARTED]}\")] | length == 1" >/dev/null <<<"$e" ||
        fail "no daemon-started entry"
ok "all $n mxmatrixd entries have CODE_FILE, CODE_LINE, CODE_FUNC"

step="catalog"
root=$T/catalog-root
mkdir -p "$root/usr/lib/systemd/catalog"
cp "$MX_SOURCE_DIR/systemd/mxmatrix.catalog" "$root/usr/lib/systemd/catalog/"
journalctl --root="$root" --update-catalog 2>"$T/err" || fail "journalctl --update-catalog: $(cat "$T/err")"
[ -s "$T/err" ] && fail "journalctl --update-catalog complained: $(cat "$T/err")"
journalctl --root="$root" --list-catalog >"$T/out" 2>"$T/err" || fail "journalctl --list-catalog failed"
for name in "${!msgid[@]}"; do
        has "$T/out" "${msgid[$name]} mxmatrix: "
done
[ "$(wc -l <"$T/out")" = "${#msgid[@]}" ] ||
        fail "the catalog has $(wc -l <"$T/out") entries, log.h ${#msgid[@]}"
# journalctl -x explains an entry with the catalog text, fields filled in.
if [ -d /var/lib/systemd/catalog ]; then
        mount --bind "$root/var/lib/systemd/catalog" /var/lib/systemd/catalog ||
                fail "cannot bind the catalog"
        journalctl --directory="$jdir" --no-pager -x MESSAGE_ID="${msgid[RUN_CRASHED]}" >"$T/out" 2>&1
        has "$T/out" "Subject: mxmatrix run $crash_run crashed: signal"
        has "$T/out" "MXMATRIX_CONFIG=$crash_key"
        has "$T/out" "(configuration $crash_key) died"
fi
ok "${#msgid[@]} catalog entries, one per MESSAGE_ID in log.h; journalctl -x fills them in"
