#!/usr/bin/env bash
# Device check of issue 14 on a lent NVIDIA GPU machine: the real daemon and
# client against the CUDA llama-server with a GPU-sized gpt-oss model.
#   usage: run.sh STAGE OUT PHASE...    (STAGE: made by stage.sh; OUT: kept files)
# Phases (each fits one device call of at most 10 minutes; the machine keeps
# WORK, default /tmp/mxmatrix-device-work, between calls while it stays warm:
# not under STAGE, which each call's carry replaces):
#   setup  unpack llama-server, generate the model (gpt-oss-20b's per-layer
#          shapes, 4 layers, about 100 s) into WORK
#   levels feature fa-on of llama-cuda.json with every level's default
#          settings: the baseline and the feature run, L1-L5
#   ncu    llama-cuda-ncu.json under Nsight Compute: L1 and the L1.5 kernel
#          gate on the real ncu report (a right gate passes, a wrong one fails)
# OUT receives each job's export (the report document), show --json of every
# run, the runs' directories as runs.tar.xz (server logs, l4-bench.json,
# kernels.csv; the device call returns no deep folders) and the daemon's log
# as daemon.log.xz; tests/device/real/check.sh checks them here (run it, then
# keep OUT as tests/fixtures/device/real/).
set -u
stage=$(cd "${1:?usage: run.sh STAGE OUT PHASE...}" && pwd)
out=${2:?usage: run.sh STAGE OUT PHASE...}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=${MX_DEVICE_WORK:-/tmp/mxmatrix-device-work}
mkdir -p "$work" "$out"
# jq: the machine's, else the one stage.sh carried (with its two libraries)
command -v jq >/dev/null || PATH=$stage/jq:$PATH
MX=$stage/bin/mxmatrix
MXD=$stage/bin/mxmatrixd
log=$out/run.log
say() { echo "$(date +%T) $*" | tee -a "$log"; }
# the result attempt of a run's show --json (L5's confirmation starts are later attempts of it)
ra='(.run as $r | ([$r.attempt_history[] | select(.n == $r.result_attempt)] | .[0]) // $r.attempt_history[-1])'

setup() {
        if [ ! -x "$work/llama-server" ]; then
                cat "$stage"/cuda/ls.part.* | xz -d | tar -x -C "$work" || return 1
        fi
        "$work/llama-server" --version 2>&1 | tail -n 2 | tee -a "$log"
        if [ ! -s "$work/gptoss-4l.gguf" ]; then
                PYTHONPATH=$stage/targets/gguf-tools python3 "$stage/targets/gguf-tools/make-random-gptoss-gguf.py" \
                        --out "$work/gptoss-4l.gguf.tmp" --layers 4 --embd 2880 --heads 64 --kv-heads 8 \
                        --head-dim 64 --experts 32 --experts-used 4 --ff-exp 2880 --ctx 131072 \
                        >"$out/model-gen.log" 2>&1 || { tail "$out/model-gen.log"; return 1; }
                mv "$work/gptoss-4l.gguf.tmp" "$work/gptoss-4l.gguf"
        fi
        ls -l "$work" | tee -a "$log"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log"
}

# job NAME MATRIX SUBMIT-ARGS...: a private daemon runs one submission to its end; OUT/NAME gets what it kept.
job() {
        local name=$1 matrix=$2 dir=$work/$1 j runs r
        shift 2
        rm -rf "$dir"
        mkdir -p "$dir" "$out/$name"
        jq --arg srv "$work/llama-server" --arg model "$work/gptoss-4l.gguf" \
                '(.target.command |= map(if . == "llama-server" then $srv else . end)) | .target.model = $model' \
                "$here/$matrix" >"$dir/matrix.json" || return 1
        export MXMATRIX_SOCKET=$dir/control.sock
        "$MXD" --foreground --log-level=debug --socket "$MXMATRIX_SOCKET" --state-dir "$dir/state" \
                --matrix "$dir/matrix.json" 2>"$out/$name/daemon.log" &
        local pid=$!
        for _ in $(seq 100); do "$MX" status >/dev/null 2>&1 && break; sleep 0.1; done
        "$MX" --json submit "$@" >"$out/$name/submit.json" || { kill $pid; return 1; }
        j=$(jq -r .job "$out/$name/submit.json")
        say "$name: job $j: $(jq -c '[.runs[] | .config_key]' "$out/$name/submit.json")"
        timeout 540 "$MX" follow "$j" >"$out/$name/follow.txt" 2>&1
        say "$name: follow exit $?: $(tail -n 1 "$out/$name/follow.txt")"
        "$MX" --json show "$j" >"$out/$name/show-job.json"
        runs=$(jq -r '.runs[].id' "$out/$name/show-job.json")
        for r in $runs; do
                "$MX" --json show "r$r" >"$out/$name/show-r$r.json"
                say "$name: r$r $(jq -r "$ra"' as $a | .run.result + ": " + ([$a.levels[] | "\(.level)=\(.verdict)"] | join(" "))' "$out/$name/show-r$r.json")"
        done
        "$MX" export "$j" -o "$out/$name/export.json" || say "$name: export failed"
        "$MX" report all "$j" -o "$out/$name/reports" >/dev/null 2>&1 || say "$name: report all failed"
        kill $pid
        wait $pid
        xz -f "$out/$name/daemon.log"
        # the runs' directories: server logs, level documents, profiler reports (not the model or the DB)
        (cd "$dir/state" && find runs -type f -size -50M -print0 | tar --null -T - -cf -) | xz -T0 >"$out/$name/runs.tar.xz"
        (cd "$out/$name" && tar -cJf reports.tar.xz reports && rm -rf reports)
}

for phase in "$@"; do
        say "=== $phase"
        case $phase in
        setup) setup || { say "setup failed"; exit 1; } ;;
        levels) job levels llama-cuda.json feature=fa-on ;;
        ncu) job ncu llama-cuda-ncu.json feature=wrong-gate ;;
        *) say "unknown phase $phase"; exit 2 ;;
        esac
done
du -sh "$out" | tee -a "$log"
