#!/usr/bin/env bash
# rtb-learner pins its numeric kernels (learner/src/kernels.h): whatever OPENBLAS_CORETYPE the
# environment holds, it computes with OpenBLAS's Haswell kernels and ATen's AVX2 ones, so the same
# seed trains the same floats; RTB_NATIVE_KERNELS=1 keeps the environment's choice.
set -eu
LEARNER=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "SKIP: no AVX2/FMA on this CPU: nothing to pin"
  exit 0
fi
run() {  # run <out> <env...>: trains, prints the kernels line of its log
  local out=$1
  shift
  env -u RTB_NATIVE_KERNELS "$@" "$LEARNER" train --config "$SRC/tests/learner/tiny_learner.yaml" --algo dcmab \
    --out "$T/$out" --quiet 2>&1 | grep -o 'numeric kernels: .*'
}
fail() { echo "FAIL: $*"; exit 1; }

a=$(run a OPENBLAS_CORETYPE=Sandybridge ATEN_CPU_CAPABILITY=default)
[ "$a" = "numeric kernels: OpenBLAS Haswell, ATen avx2" ] || fail "pinned run says '$a'"
b=$(run b -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY)
[ "$b" = "numeric kernels: OpenBLAS Haswell, ATen avx2" ] || fail "pinned run says '$b'"
cmp -s "$T/a/dcmab/seed0/episodes.csv" "$T/b/dcmab/seed0/episodes.csv" ||
  fail "the same seed under two environments trained different floats"
cmp -s "$T/a/report.json" "$T/b/report.json" || fail "reports differ"
c=$(run c RTB_NATIVE_KERNELS=1 OPENBLAS_CORETYPE=Sandybridge)
[ "$c" = "numeric kernels: OpenBLAS Sandybridge, ATen cpu's" ] || fail "native run says '$c'"
echo "PASS: pinned kernels ($a), same floats under two environments; RTB_NATIVE_KERNELS keeps the environment's"
