#!/bin/sh
# SPDX-License-Identifier: MIT
# Slurm and MUNGE for tests/regress/t-slurm.sh (Debian 12), without starting
# the system's services: the test runs its own private cluster.
set -e
command -v slurmctld >/dev/null && command -v munged >/dev/null && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
