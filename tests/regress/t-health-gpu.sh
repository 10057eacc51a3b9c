#!/usr/bin/env bash
# The GPU part of the health gate between runs (daemon/measure/health.c): the daemon's
# sampler reads the GPU through NVML (here the stand-in libfake-nvml.so that
# test-sampler uses, serving the H200 dump, plus FAKE_NVML_USED_FILE MiB that
# the test changes while the daemon watches). A run leaves 5000 MiB held on
# the GPU (as an escaped EngineCore would); the next run must not start: the
# queue pauses after health.settle_ms with the figures in the reason. Once the
# memory is back, resume runs it. A GPU that cannot be read (gpu_source nvml,
# no library) pauses the queue too, and consumes no run.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (tests/deps.sh)"
nvml=$MX_BUILD_DIR/tests/libfake-nvml.so
[ -e "$nvml" ] || skip "no $nvml (built with the unit tests)"

used=$T/gpu-used-mib
echo 0 >"$used"
cat >"$T/run.sh" <<EOF
#!/bin/sh
# MODE=leak: the run leaves GPU memory held; MODE=clean: it leaves nothing.
[ "\$MODE" = leak ] && echo 5000 >"$used"
[ "\$MODE" = hold ] && exec sleep 60
exit 0
EOF
cat >"$T/matrix.json" <<EOF
{ "matrix": 1, "name": "health-gpu",
  "target": { "profile": "command", "command": ["sh", "$T/run.sh"] },
  "axes": [ { "name": "mode", "values": [
      { "name": "clean", "env": { "MODE": "clean" } },
      { "name": "leak", "env": { "MODE": "leak" } },
      { "name": "hold", "env": { "MODE": "hold" } } ] } ],
  "baseline": { "mode": "clean" },
  "features": [
    { "name": "leak", "priority": 1, "set": { "mode": "leak" }, "hypothesis": "h",
      "criteria": [{ "metric": "tg32_tps", "min_gain_pct": 10 }], "status": "in-progress" },
    { "name": "hold", "priority": 2, "set": { "mode": "hold" }, "hypothesis": "h",
      "criteria": [{ "metric": "tg32_tps", "min_gain_pct": 10 }], "status": "in-progress" } ],
  "health": { "settle_ms": 1500, "memory_tolerance_mb": 1024 } }
EOF
export MXD_MATRIX=$T/matrix.json
cat >"$T/mxmatrixd.json" <<EOF
{ "gpu_source": "nvml", "nvml_library": "$nvml" }
EOF
job_done() { [ "$(job_field "$1" '.job.state')" = done ]; }
queue_paused() { [ "$(jq -r .paused <<<"$(mxj status)")" = true ]; }
attempts() { db_query "SELECT count(*) FROM attempts"; }

step="GPU memory left held by a run"
mxd_start FAKE_NVML_DUMP="$MX_SOURCE_DIR/tests/fixtures/gpu-h200/nvml.txt" FAKE_NVML_USED_FILE="$used" \
        -- --config "$T/mxmatrixd.json"
# feature=leak plans the baseline (clean), then the feature (leak); a second job
# queues runs behind the leak.
j1=$(submit feature=leak)
j=$(submit feature=leak)
wait_until "the queue to pause" queue_paused
reason=$(jqv "$(mxj status)" .pause_reason)
[[ $reason == *"health gate before the next run: GPU memory"*"5000 MiB above the idle level"* ]] ||
        fail "pause_reason: $reason"
[[ $reason == *"tolerance 1024 MiB"* ]] || fail "the tolerance is not named: $reason"
n=$(attempts)
[ "$n" = 2 ] || fail "$n attempts: the run after the leak started beside the held memory"
[ "$(db_query "SELECT count(*) FROM runs WHERE state = 'queued'")" = 2 ] || fail "the next run was consumed"
job_done "$j1" || fail "job $j1 is not done"
has "$MXD_LOG" "health gate"
ok "the run after the leak waits, the queue is paused with the figures"

step="memory back: resume runs the rest"
echo 0 >"$used"
mx resume >/dev/null || fail "resume"
wait_until "job $j to finish" job_done "$j"
[ "$(attempts)" = 4 ] || fail "not one attempt per run after resume"
ok "with the memory back to the idle level the next run starts"

step="each attempt's GPU and memory summary"
# Run 2 left 5000 MiB held: its own summary (scope "run") saw the memory rise.
sj=$(mxj show r2)
src=$(jq -r '.run.attempt_history[0].samples.run.source' <<<"$sj")
[ "$src" = nvml ] || fail "run 2's summary source: $src ($(jq -c '.run.attempt_history[0].samples' <<<"$sj"))"
peak=$(jq -r '.run.attempt_history[0].samples.run.memory.peak' <<<"$sj")
start=$(jq -r '.run.attempt_history[0].samples.run.memory.start' <<<"$sj")
[ $((peak - start)) -ge $((4900 * 1048576)) ] || fail "run 2's summary misses the 5000 MiB: start $start peak $peak"
expect_exit 0 "$MX_BIN" show r2
has "$T/out" "run memory (nvml"
ok "show r2 has the attempt's summary from NVML, with the memory it left held"

step="a run interrupted by the daemon's stop keeps its summary"
echo 0 >"$used" # job 2's leak run left its 5000 MiB: the gate paused the queue again
mx resume >/dev/null || fail "resume"
j=$(submit feature=hold mode=hold)
hold_running() { [ "$(db_query "SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id
        WHERE r.job_id = $j AND a.finished_at IS NULL")" = 1 ]; }
wait_until "the hold run to start" hold_running
sleep 1.5 # a sample or two of it
mxd_stop TERM
n=$(db_query "SELECT count(*) FROM samples s JOIN attempts a ON a.id = s.attempt_id JOIN runs r
        ON r.id = a.run_id WHERE r.job_id = $j AND s.scope = 'run'")
[ "$n" -ge 1 ] || fail "the interrupted attempt of job $j has no GPU and memory summary"
ok "the interrupted attempt's summary was stored at the stop"
mxd_start FAKE_NVML_DUMP="$MX_SOURCE_DIR/tests/fixtures/gpu-h200/nvml.txt" FAKE_NVML_USED_FILE="$used" \
        -- --config "$T/mxmatrixd.json"
mx cancel "$j" >/dev/null 2>&1
mxd_stop TERM

step="a GPU that cannot be read"
MXD_STATE=$T/state-nogpu
cat >"$T/mxmatrixd.json" <<EOF
{ "gpu_source": "nvml", "nvml_library": "$T/no-such-libnvidia-ml.so.1" }
EOF
mxd_start -- --config "$T/mxmatrixd.json"
j=$(submit feature=leak)
wait_until "the queue to pause" queue_paused
reason=$(jqv "$(mxj status)" .pause_reason)
[[ $reason == *"the GPU cannot be read (gpu_source nvml)"* ]] || fail "pause_reason: $reason"
[ "$(attempts)" = 0 ] || fail "a run started although the GPU cannot be read"
ok "an unreadable GPU pauses the queue before any run"
mxd_stop TERM
exit 0
