// The numeric kernels a training process uses are pinned, not chosen per CPU, so that a seed's
// floats do not depend on which kernels OpenBLAS and ATen would pick for the machine.
//
// OpenBLAS (sgemm, every network's matrix products) and ATen (elementwise and reductions) pick
// their kernels for the CPU they load on (or as OPENBLAS_CORETYPE says), and kernels round
// differently: the demo's pre-training with OpenBLAS's SkylakeX kernels and with its Haswell
// ones, on the same machine and seed, picked models 2.24x and 1.50x manual. PinNumericKernels
// sets OPENBLAS_CORETYPE=Haswell and ATEN_CPU_CAPABILITY=avx2 (AVX2 and FMA, on every x86-64
// server CPU since 2013) and re-executes the process, since OpenBLAS reads its variable when it
// loads (one more LibTorch load per start: ~0.3 s, measured with `rtb-learner --help`). Either
// variable set otherwise in the environment is overridden (some machines set OPENBLAS_CORETYPE for
// every process); RTB_NATIVE_KERNELS=1 keeps the environment's or the CPU's choice (e.g. AVX-512
// kernels for speed, at the price of other floats).
#pragma once

#include <string>

namespace rtb::learn {

// Returns only when the kernels are pinned, RTB_NATIVE_KERNELS is set, they cannot be pinned (no
// AVX2/FMA, not x86-64) or re-executing failed (then the kernels stay as loaded, said on stderr).
void PinNumericKernels(char** argv);

// What this process computes with, for its log: "OpenBLAS <core>, ATen <capability>" (the core
// OpenBLAS reports, "?" when the BLAS is not OpenBLAS; the capability ATen was told, or "cpu's").
std::string NumericKernels();

}  // namespace rtb::learn
