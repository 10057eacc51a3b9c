#!/usr/bin/env bash
# What the issue-14 device check kept (tests/fixtures/device/real/, made by
# tests/device/real/run.sh on an NVIDIA H100 against the CUDA llama-server with
# a GPU-sized gpt-oss model), checked by tests/device/real/check.sh: the clean
# configuration passed L1-L5 with the default level settings, every tg row is
# within 5 % of the server's own "eval time" for the same requests, every pp
# row at most 5 % above its "prompt eval time" and explained within 5 % by
# the server's prompt evaluation plus the request preparation TTFR also holds
# (the row's preparation_ms), the rows' server columns (server_pp_tps,
# server_tg_tps) within 5 % of the log, the kernel gate passed and failed on
# the real ncu report as it must. Then the check is shown to fail: a fixture
# whose L4 figures are doubled (the old defect read pp 3-10x high), and one
# whose server columns are 20 % too high.
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

# The server's columns (server_pp_tps, server_tg_tps, preparation_ms: the final chunks' timings of the same
# requests) against the log, every pp row explained by the preparation; columns made 20 % too high fail.
step="the server's columns against the log"
n_col=$(grep -c '^ok   levels/runs/.* server column' "$T/check.txt")
n_prep=$(grep -c '^ok   levels/runs/.* = [0-9]* / (prompt_ms .* + preparation' "$T/check.txt")
[ "$n_col" -ge 18 ] && [ "$n_prep" -ge 6 ] || fail "$n_col server columns and $n_prep preparations checked: $(grep -m3 'server column' "$T/check.txt")"
grep -q '^skip levels/runs/' "$T/check.txt" && fail "rows were skipped: $(grep -m2 '^skip' "$T/check.txt")"
ok "$n_col server columns within 5 % of the log, $n_prep pp rows explained by the preparation"
rm -rf "$T/cols" && cp -r "$FIX" "$T/cols" && chmod -R u+w "$T/cols"
mkdir "$T/cols/x" && tar -xJf "$T/cols/levels/runs.tar.xz" -C "$T/cols/x"
doc=$T/cols/x/runs/1/1/l4-bench.json
jq '.tests |= map(if .server_pp_tps then .server_pp_tps *= 1.2 else . end |
                  if .server_tg_tps then .server_tg_tps *= 1.2 else . end)' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
tar -cJf "$T/cols/levels/runs.tar.xz" -C "$T/cols/x" runs && rm -rf "$T/cols/x"
if bash "$CHECK" "$T/cols" >"$T/cols.txt" 2>&1; then
        fail "server columns 20 % above the log passed"
fi
grep -Eq '^FAIL: levels/runs/1/1 +pp2048 +server column .* \+20\.[0-9]+ %' "$T/cols.txt" || fail "no server column failed: $(grep -m3 FAIL "$T/cols.txt")"
ok "server columns 20 % above the log fail: $(grep -c 'FAIL.*server column' "$T/cols.txt") rows"
