#!/usr/bin/env bash
# The learner benchmark and its Python PyTorch baseline in one run; prints both and the ratio.
# Usage: bench/run_learner_bench.sh   (after scripts/build.sh; needs python3-torch for the baseline:
# scripts/setup.sh --bench installs it)
set -euo pipefail
cd "$(dirname "$0")/.."
# bench_learner pins the kernels training uses (learner/src/kernels.h); the Python baseline gets
# the same ones (RTB_NATIVE_KERNELS=1: both on the CPU's own choice).
if [ -z "${RTB_NATIVE_KERNELS:-}" ]; then
  export OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2
fi
out=$(build/release/bench/bench_learner --benchmark_min_time=2 2>/dev/null)
echo "$out"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "python3-torch is not installed: run scripts/setup.sh --bench for the baseline"; exit 0
fi
py=$(/usr/bin/python3 bench/python/dcmab_update.py 256 32)
echo "$py"
# The same Python with glibc told to keep freed memory, as the C++ learner does
# (KeepFreedMemoryForReuse): shows how much of the speed-up is the allocator setting.
pyk=$(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824 \
      /usr/bin/python3 bench/python/dcmab_update.py 256 32)
echo "$pyk (GLIBC_TUNABLES: freed memory kept)"
for b in 256 32; do
  cpp=$(echo "$out" | awk -v b="BM_DcmabUpdate/$b" '$1==b {print $2}')
  p=$(echo "$py" | awk -v b="batch=$b" '$2==b {print $3}')
  pk=$(echo "$pyk" | awk -v b="batch=$b" '$2==b {print $3}')
  f=$(echo "$out" | awk -v b="BM_Layer2GemmFloor/$b" '$1==b {print $2}')
  g=$(echo "$out" | awk -v b="BM_AllGemmFloor/$b" '$1==b {print $2}')
  ag=$(echo "$out" | awk -v b="BM_DcmabUpdateAutograd/$b" '$1==b {print $2}')
  awk -v c="$cpp" -v p="$p" -v k="$pk" -v b="$b" 'BEGIN {printf "batch %s: C++ %.2f ms, Python %.2f ms, speed-up %.2fx (against Python with freed memory kept, %.2f ms: %.2fx)\n", b, c, p, p/c, k, k/c}'
  awk -v c="$cpp" -v a="$ag" -v p="$p" -v b="$b" 'BEGIN {printf "batch %s: the same update through autograd (the previous version, the same floats) %.2f ms: %.2fx Python; the exact kernels are %.2fx faster than it\n", b, a, p/a, a/c}'
  awk -v f="$f" -v g="$g" -v p="$p" -v c="$cpp" -v b="$b" 'BEGIN {printf "batch %s: the update'"'"'s matrix products alone take %.2f ms (%.0f%% of the C++ update; the actors'"'"' 300 x 300 layers %.2f ms): no fp32 update through this BLAS on this core can beat this Python by more than %.2fx; 2.5x needs <= %.2f ms (%.2f ms against the issue'"'"'s 43 ms)\n", b, g, 100*g/c, f, p/g, p/2.5, (b == 256 ? 43 : 10)/2.5}'
done
