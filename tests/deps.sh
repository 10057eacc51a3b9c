#!/usr/bin/env bash
# Install what building and testing mxmatrix needs on Debian 12 (idempotent).
set -euo pipefail
pkgs=(build-essential cmake pkg-config groff-base
      libevent-dev libjansson-dev libsqlite3-dev libsystemd-dev libcurl4-openssl-dev
      systemd sqlite3 util-linux procps psmisc curl valgrind jq
      libxml2-utils # xmllint: t-report checks the JUnit XML
      xz-utils python3-numpy python3-yaml # tests/real: the real llama-server, models made at test time
      clang libclang-rt-14-dev # libFuzzer targets (tests/fuzz/run.sh)
      chromium)                # the HTML report in a browser (unit/test-report-chromium; 122 MB, 25 packages)
missing=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
