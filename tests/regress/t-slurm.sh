#!/usr/bin/env bash
# Executor "slurm" against a real Slurm: a private single-host cluster
# (tests/slurm/cluster.sh: munged, slurmctld, two slurmd's n1 and n2 with one
# gpu gres each) started here and torn down at exit. A sweep of two runs goes
# through it with both in flight on different nodes; n1 is taken down mid-run
# (its run ends infra-error and comes back as attempt 2); the other run is
# cancelled (scancel); the daemon is killed mid-run with sbatch's reply
# "lost" (the job id wiped from the database) and restarted: it finds the job
# by name and reattaches instead of submitting again. Nothing is lost, nothing
# runs twice, nothing is left running. Exit 0 pass, 1 fail, 77 skip.
set -u
MX_WAIT_S=${MX_WAIT_S:-150} # a run sleeps 40 s; CI shares two cores
source "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || skip "the sqlite3 CLI is not installed (tests/deps.sh)"
cluster=$MX_SOURCE_DIR/tests/slurm/cluster.sh
[ -x "$MX_BUILD_DIR/daemon/mxmatrix-run" ] || skip "mxmatrix-run is not built"
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

mkdir -p "$T/shared"
cat >"$T/mxmatrixd.json" <<CONF
{"executor": "slurm",
 "slurm": {"gres": "gpu:1", "partition": "gpu", "shared_dir": "$T/shared", "poll_interval": "0.3s",
           "run_program": "$MX_BUILD_DIR/daemon/mxmatrix-run", "sbatch_args": ["--nodes=1"]}}
CONF
start() { mxd_start SLEEP=${SLEEP:-40} -- --config "$T/mxmatrixd.json"; }
slurm_of() { run_field "$1" ".run.attempt_history[-1].slurm.$2 // empty"; }
attempts_of() { run_field "$1" '.run.attempt_history | length'; }
slurm_running() { [ "$(slurm_of "$1" state)" = RUNNING ]; }
run_done() { run_in_state "$1" done; }
# Jobs Slurm ran (or runs) for one of our job names.
jobs_named() { squeue --noheader --states=all --name="$1" --format=%i | wc -l; }

step="two runs in flight"
start
job=$(submit feature=fast mode=sleep)
mapfile -t runs < <(job_runs "$job")
[ ${#runs[@]} = 2 ] || fail "want 2 runs, got ${#runs[@]}"
ra=${runs[0]} rb=${runs[1]}
wait_until "r$ra running in Slurm" slurm_running "$ra"
wait_until "r$rb running in Slurm" slurm_running "$rb"
na=$(slurm_of "$ra" node) nb=$(slurm_of "$rb" node)
[ -n "$na" ] && [ -n "$nb" ] && [ "$na" != "$nb" ] || fail "want two nodes, got '$na' and '$nb'"
[ "$(mxj status | jq '.current.in_flight | length')" = 2 ] || fail "status does not show 2 runs in flight"
mx show "r$ra" >"$T/out"
has "$T/out" "slurm: job $(slurm_of "$ra" job_id) on node $na (RUNNING)"
ok "r$ra on $na and r$rb on $nb at once; show names the job and node"

step="node down mid-run"
scontrol update nodename="$na" state=down reason=mxmatrix-test || fail "scontrol update failed"
first_ended() { [ "$(attempts_of "$ra")" -ge 2 ] || run_done "$ra"; }
wait_until "r$ra attempt 1 to end" first_ended
[ "$(run_field "$ra" '.run.attempt_history[0].outcome')" = infra-error ] ||
        fail "attempt 1 of r$ra: $(run_field "$ra" '.run.attempt_history[0]')"
run_field "$ra" '.run.attempt_history[0].message' >"$T/out"
has "$T/out" "NODE_FAIL on node $na"
[ "$(run_field "$ra" .run.state)" != done ] || fail "r$ra was not requeued after the node failure"
# Resuming is refused while the node still completes the killed job: try until it is back.
node_back() {
        scontrol update nodename="$na" state=resume 2>/dev/null
        sinfo --noheader --nodes="$na" --format=%t | grep -qvE 'down|drain'
}
wait_until "$na to come back" node_back
ok "r$ra lost with $na: infra-error, requeued"

step="cancel"
expect_exit 0 mx cancel "r$rb"
wait_until "r$rb to end" run_done "$rb"
[ "$(run_field "$rb" .run.result)" = cancelled ] || fail "r$rb: result $(run_field "$rb" .run.result)"
[ "$(run_field "$rb" '.run.attempt_history[-1].slurm.state')" = CANCELLED ] || fail "r$rb's job is not CANCELLED"
ok "r$rb cancelled through scancel"

step="restart mid-run, sbatch reply lost"
wait_until "r$ra attempt 2 running in Slurm" slurm_running "$ra"
name=$(slurm_of "$ra" job_name)
id=$(slurm_of "$ra" job_id)
mxd_stop KILL
db_query "UPDATE attempts SET slurm_job_id = NULL WHERE slurm_job_name = '$name'"
start
wait_until "r$ra to end" run_done "$ra"
[ "$(run_field "$ra" .run.result)" = pass ] || fail "r$ra: result $(run_field "$ra" .run.result)"
[ "$(attempts_of "$ra")" = 2 ] || fail "r$ra has $(attempts_of "$ra") attempts, want 2"
[ "$(slurm_of "$ra" job_id)" = "$id" ] || fail "r$ra's job id after the restart: $(slurm_of "$ra" job_id), want $id"
[ "$(jobs_named "$name")" = 1 ] || fail "Slurm ran $(jobs_named "$name") jobs named $name"
has "$MXD_LOG" "found Slurm job $id by its name"
ok "reattached to job $id by name; one job, one attempt, result pass"

step="nothing lost, nothing left"
[ "$(job_field "$job" '.job.state')" = done ] || fail "job $job: $(job_field "$job" '.job.state')"
total=$(db_query "SELECT count(*) FROM attempts")
[ "$total" = 3 ] || fail "$total attempts, want 3 (r$ra twice, r$rb once)"
[ -z "$(squeue --noheader --states=PENDING,RUNNING,COMPLETING)" ] || fail "Slurm still has jobs: $(squeue)"
[ "$(db_query "SELECT count(*) FROM attempts WHERE slurm_job_id IS NULL")" = 0 ] || fail "an attempt has no job id"
mxd_stop
[ "$MXD_STATUS" = 0 ] || fail "mxmatrixd exited $MXD_STATUS"
ok "3 attempts, 3 Slurm jobs, none running"
