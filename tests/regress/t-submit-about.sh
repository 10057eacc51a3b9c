#!/usr/bin/env bash
# What submit says besides the runs (issue 16 items 1 and 4): the levels, an estimate (the settings'
# bound while nothing is stored, then the stored durations), a warning for criteria the levels cannot
# measure, and one for a paused queue (still queued, exit 0); status gives no ETA while paused.
# Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
# The fixture's levels.run (L1,L1.5) removed: without a selection anywhere, the protocol.
MXD_MATRIX=$T/faults.json
jq 'del(.levels)' "$MX_SOURCE_DIR/tests/fixtures/daemon/faults.json" >"$MXD_MATRIX" || fail "jq"
mxd_start

step="paused queue, levels that cannot judge the criterion"
mx pause >/dev/null || fail "pause"
expect_exit 0 mx submit feature=sim fault=none levels=L1
has "$T/out" "job 1 queued: 1 runs"
has "$T/out" "levels: L1"
has "$T/out" "estimate: at most"
has "$T/out" "no stored durations"
has "$T/err" "warning: criterion crashes needs L3"
has "$T/err" "warning: the queue is paused"
mxj submit feature=sim fault=none levels=L1 --dry-run >"$T/dry"
jq -e '.paused == true and .estimate.basis == "bound" and (.warnings | map(select(startswith("the queue is paused"))) | length) == 1 and .levels == ["L1"]' \
        "$T/dry" >/dev/null || fail "dry run: $(cat "$T/dry")"
ok "$step"

step="no ETA while paused"
# The job has started nothing; run one job through, pause, queue another and look at status.
mx resume >/dev/null || fail "resume"
follow_job 1
mx pause >/dev/null || fail "pause"
mx submit feature=sim fault=none levels=L1,L3 >/dev/null 2>&1 || fail "submit 2"
expect_exit 0 mx status
lacks "$T/out" "ETA"
ok "$step"

step="the estimate from stored durations"
expect_exit 0 mx submit feature=sim fault=none levels=L1 --dry-run
has "$T/out" "estimate: about"
has "$T/out" "from 1 stored attempts"
mxj submit feature=sim fault=none levels=L1,L3 --dry-run >"$T/dry"
jq -e '.estimate.basis == "partly-stored" and .estimate.guessed == ["L3"]' "$T/dry" >/dev/null ||
        fail "estimate: $(jq -c .estimate "$T/dry")"
ok "$step"

step="the protocol by default"
mxj submit feature=sim fault=none --dry-run >"$T/dry"
jq -e '.levels == ["L1", "L1.5", "L2", "L3", "L4", "L5"] and (.warnings | map(select(test("needs"))) | length) == 0' \
        "$T/dry" >/dev/null || fail "default levels: $(jq -c '.levels, .warnings' "$T/dry")"
ok "$step"
