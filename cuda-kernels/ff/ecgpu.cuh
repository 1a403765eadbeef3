// Field arithmetic backend 1: ec-gpu-gen's generated code (the arithmetic of
// bellperson's kernels), written by c2-cuda's build.rs to
// $OUT_DIR/fr_gen.cuh with the storage types fr_t (Fr, 8 x 32-bit limbs) and
// fp_t (Fp, 12 limbs) and the name macros C2_GEN_FR(op) / C2_GEN_FP(op).
// Both backends share these storage types, so a kernel's arguments and
// buffers do not depend on which backend computes.
#pragma once
#include <cstdint>
#include "fr_gen.cuh"

// One ops struct per field: what the curve templates (ec/) and the NTT call.
#define C2_ECGPU_OPS(OPS, T, GEN)                                                          \
    struct OPS {                                                                           \
        typedef T F;                                                                       \
        static __device__ __forceinline__ F add(F a, F b) { return GEN(add)(a, b); }      \
        static __device__ __forceinline__ F sub(F a, F b) { return GEN(sub)(a, b); }      \
        static __device__ __forceinline__ F mul(F a, F b) { return GEN(mul)(a, b); }      \
        static __device__ __forceinline__ F sqr(F a) { return GEN(sqr)(a); }              \
        static __device__ __forceinline__ F dbl(F a) { return GEN(double)(a); }           \
        static __device__ __forceinline__ F zero() { return GEN(ZERO); }                  \
        static __device__ __forceinline__ F one() { return GEN(ONE); }                    \
        static __device__ __forceinline__ bool eq(F a, F b) { return GEN(eq)(a, b); }     \
    };
C2_ECGPU_OPS(ecgpu_fr, fr_t, C2_GEN_FR)
C2_ECGPU_OPS(ecgpu_fp, fp_t, C2_GEN_FP)
#undef C2_ECGPU_OPS
