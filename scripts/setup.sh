#!/usr/bin/env bash
# Installs every Debian package the project needs. Idempotent: skips what is installed.
# Usage (as root): scripts/setup.sh
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config lld git python3 curl
  clang libclang-rt-14-dev
  libboost1.81-dev libboost-url1.81-dev prometheus-cpp-dev
  libtorch-dev libopenblas0-openmp libblas-dev
  librocksdb-dev librdkafka-dev libspdlog-dev libsimdjson-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev zlib1g-dev libjemalloc-dev kcat wrk python3-torch
  chromium fonts-dejavu-core
  openjdk-17-jre-headless maven
  systemd prometheus
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi

# Debian's libtorch uses whatever BLAS the alternatives system points at; prefer OpenBLAS.
if command -v update-alternatives >/dev/null; then
  alt=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas | head -1 || true)
  if [[ -n "$alt" ]]; then
    update-alternatives --set libblas.so.3-x86_64-linux-gnu "$alt" >/dev/null 2>&1 || true
  fi
fi
