// The field arithmetic every kernel uses, from one of two backends chosen
// when the module is compiled (c2-cuda's build.rs, `C2_CUDA_FIELD`):
//   ecgpu.cuh   ec-gpu-gen's generated code (bellperson's arithmetic)
//   sppark.cuh  sppark's mont_t (SupraSeal's arithmetic), with -DC2_FIELD_SPPARK
// Both compute the same limbs (blstrs' Montgomery form, fully reduced), so
// every result, and every proof, is bit-identical whichever is built; the
// self-test module holds both for the differential test and the throughput
// comparison (c2-device-runner `--only field`).
//
//   fr_ops      Fr (NTT, coset scalings, a, b, c): add, sub, mul, sqr, ...
//   fp_ops      Fp (G1): the same plus inv
//   fp2_ops     Fp2 (G2) over the same Fp backend
#pragma once
#include <cstdint>
#include "ff/ecgpu.cuh"
#include "ff/fp2.cuh"
#include "ff/sppark.cuh"

#if defined(C2_FIELD_SPPARK)
typedef sppark_fr fr_ops;
typedef sppark_fp fp_backend;
#else
typedef ecgpu_fr fr_ops;
typedef ecgpu_fp fp_backend;
#endif
typedef fp_field<fp_backend> fp_ops;
typedef fp2_field<fp_backend> fp2_ops;
typedef fp2_ops::F fp2_t;

__device__ __forceinline__ fr_t fr_add(fr_t a, fr_t b) { return fr_ops::add(a, b); }
__device__ __forceinline__ fr_t fr_sub(fr_t a, fr_t b) { return fr_ops::sub(a, b); }
__device__ __forceinline__ fr_t fr_mul(fr_t a, fr_t b) { return fr_ops::mul(a, b); }
__device__ __forceinline__ fr_t fr_sqr(fr_t a) { return fr_ops::sqr(a); }
__device__ __forceinline__ fr_t fr_zero() { return fr_ops::zero(); }
__device__ __forceinline__ fr_t fr_one() { return fr_ops::one(); }
// Values are kept reduced (< r), so equal elements have equal limbs.
__device__ __forceinline__ bool fr_eq(fr_t a, fr_t b) { return fr_ops::eq(a, b); }
// Montgomery form -> canonical integer (a * R^-1): the MSM's scalar digits.
__device__ __forceinline__ fr_t fr_unmont(fr_t a) { return C2_GEN_FR(unmont)(a); }
// A canonical 256-bit integer reduced mod r (2^256 < 3r: at most two steps).
__device__ __forceinline__ fr_t fr_reduce(fr_t a) {
    while (C2_GEN_FR(gte)(a, C2_GEN_FR(P))) a = C2_GEN_FR(sub_)(a, C2_GEN_FR(P));
    return a;
}
