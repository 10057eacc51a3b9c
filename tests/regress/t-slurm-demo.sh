#!/usr/bin/env bash
# The demo sweep (matrix/demo-sim.json, feature=cutlass: 12 runs against mxsim,
# the target runner with L1 and the L1.5 kernel gate) through a real
# single-host Slurm (tests/slurm/cluster.sh, two nodes) and then through the
# local executor: every run must come out the same (result, level verdicts),
# with two runs in flight at a time under Slurm. Exit 0 pass, 1 fail, 77 skip.
set -u
MX_WAIT_S=${MX_WAIT_S:-300}
source "$(dirname "$0")/lib.sh"
cluster=$MX_SOURCE_DIR/tests/slurm/cluster.sh
[ -x "$MX_BUILD_DIR/daemon/mxmatrix-run" ] || skip "mxmatrix-run is not built"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
if ! command -v slurmctld >/dev/null; then
        [ "$(id -u)" = 0 ] && "$MX_SOURCE_DIR/tests/slurm/deps.sh" >"$T/deps.log" 2>&1
        command -v slurmctld >/dev/null || skip "Slurm is not installed and tests/slurm/deps.sh could not install it"
fi
C=$T/slurm
trap 'st=$?; bash "$cluster" stop "$C"; (exit $st); mx_cleanup' EXIT
bash "$cluster" start "$C"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "cannot start the test cluster"
source "$C/env"
export SLURM_CONF
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
MXD_MATRIX=$MX_SOURCE_DIR/matrix/demo-sim.json

mkdir -p "$T/shared"
cat >"$T/mxmatrixd.json" <<CONF
{"executor": "slurm",
 "slurm": {"gres": "gpu:1", "shared_dir": "$T/shared", "poll_interval": "0.3s",
           "run_program": "$MX_BUILD_DIR/daemon/mxmatrix-run"}}
CONF
# config_key result L1=verdict L1.5=verdict, one line per run, sorted.
results() {
        mxj show "$1" | jq -r '.runs[] | [.config_key, .result, .outcome, .crash_class // "-", (.levels | map(.level + "=" + .verdict) | join(" "))]
                | join(" | ")' | sort
}
in_flight() { mxj status | jq '.current.in_flight // [] | length'; }
job_done() { [ "$(job_field "$1" .job.state)" = done ]; }

step="demo sweep through Slurm"
mxd_start -- --config "$T/mxmatrixd.json"
job=$(submit feature=cutlass levels=L1,L1.5)
max=0
until job_done "$job"; do
        n=$(in_flight)
        [ "$n" -gt "$max" ] && max=$n
        sleep 0.2
done
results "$job" >"$T/slurm.txt"
[ "$max" -ge 2 ] || fail "at most $max run(s) in flight, want 2"
[ "$(db_query "SELECT count(*) FROM attempts WHERE slurm_job_id IS NULL")" = 0 ] || fail "an attempt has no job"
mxd_stop
ok "$(wc -l <"$T/slurm.txt") runs, up to $max in flight"

step="the same sweep, local"
MXD_STATE=$T/state-local
mxd_start
job=$(submit feature=cutlass levels=L1,L1.5)
wait_until "job $job to finish" job_done "$job"
results "$job" >"$T/local.txt"
# The demo's mix (seed 003): passes, expected crashes, L1.5 verdicts; not a list of nulls.
grep -q ' | pass | completed | - | L1=pass L1.5=pass' "$T/local.txt" || fail "no run passed both levels: $(cat "$T/local.txt")"
grep -q ' | xfail | crashed' "$T/local.txt" || fail "no expected crash: $(cat "$T/local.txt")"
mxd_stop
diff "$T/local.txt" "$T/slurm.txt" >"$T/out" || fail "Slurm and local results differ: $(cat "$T/out")"
[ "$(wc -l <"$T/local.txt")" = 12 ] || fail "want 12 runs, got $(wc -l <"$T/local.txt")"
[ -z "$(squeue --noheader --states=PENDING,RUNNING,COMPLETING)" ] || fail "Slurm still has jobs"
ok "12 runs, same results and verdicts as the local executor"
