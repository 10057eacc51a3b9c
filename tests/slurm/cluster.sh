#!/bin/bash
# SPDX-License-Identifier: MIT
# A private single-host Slurm cluster for tests: munged, slurmctld and two
# slurmd's (nodes n1 and n2, each with one "gpu" gres and no device file),
# all under one directory, on ports no system Slurm uses.
#   cluster.sh start DIR   -> prints nothing; DIR/env holds SLURM_CONF etc.
#   cluster.sh stop DIR    -> kills exactly the daemons it started (pid files)
# Exit 77 with a reason when Slurm is not installed or will not start.
set -u
cmd=${1:?start|stop}
dir=${2:?directory}

skip() { echo "SKIP: $*" >&2; exit 77; }

stop() {
        local f pid
        for f in "$dir"/run/slurmd-n1.pid "$dir"/run/slurmd-n2.pid "$dir"/run/slurmctld.pid "$dir"/run/munged.pid; do
                [ -s "$f" ] || continue
                pid=$(cat "$f")
                kill "$pid" 2>/dev/null
        done
        for f in "$dir"/run/slurmd-n1.pid "$dir"/run/slurmd-n2.pid "$dir"/run/slurmctld.pid "$dir"/run/munged.pid; do
                [ -s "$f" ] || continue
                pid=$(cat "$f")
                for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                kill -9 "$pid" 2>/dev/null
                rm -f "$f"
        done
        # Job steps (slurmstepd) outlive slurmd by design; kill those under our spool dirs.
        for p in $(pgrep -x slurmstepd); do
                grep -qa "$dir" /proc/$p/cmdline /proc/$p/environ 2>/dev/null && kill -9 "$p" 2>/dev/null
        done
        return 0
}

if [ "$cmd" = stop ]; then stop; exit 0; fi

for b in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel; do
        command -v $b >/dev/null || skip "$b is not installed (tests/slurm/deps.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip "a private Slurm cluster needs root (slurmd runs jobs as their users)"

mkdir -p "$dir"/{run,log,spool/ctld,spool/n1,spool/n2,munge,etc} || exit 1
chmod 700 "$dir/munge"
base=$((20000 + (RANDOM % 20000)))
ctld_port=$base
cat > "$dir/etc/slurm.conf" <<CONF
ClusterName=mxtest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MinJobAge=600
KillWait=5
SlurmdTimeout=30
InactiveLimit=0
MpiDefault=none
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=localhost Port=$((base + 2)) CPUs=1 RealMemory=1000 Gres=gpu:1 State=UNKNOWN
NodeName=n2 NodeHostname=localhost Port=$((base + 3)) CPUs=1 RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=gpu Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$dir/etc/gres.conf" <<CONF
# No real GPU: /dev/null stands in for the device file (without a File the gpu plugin counts 0).
NodeName=n1,n2 Name=gpu Count=1 File=/dev/null
CONF
cat > "$dir/env" <<ENV
export SLURM_CONF=$dir/etc/slurm.conf
ENV
export SLURM_CONF=$dir/etc/slurm.conf

mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$dir/munge/munge.key"
munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pid" \
        --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force >/dev/null 2>&1 ||
        skip "munged would not start ($(tail -1 "$dir/log/munged.log" 2>/dev/null))"
slurmctld -f "$SLURM_CONF" >/dev/null 2>&1 || { stop; skip "slurmctld would not start ($(tail -2 "$dir/log/slurmctld.log"))"; }
for n in n1 n2; do
        slurmd -f "$SLURM_CONF" -N $n >/dev/null 2>&1 || { stop; skip "slurmd $n would not start ($(tail -2 "$dir/log/slurmd-$n.log"))"; }
done
for _ in $(seq 300); do
        idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c 'idle')
        [ "$idle" = 2 ] && exit 0
        sleep 0.1
done
sinfo -N >&2
tail -n 5 "$dir"/log/*.log >&2
stop
skip "the two Slurm nodes did not come up idle within 30 s"
