#!/usr/bin/env bash
# Issue 19 with the real llama-server (tests/real/README.md): fail-fast order
# and mxmatrix history on a real server's numbers and a real git tree.
#  1. a sweep of four configurations, the last a quantized V cache without
#     flash attention (-ctk q8_0 -ctv q8_0 -fa off: llama.cpp refuses it and
#     exits 1 before ready): fail-fast by default (more than 3 runs); follow
#     reports it crashed (quantized-v-needs-fa) in the first pass, before any
#     L4 begins; the three others make L4 on their second start;
#  2. the baseline measured twice more at each of two more commits of a git
#     tree the matrix records as its source: history lists the seven starts
#     by commit (the commit times git recorded, committed_at) with the real
#     tg32 of each, and, the server unchanged, marks no change point.
# Exit 0 pass, 1 fail, 77 skip (no server here: see lib.sh).
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"

step="server and model"
real_server
real_model llama
ok "$REAL_SERVER, $REAL_MODEL"

step="matrix"
g() { git_t -C "$T/srv" "$@"; }
mkdir -p "$T/srv" && g init -q && echo 1 >"$T/srv/n" && g add n &&
        GIT_COMMITTER_DATE=2026-01-01T00:00:00Z g commit -qm c1 || fail "git"
MXD_MATRIX=$T/matrix.json
jq -n --arg srv "$REAL_SERVER" --arg model "$REAL_MODEL" --arg tree "$T/srv" '{
  matrix: 1, name: "real-sweep",
  target: {profile: "llama-server", model: $model, served_model_name: "random",
    command: [$srv, "-m", "{model}", "--alias", "{served_model_name}", "--host", "{host}", "--port", "{port}",
              "-lv", "4", "--metrics", "--no-webui", "-t", "1", "-c", "2048"],
    ready: {timeout: "60s", interval: "100ms"},
    crash_signatures: [{class: "quantized-v-needs-fa", pattern: "quantized V cache requires flash_attn"}]},
  settings: {run_timeout: "5m", level_timeout: "3m", ready_timeout: "60s"},
  axes: [{name: "variant", values: [{name: "plain"}, {name: "b256", argv: ["-b", "256"]},
                                    {name: "ub128", argv: ["-ub", "128"]},
                                    {name: "qv-nofa", argv: ["-ctk", "q8_0", "-ctv", "q8_0", "-fa", "off"]}]},
         {name: "mode", values: [{name: "m"}]}],
  baseline: {variant: "plain", mode: "m"},
  levels: {run: ["L1", "L4"], L4: {pp: [128], tg: [32], depth: [0], runs: 3, warmup: 1}},
  metadata: {sources: {srv: $tree}, timeout_ms: 5000}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="fail-fast: the configuration that never boots, before any L4"
job=$(submit m --strategy full)
follow_job "$job"
cat "$T/follow"
broken=$(grep -n -m1 "variant=qv-nofa .*first pass (L1, L1.5) finished: crashed, crash class quantized-v-needs-fa" \
        "$T/follow" | cut -d: -f1)
l4=$(grep -n -m1 " L4 " "$T/follow" | cut -d: -f1)
[ -n "$broken" ] || fail "the refused configuration's first pass is not in follow's output"
[ -n "$l4" ] || fail "no L4 in follow's output"
[ "$broken" -lt "$l4" ] || fail "reported at line $broken, after L4 began at line $l4"
[ "$(grep -c " L4 pass" "$T/follow")" -eq 3 ] || fail "L4 passed $(grep -c " L4 pass" "$T/follow") times, want 3"
ok "line $broken, first L4 at line $l4"

step="history of the baseline over three commits"
for c in 2 3; do
        echo "$c" >"$T/srv/n" && g add n && GIT_COMMITTER_DATE=2026-01-0${c}T00:00:00Z g commit -qm "c$c" ||
                fail "git"
        for _ in 1 2; do
                j=$(submit plain)
                follow_job "$j" || fail "job $j: $(cat "$T/follow")"
        done
done
expect_exit 0 mx history variant=plain mode=m
cat "$T/out"
out=$(mxj history variant=plain mode=m) || fail "history --json"
[ "$(jq '.series | length' <<<"$out")" -eq 5 ] || fail "series: $(jq -c .series <<<"$out")"
[ "$(jq -r '.series[0].committed_at' <<<"$out")" = "$(date -d 2026-01-01T00:00:00Z +%s)" ] || fail "time: $out"
[ "$(jq '[.series[].value | select(. > 0)] | length' <<<"$out")" -eq 5 ] || fail "values: $out"
[ "$(jq '.change_points | length' <<<"$out")" -eq 0 ] || fail "a change point on an unchanged server: $out"
has "$T/out" "No change point"
ok "$(jq -c '[.series[].value | floor]' <<<"$out") t/s"
