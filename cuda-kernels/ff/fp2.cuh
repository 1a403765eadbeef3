// Fp2 = Fp[u] / (u^2 + 1) and Fp inversion over any Fp backend (ecgpu.cuh
// or sppark.cuh), so a G2 formula runs on one backend throughout. Every
// result is fully reduced, so any backend gives the same limbs.
#pragma once

// a^(p-2) = 1/a (0 for 0): square-and-multiply over the 381 bits of p-2.
// Slow (~570 products) but only used off the hot path (final affine
// conversions, one inversion per batch of affine additions, tests).
template <class FP> __device__ __noinline__ typename FP::F fp_inv(typename FP::F a) {
    const uint32_t e[12] = {0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0,
                            0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
    typename FP::F r = FP::one();
    // Not unrolled: 381 inlined products would take cicc minutes to compile.
#pragma unroll 1
    for (int i = 11; i >= 0; i--)
#pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            r = FP::sqr(r);
            if ((e[i] >> b) & 1) r = FP::mul(r, a);
        }
    return r;
}

// A backend's Fp ops plus inversion: what ec/ needs of a field.
template <class FP> struct fp_field : FP {
    typedef typename FP::F F;
    static __device__ __forceinline__ F inv(F a) { return fp_inv<FP>(a); }
};

// c0 + c1 u, blst's layout (c0 first): the same bytes as blstrs::Fp2.
template <class T> struct fp2_storage {
    T c0, c1;
};

template <class FP> struct fp2_field {
    typedef typename FP::F B;
    typedef fp2_storage<B> F;
    static __device__ __forceinline__ F add(F a, F b) { return {FP::add(a.c0, b.c0), FP::add(a.c1, b.c1)}; }
    static __device__ __forceinline__ F sub(F a, F b) { return {FP::sub(a.c0, b.c0), FP::sub(a.c1, b.c1)}; }
    static __device__ __forceinline__ F dbl(F a) { return {FP::dbl(a.c0), FP::dbl(a.c1)}; }
    // Karatsuba: 3 Fp products. (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) +
    // ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u.
    static __device__ __forceinline__ F mul(F a, F b) {
        const B aa = FP::mul(a.c0, b.c0), bb = FP::mul(a.c1, b.c1);
        const B cross = FP::mul(FP::add(a.c0, a.c1), FP::add(b.c0, b.c1));
        return {FP::sub(aa, bb), FP::sub(FP::sub(cross, aa), bb)};
    }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 Fp products.
    static __device__ __forceinline__ F sqr(F a) {
        const B ab = FP::mul(a.c0, a.c1);
        return {FP::mul(FP::add(a.c0, a.c1), FP::sub(a.c0, a.c1)), FP::dbl(ab)};
    }
    static __device__ __forceinline__ F zero() { return {FP::zero(), FP::zero()}; }
    static __device__ __forceinline__ F one() { return {FP::one(), FP::zero()}; }
    static __device__ __forceinline__ bool eq(F a, F b) { return FP::eq(a.c0, b.c0) && FP::eq(a.c1, b.c1); }
    // 1/(c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2), since u^2 = -1.
    static __device__ __forceinline__ F inv(F a) {
        const B ni = fp_inv<FP>(FP::add(FP::sqr(a.c0), FP::sqr(a.c1)));
        return {FP::mul(a.c0, ni), FP::mul(FP::sub(FP::zero(), a.c1), ni)};
    }
};
