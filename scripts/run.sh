#!/usr/bin/env bash
# Installs what is missing, builds hcprp and starts `hcprp serve` (frontend, backend and Cluster Service
# simulator in one process, SQLite under ./var, HTTPS with the certificates it creates in ./var/tls on first
# start). Extra arguments go to `hcprp serve`, e.g.
#   scripts/run.sh --listen 127.0.0.1:9000 --profile realistic --time-scale 0.05
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHCPRP_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target hcprp hcpctl
exec build/hcprp serve --data-dir ./var "$@"
