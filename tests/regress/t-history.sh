#!/usr/bin/env bash
# mxmatrix history (issue 19 item 2) through a private daemon and the real
# client: a git tree holds a tiny "server" (a script that starts mxsim with
# the decode speed written in the tree), the matrix records that tree's SHA
# with every attempt. Three commits at one speed, two server starts each:
# history shows the six starts and no change point. Three more commits
# decode slower (MXSIM_TOKEN_MS 4 -> 5, tg32 20 % down: big enough to stay
# clear of a loaded 2-core machine's timing noise; the 5 % case with L5's
# noise model is the unit test's, tests/unit/test-changepoint.c): history
# marks the change between the last fast and the first slow commit, and
# prints the bisect command line between them. A commit measured last but
# committed first is placed first (commit time orders, git log's %ct).
# The configuration's key is wide (two more axes of 64-character names and
# values, 270 characters): named by its kernel=marlin pin alone (the one
# stored configuration that holds it), and the bisect line history prints is
# one the daemon's bisect accepts for that configuration (started, then
# cancelled). A pin that is not axis=value, and a stored key that is not
# axis=value pairs, are errors that name them; --points N takes the newest N.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

step="git tree"
g() { git_t -C "$T/srv" "$@"; }
mkdir -p "$T/srv"
cat >"$T/srv/serve.sh" <<'SH'
#!/bin/sh
# The tree's server: mxsim at the speed this commit decodes at.
MXSIM_TOKEN_MS=$(cat "$(dirname "$0")/token-ms")
export MXSIM_TOKEN_MS
exec "$MXSIM_BIN" "$@"
SH
chmod +x "$T/srv/serve.sh"
g init -q || fail "git init"
commit() { # commit MS N [DATE]: the server decodes a token every MS ms from commit N on (committed on DATE)
        echo "$1" >"$T/srv/token-ms"
        echo "$2" >"$T/srv/n"
        g add -A && GIT_COMMITTER_DATE="${3:-2026-01-0$2T12:00:00Z}" g commit -qm "commit $2" || fail "git commit"
        git -C "$T/srv" rev-parse HEAD
}
ok "made"

step="matrix"
MXD_MATRIX=$T/matrix.json
AX1=wide-axis-one-$(printf '%050d' 1) AX2=wide-axis-two-$(printf '%050d' 2) # 64 characters each
VAL=wide-value-$(printf '%053d' 7)
KEY="kernel=marlin,$AX1=$VAL,$AX2=$VAL"
[ ${#KEY} -gt 256 ] || fail "the key is not wide: ${#KEY}"
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg srv "$T/srv" --arg lock "$T/gpu.lock" \
        --arg ax1 "$AX1" --arg ax2 "$AX2" --arg val "$VAL" '{
  matrix: 1, name: "history",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [($srv + "/serve.sh"), "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log"],
           env: {MXSIM_BIN: $sim, MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1",
                 MXSIM_GPU_LOCK: $lock, MXSIM_PREFILL_TPS: "10000"},
           ready: {timeout: "30s", interval: "100ms"}},
  axes: [{name: "kernel", values: [{name: "marlin", env: {VLLM_MXFP4_MOE_KERNEL: "marlin"}},
                                   {name: "cutlass", env: {VLLM_MXFP4_MOE_KERNEL: "gemm"}}]},
         {name: $ax1, values: [{name: $val, env: {WIDE_ONE: "1"}}]},
         {name: $ax2, values: [{name: $val, env: {WIDE_TWO: "1"}}]}],
  baseline: {kernel: "marlin", ($ax1): $val, ($ax2): $val},
  levels: {run: ["L1", "L4"], L4: {pp: [512], tg: [32], depth: [0], runs: 4, warmup: 1}},
  metadata: {sources: {server: $srv}, timeout_ms: 5000},
  bisect: {build: ["true"], source: "server"}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

# two server starts of the baseline at the tree's HEAD
measure() {
        local job
        for _ in 1 2; do
                job=$(submit marlin)
                follow_job "$job" || fail "job $job: $(cat "$T/follow")"
        done
}

step="three commits at one speed"
declare -a sha
for n in 1 2 3; do
        sha[$n]=$(commit 4 "$n")
        measure
done
expect_exit 0 mx history kernel=marlin
has "$T/out" "$KEY, tg32 t/s by commit of server"
[ "$(grep -c "^${sha[1]:0:12} " "$T/out")" -eq 2 ] || fail "two rows of commit 1: $(cat "$T/out")"
has "$T/out" "No change point"
out=$(mxj history kernel=marlin) || fail "history --json"
[ "$(jq '.series | length' <<<"$out")" -eq 6 ] || fail "series: $out"
[ "$(jq '.change_points | length' <<<"$out")" -eq 0 ] || fail "change points on a flat series: $out"
ok "6 starts, none"

step="three slower commits"
for n in 4 5 6; do
        sha[$n]=$(commit 5 "$n")
        measure
done
expect_exit 0 mx history kernel=marlin
cat "$T/out"
out=$(mxj history kernel=marlin) || fail "history --json"
[ "$(jq '.series | length' <<<"$out")" -eq 12 ] || fail "series: $out"
[ "$(jq '.change_points | length' <<<"$out")" -eq 1 ] || fail "change points: $out"
[ "$(jq -r '.change_points[0].before' <<<"$out")" = "${sha[3]}" ] || fail "before: $out"
[ "$(jq -r '.change_points[0].after' <<<"$out")" = "${sha[4]}" ] || fail "after: $out"
[ "$(jq '.change_points[0].index' <<<"$out")" -eq 6 ] || fail "index: $out"
has "$T/out" "tg32 fell"
has "$T/out" "between commits ${sha[3]:0:12} and ${sha[4]:0:12} (n=6 runs before, 6 after, p="
has "$T/out" "bisect: mxmatrix bisect kernel=marlin $AX1=$VAL $AX2=$VAL --repo $T/srv --good ${sha[3]} --bad ${sha[4]} --metric tg32"
grep -q "^${sha[4]:0:12} .*<- -" "$T/out" || fail "the first slow start is not marked: $(cat "$T/out")"
ok "marked at commit 4"

step="ordered by commit time, not by when it was measured"
# a fast commit measured last but committed before all others comes first
sha[0]=$(commit 4 0 2025-12-31T12:00:00Z)
measure
out=$(mxj history kernel=marlin) || fail "history --json"
[ "$(jq -r '.series[0].commit' <<<"$out")" = "${sha[0]}" ] || fail "first: $(jq -c '[.series[].commit]' <<<"$out")"
[ "$(jq '.series[0].committed_at' <<<"$out")" = "$(date -d 2025-12-31T12:00:00Z +%s)" ] || fail "time: $out"
[ "$(jq '.change_points | length' <<<"$out")" -eq 1 ] || fail "change points: $out"
[ "$(jq -r '.change_points[0].before' <<<"$out")" = "${sha[3]}" ] || fail "before: $out"
[ "$(jq '.change_points[0].n_before' <<<"$out")" -eq 8 ] || fail "n_before: $out"
ok "commit 0 first, the change still after commit 3"

step="the same configuration by its run and its key"
run=$(jq -r '.series[0].run' <<<"$out")
expect_exit 0 mx --json history "r$run"
[ "$(jq -r .config_key "$T/out")" = "$KEY" ] || fail "by run: $(cat "$T/out")"
expect_exit 0 mx --json history "$KEY"
[ "$(jq -r .config_key "$T/out")" = "$KEY" ] || fail "by key: $(cat "$T/out")"
expect_exit 5 mx history kernel=cutlass
has "$T/err" "no stored run has the configuration"
# prefill did not change; whether its series shows a change point is the unit test's false-alarm rate
# (test-changepoint): here the machine's load moves between commits, so only the series is checked
expect_exit 0 mx --json history kernel=marlin --metric pp512
[ "$(jq '.series | length' "$T/out")" -ge 12 ] && [ "$(jq -r .metric "$T/out")" = pp512 ] ||
        fail "pp512 series: $(head -c 400 "$T/out")"
expect_exit 0 mx history kernel=marlin --metric tg128
has "$T/out" "No stored L4 result with tg128"
ok "rRUN, unknown configuration, another metric, a missing one"

step="bad pins, an unreadable stored key"
expect_exit 2 mx history kernel=marlin,junk
has "$T/err" "'junk' is not of the form axis=value"
expect_exit 2 mx history kernel=marlin,kernel=cutlass
has "$T/err" "axis pinned twice"
# a stored key nothing here can read (no axis=value pairs) may be the one meant: an error naming it
db_query "INSERT INTO runs (job_id, seq, config_key, config_hash, config, reasons, queued_at, state, result)
          SELECT job_id, 9999, 'unreadable-key', '0000000000000000', '{}', '[]', queued_at, 'done', 'pass'
          FROM runs LIMIT 1" ||
        fail "insert"
expect_exit 1 mx history kernel=cutlass
has "$T/err" "the stored configuration key 'unreadable-key' is not axis=value pairs (unreadable)"
expect_exit 0 mx --json history "$KEY" # the whole key needs no walk past the unreadable one
db_query "DELETE FROM runs WHERE config_key = 'unreadable-key'"
ok "named, never dropped"

step="bounded reads"
out=$(mxj history kernel=marlin --points 4) || fail "history --points 4"
[ "$(jq '.series | length' <<<"$out")" -eq 4 ] || fail "--points 4: $out"
# the newest four starts: commit 0's two (measured last) and two of commit 6
[ "$(jq -r '[.series[].commit] | unique | length' <<<"$out")" -eq 2 ] || fail "--points 4: $out"
[ "$(jq '.work_max' <<<"$out")" -eq $((1 << 27)) ] || fail "work_max: $out"
[ "$(jq '.untested_segments' <<<"$out")" -eq 0 ] || fail "untested: $out"
expect_exit 2 mx history kernel=marlin --points 501
expect_exit 2 mx history kernel=marlin --points 0
for q in "SELECT config_key FROM runs WHERE config_key = 'x' LIMIT 1" \
         "SELECT MIN(config_key) FROM runs WHERE config_key > 'x'"; do
        db_query "EXPLAIN QUERY PLAN $q" | grep -q "INDEX runs_config_key" ||
                fail "not by the index: $q: $(db_query "EXPLAIN QUERY PLAN $q")"
done
ok "--points, the index"

step="the bisect line history prints is one bisect accepts"
# last: a step of it that ran would add to the configuration's series
out=$(mxj history kernel=marlin) || fail "history --json"
line=$(jq -r '.change_points[0].bisect' <<<"$out")
[[ "$line" == "mxmatrix bisect "* ]] || fail "bisect line: $line"
# every word a shell word as printed (no quoting needed here: names and SHAs are plain)
read -r -a words <<<"${line#mxmatrix }"
expect_exit 0 mx --json "${words[@]}"
bid=$(jq -r .bisection "$T/out")
[ "$(jq -r .config_key "$T/out")" = "$KEY" ] || fail "bisect took another configuration: $(cat "$T/out")"
expect_exit 0 mx bisect --cancel "$bid"
# the key in one word is bisect's other spelling: over its 128 characters a value, refused with the limit
expect_exit 2 mx bisect "$KEY" --repo "$T/srv" --good "${sha[3]}" --bad "${sha[4]}" --metric tg32
has "$T/err" "128"
ok "bisection $bid accepted for $KEY (${#KEY} characters), cancelled"

step="help"
expect_exit 0 mx history --help
has "$T/out" "CONFIG is rRUN"
has "$T/out" "--metric M"
has "$T/out" "--points N"
ok "from the protocol"
