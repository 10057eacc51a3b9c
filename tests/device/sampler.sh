#!/usr/bin/env bash
# Device check of the GPU and memory sampler (daemon/measure/sampler.c): alloc-steps
# takes 512 MiB of device memory a second, 8 times, and holds it; the built
# sampler (mxmatrix-sample) watches it through NVML and through nvidia-smi,
# while nvidia-smi's own figures are taken beside them on the same clock.
# Checks: each source sees the 4096 MiB growth (the leak) within 64 MiB, its
# peak agrees with nvidia-smi's own within 64 MiB, and the process's own GPU
# memory as the sampler read it agrees with nvidia-smi's per-process figure.
# Everything goes to OUTDIR (keep it as tests/fixtures/device/sampler/: the
# unit test test-sampler reads it there); the figures are in sampler-figures.txt.
#   usage: sampler.sh DIR OUTDIR   (DIR made by sampler-stage.sh)
#   exit 0: every check held; 1: a check failed; 77: no nvidia-smi here
set -u
dir=$(cd "${1:?usage: sampler.sh DIR OUTDIR}" && pwd)
out=${2:?usage: sampler.sh DIR OUTDIR}
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log=$out/sampler.log
say() { echo "$*" | tee -a "$log"; }

if ! command -v nvidia-smi >/dev/null; then
        say "no nvidia-smi on this machine"
        exit 77
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log"
ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1 2>&1 | tee -a "$log"

# what the sampler asks nvidia-smi, kept as real fixtures of that exact shape
q=index,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem
nvidia-smi -i 0 --query-gpu=$q,clocks_event_reasons.active --format=csv,nounits >"$out/query-gpu-nounits.csv" 2>&1 ||
        nvidia-smi -i 0 --query-gpu=$q,clocks_throttle_reasons.active --format=csv,nounits \
                >"$out/query-gpu-nounits.csv" 2>&1
nvidia-smi -i 0 --query-compute-apps=pid,used_memory --format=csv,nounits >"$out/query-apps-idle.csv" 2>&1
# one sample from each source
for src in nvml nvidia-smi auto; do
        rc=0
        "$dir/mxmatrix-sample" --source $src >"$out/once-$src.json" 2>&1 || rc=$?
        say "mxmatrix-sample --source $src: exit $rc: $(head -c 400 "$out/once-$src.json")"
done

# the stepped allocation, watched three ways
"$dir/alloc-steps" 512 8 1000 3000 >"$out/alloc-steps.log" 2>&1 &
apid=$!
"$dir/mxmatrix-sample" --source nvml --interval 250 --until-exit $apid --pid $apid \
        >"$out/sampler-nvml.jsonl" 2>"$out/sampler-nvml.err" &
s1=$!
"$dir/mxmatrix-sample" --source nvidia-smi --interval 500 --until-exit $apid --pid $apid \
        >"$out/sampler-smi.jsonl" 2>"$out/sampler-smi.err" &
s2=$!
# nvidia-smi's own: "t_us,memory.used MiB,the process's used_memory MiB"
: >"$out/smi-own.csv"
while kill -0 $apid 2>/dev/null; do
        t=$(date +%s%6N)
        used=$(nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>&1)
        app=$(nvidia-smi -i 0 --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
                awk -F', *' -v p=$apid '$1 == p { print $2 }')
        echo "$t,$used,${app:-}" >>"$out/smi-own.csv"
        if [ ! -e "$out/query-apps-peak.csv" ] && grep -q 'event=hold' "$out/alloc-steps.log"; then
                nvidia-smi -i 0 --query-compute-apps=pid,process_name,used_memory --format=csv,nounits \
                        >"$out/query-apps-peak.csv" 2>&1
        fi
        sleep 0.2
done
wait $apid
say "alloc-steps exit $?"
wait $s1
say "sampler nvml exit $?"
wait $s2
say "sampler nvidia-smi exit $?"
cat "$out/alloc-steps.log" >>"$log"

# figures (MiB): growth = peak - the last sample before the first step; own = nvidia-smi's own
first_step=$(awk '/event=step/ { sub(/.*t_us=/, ""); print $1; exit }' "$out/alloc-steps.log")
figures() { # FILE -> "baseline peak proc_peak samples" in MiB
        awk -v t0="${first_step:-0}" -v pid=$apid '
        /"sample"/ {
                at = 0; used = -1; proc = -1
                if (match($0, /"at":[0-9]+/)) at = substr($0, RSTART + 5, RLENGTH - 5) + 0
                if (match($0, /"gpu_mem_used":[0-9]+/)) used = substr($0, RSTART + 15, RLENGTH - 15) / 1048576
                if (match($0, "\"pid\":" pid ",\"gpu_bytes\":[0-9]+")) {
                        s = substr($0, RSTART, RLENGTH); sub(/.*:/, "", s); proc = s / 1048576
                }
                n++
                if (used >= 0 && at < t0) base = used
                if (used > peak) peak = used
                if (proc > ppeak) ppeak = proc
        }
        END { printf "%.0f %.0f %.0f %d\n", base, peak, ppeak, n }' "$1"
}
read -r nb np npp nn <<<"$(figures "$out/sampler-nvml.jsonl")"
read -r sb sp spp sn <<<"$(figures "$out/sampler-smi.jsonl")"
read -r ob op opp <<<"$(awk -F, -v t0="${first_step:-0}" '
        { if ($1 < t0) base = $2; if ($2 > peak) peak = $2; if ($3 > pp) pp = $3 }
        END { printf "%d %d %d\n", base, peak, pp }' "$out/smi-own.csv")"
{
        echo "nvml: samples=$nn baseline_mib=$nb peak_mib=$np growth_mib=$((np - nb)) process_peak_mib=$npp"
        echo "nvidia-smi: samples=$sn baseline_mib=$sb peak_mib=$sp growth_mib=$((sp - sb)) process_peak_mib=$spp"
        echo "own: readings=$(wc -l <"$out/smi-own.csv") baseline_mib=$ob peak_mib=$op growth_mib=$((op - ob))" \
                "process_peak_mib=$opp"
} | tee "$out/sampler-figures.txt" | tee -a "$log"

status=0
check() { # LABEL VALUE WANT TOLERANCE
        local d=$(($2 - $3))
        [ $d -lt 0 ] && d=$((-d))
        if [ $d -le "$4" ]; then say "ok   $1: $2 (want $3 +- $4)"; else say "FAIL $1: $2 (want $3 +- $4)"; status=1; fi
}
check "nvml growth (the leak)" $((np - nb)) 4096 64
check "nvidia-smi sampler growth (the leak)" $((sp - sb)) 4096 64
check "nvidia-smi own growth" $((op - ob)) 4096 64
check "nvml peak vs nvidia-smi own" "$np" "$op" 64
check "nvidia-smi sampler peak vs own" "$sp" "$op" 64
check "nvml process peak vs own per-process" "$npp" "$opp" 64
check "nvidia-smi sampler process peak vs own" "$spp" "$opp" 64
say "device check: $([ $status = 0 ] && echo 'all figures agree' || echo 'FIGURES DISAGREE')"
exit $status
