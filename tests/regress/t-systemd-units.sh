#!/usr/bin/env bash
# The files in systemd/ against systemd's own tools: systemd-analyze verify
# finds nothing in the units (ExecStart pointed at the built daemon),
# systemd-analyze security --offline rates the service 3.0 or better,
# systemd-sysusers and systemd-tmpfiles apply their files to a scratch root,
# and the units agree with the daemon (its options, its default socket, the
# descriptor name it looks for, the user sysusers creates).
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
src=$MX_SOURCE_DIR/systemd
units=$T/units
mkdir -p "$units"
cp "$src/mxmatrixd.service" "$src/mxmatrixd.socket" "$units/"
sed -i "s|^ExecStart=/usr/sbin/mxmatrixd|ExecStart=$MXD_BIN|" "$units/mxmatrixd.service"
grep -q "^ExecStart=$MXD_BIN " "$units/mxmatrixd.service" ||
        fail "ExecStart does not start with /usr/sbin/mxmatrixd"

step="systemd-analyze verify"
(cd "$units" && systemd-analyze verify --man=no ./mxmatrixd.socket ./mxmatrixd.service) >"$T/out" 2>&1 ||
        fail "verify exited $?: $(cat "$T/out")"
[ ! -s "$T/out" ] || fail "verify is not clean: $(cat "$T/out")"
# The check can fail: a misspelt directive and a missing binary are reported.
sed -e 's/^NoNewPrivileges=/NoNewPrivilege=/' -e 's|^ExecStart=[^ ]*|ExecStart=/nonexistent/mxmatrixd|' \
        "$units/mxmatrixd.service" >"$units/broken.service"
(cd "$units" && systemd-analyze verify --man=no ./broken.service) >"$T/out" 2>&1 &&
        fail "broken.service verified"
has "$T/out" "Unknown key 'NoNewPrivilege'"
has "$T/out" "/nonexistent/mxmatrixd is not executable"
rm "$units/broken.service"
ok "mxmatrixd.service and mxmatrixd.socket verify without a word (a broken copy does not)"

step="systemd-analyze security"
(cd "$units" && systemd-analyze security --offline=true --threshold=30 ./mxmatrixd.service) >"$T/out" 2>&1 ||
        fail "exposure above 3.0 (exit $?): $(tail -3 "$T/out")"
score=$(grep -o 'Overall exposure level for mxmatrixd.service: [0-9.]*' "$T/out" | grep -o '[0-9.]*$')
[ -n "$score" ] || fail "no exposure level in: $(tail -3 "$T/out")"
awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' || fail "exposure $score > 3.0"
echo "exposure level of mxmatrixd.service: $score"
ok "exposure $score (threshold 3.0)"

root=$T/root
mkdir -p "$root/etc"

step="sysusers"
command -v systemd-sysusers >/dev/null || skip "systemd-sysusers is not installed"
systemd-sysusers --root="$root" "$src/sysusers.d-mxmatrix.conf" >"$T/out" 2>"$T/err" ||
        fail "systemd-sysusers exited $?: $(cat "$T/err")"
user=$(sed -n 's/^User=//p' "$units/mxmatrixd.service")
group=$(sed -n 's/^SocketGroup=//p' "$units/mxmatrixd.socket")
grep -q "^$user:x:[0-9]*:[0-9]*:mxmatrix test-matrix daemon:/var/lib/mxmatrix:" "$root/etc/passwd" ||
        fail "no user $user: $(cat "$root/etc/passwd")"
grep -q "^$group:x:[0-9]*:" "$root/etc/group" ||
        fail "no group $group for the socket: $(cat "$root/etc/group")"
[ "$(sed -n 's/^Group=//p' "$units/mxmatrixd.service")" = "$group" ] ||
        fail "the service's Group= is not $group"
printf 'u bad-user! - "x"\n' >"$T/bad-sysusers.conf"
systemd-sysusers --root="$root" --dry-run "$T/bad-sysusers.conf" >"$T/out" 2>&1 &&
        fail "a bad sysusers line passed"
has "$T/out" "not a valid user or group name"
ok "user $user and group $group created in a scratch root; a bad line is refused"

step="tmpfiles"
command -v systemd-tmpfiles >/dev/null || skip "systemd-tmpfiles is not installed"
systemd-tmpfiles --root="$root" --create "$src/tmpfiles.d-mxmatrix.conf" >"$T/out" 2>"$T/err" ||
        fail "systemd-tmpfiles exited $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "systemd-tmpfiles complained: $(cat "$T/err")"
[ "$(stat -c '%F %a %U:%G' "$root/run/mxmatrix")" = "directory 755 root:root" ] ||
        fail "/run/mxmatrix: $(stat -c '%F %a %U:%G' "$root/run/mxmatrix")"
ok "/run/mxmatrix 0755 root:root in a scratch root"

step="units agree with the daemon"
listen=$(sed -n 's/^ListenStream=//p' "$units/mxmatrixd.socket")
"$MXD_BIN" --help >"$T/out" || fail "mxmatrixd --help"
has "$T/out" "default $listen;"
env -u MXMATRIX_SOCKET "$MX_BIN" --help >"$T/out" || fail "mxmatrix --help"
has "$T/out" "else $listen)"
[ "$(sed -n 's/^FileDescriptorName=//p' "$units/mxmatrixd.socket")" = control ] ||
        fail "the socket's FileDescriptorName= is not 'control', the name mxmatrixd looks for"
# ExecStart's options are the daemon's: parse them, then stop at --help.
read -r -a exec_start <<<"$(sed -n 's/^ExecStart=//p' "$units/mxmatrixd.service")"
"${exec_start[@]}" --help >"$T/out" 2>"$T/err" || fail "ExecStart's options: $(cat "$T/err")"
[ "$(sed -n 's/^Type=//p' "$units/mxmatrixd.service")" = notify ] || fail "Type= is not notify"
grep -q '^WatchdogSec=' "$units/mxmatrixd.service" || fail "no WatchdogSec="
# A bound on memory (daemon and servers together), and an OOM kill of a server does not stop the unit.
grep -qE '^MemoryMax=[0-9]+(%|[KMGT])?$' "$units/mxmatrixd.service" || fail "no MemoryMax= bound"
grep -qx 'OOMPolicy=continue' "$units/mxmatrixd.service" || fail "no OOMPolicy=continue"
ok "socket $listen, descriptor name control, ExecStart options accepted"
