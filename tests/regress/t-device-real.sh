#!/usr/bin/env bash
# What the issue-14 device check kept (tests/fixtures/device/real/, made by
# tests/device/real/run.sh on an NVIDIA H100 against the CUDA llama-server with
# a GPU-sized gpt-oss model), checked by tests/device/real/check.sh: the clean
# configuration passed L1-L5 with the default level settings, every tg row is
# within 5 % of the server's own "eval time" for the same requests, every pp
# row at most 5 % above and at most 25 % below its "prompt eval time" (TTFR
# also holds the server's request preparation), the kernel gate passed and
# failed on the real ncu report as it must. Then the check is shown to fail:
# a fixture whose L4 figures are doubled (the old defect read pp 3-10x high).
# Exit 0 pass, 1 fail.
set -u
source "$(dirname "$0")/lib.sh"
FIX=$MX_SOURCE_DIR/tests/fixtures/device/real
CHECK=$MX_SOURCE_DIR/tests/device/real/check.sh

step="the device check's outputs"
bash "$CHECK" "$FIX" >"$T/check.txt" 2>&1 || fail "$(grep FAIL "$T/check.txt" | head -5)"
n_tg=$(grep -c '^ok .* tg[0-9]' "$T/check.txt")
n_pp=$(grep -c '^ok .* pp[0-9]' "$T/check.txt")
[ "$n_tg" -ge 12 ] && [ "$n_pp" -ge 6 ] || fail "only $n_tg tg and $n_pp pp rows checked: $(head -5 "$T/check.txt")"
has "$T/check.txt" 'ncu gate=right: L1.5 pass'
has "$T/check.txt" 'ncu gate=wrong: L1.5 fail'
ok "$n_tg tg and $n_pp pp rows against the server's timings; the gate on the real ncu report"

step="the check fails figures the server contradicts"
cp -r "$FIX" "$T/bad"
chmod -R u+w "$T/bad"
mkdir "$T/bad/x" && tar -xJf "$T/bad/levels/runs.tar.xz" -C "$T/bad/x"
doc=$(ls "$T"/bad/x/runs/1/1/l4-bench.json)
jq '.tests |= map(.tps.values |= map(. * 2))' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
tar -cJf "$T/bad/levels/runs.tar.xz" -C "$T/bad/x" runs
rm -rf "$T/bad/x"
if bash "$CHECK" "$T/bad" >"$T/bad.txt" 2>&1; then
        fail "doubled L4 figures passed the check"
fi
grep -Eq '^FAIL: levels/runs/1/1 +pp2048 .* \+[0-9.]+ %' "$T/bad.txt" || fail "no pp row failed: $(head -3 "$T/bad.txt")"
ok "doubled figures fail: $(grep -c FAIL "$T/bad.txt") rows"
