// Field arithmetic backend 2: sppark's mont_t (Supranational's CUDA field
// template, the arithmetic under SupraSeal C2), included from the sppark
// crate's headers (c2-cuda depends on the crate; its build script exports
// the folder as DEP_SPPARK_ROOT and c2-cuda's build.rs passes it to nvcc).
//
// Same Montgomery representation as blstrs (R = 2^384 for Fp, 2^256 for Fr,
// 32-bit limbs little-endian, fully reduced after every operation), so the
// results are bit-identical to ecgpu.cuh's; only the instruction schedule
// differs: sppark interleaves the product and the reduction row by row in
// even/odd carry chains and finishes with a predicated (branch-free)
// subtraction, where ec-gpu-gen forms the whole double-width product first,
// reduces it in a second pass and ends on a compare-and-branch.
//
// The types exist only in nvcc's device pass (sppark defines them under
// __CUDA_ARCH__; its host-side variants need blst's C++ headers), so every
// body is guarded; the host pass only needs the declarations.
#pragma once
#include <cstdint>
#include "ff/ecgpu.cuh"
#if defined(__CUDA_ARCH__)
#include <ff/bls12-381.hpp>
#endif

namespace sp {

#if defined(__CUDA_ARCH__)
typedef bls12_381::fr_t fr_mont;
typedef bls12_381::fp_t fp_mont;
#else
// nvcc's host pass sees only declarations: placeholders for the types.
struct fr_mont {};
struct fp_mont {};
#endif

// The ops over storage type T (N limbs) computed by sppark's type M; zero,
// one and equality are limb patterns, shared with Base.
template <class T, class M, int N, class Base> struct mont_ops {
    typedef T F;
#if defined(__CUDA_ARCH__)
    // Storage <-> sppark's type: the same limbs in the same order; the
    // copies stay in registers.
    static __device__ __forceinline__ M to(const F& a) {
        M m;
#pragma unroll
        for (int i = 0; i < N; i++) m[i] = a.val[i];
        return m;
    }
    template <class S> static __device__ __forceinline__ F from(const S& m) {
        F a;
#pragma unroll
        for (int i = 0; i < N; i++) a.val[i] = m[i];
        return a;
    }
    static __device__ __forceinline__ F add(F a, F b) { return from(to(a) + to(b)); }
    static __device__ __forceinline__ F sub(F a, F b) { return from(to(a) - to(b)); }
    static __device__ __forceinline__ F mul(F a, F b) { return from(to(a) * to(b)); }
    // sppark squares through its double-width type: the cross products once.
    static __device__ __forceinline__ F sqr(F a) {
        M m = to(a);
        m.sqr();
        return from(m);
    }
    static __device__ __forceinline__ F dbl(F a) { return from(to(a) << 1); }
#else
    static __device__ F add(F a, F b);
    static __device__ F sub(F a, F b);
    static __device__ F mul(F a, F b);
    static __device__ F sqr(F a);
    static __device__ F dbl(F a);
#endif
    static __device__ __forceinline__ F zero() { return Base::zero(); }
    static __device__ __forceinline__ F one() { return Base::one(); }
    static __device__ __forceinline__ bool eq(F a, F b) { return Base::eq(a, b); }
};

}  // namespace sp

typedef sp::mont_ops<fr_t, sp::fr_mont, 8, ecgpu_fr> sppark_fr;
typedef sp::mont_ops<fp_t, sp::fp_mont, 12, ecgpu_fp> sppark_fp;
