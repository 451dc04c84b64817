#!/usr/bin/env bash
# Installs every build and test dependency of hcprp from Debian packages.
# Safe to run repeatedly; installs only what is missing.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git clang lld clang-format clang-tidy libclang-rt-14-dev
  universal-ctags python3
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev sqlite3 libpq-dev postgresql postgresql-15-auto-failover libssl-dev openssl
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgoogle-perftools-dev  # tcmalloc, the programs' allocator
  wrk curl procps prometheus chromium
  iproute2 faketime  # network namespaces and clock steps of the partition tests
  python3-azure  # the Azure SDK for Python of the SDK client test, for /usr/bin/python3
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# Node.js (for the Azure SDK client tests) may come from another source; only add it when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
