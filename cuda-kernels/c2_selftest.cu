// The self-test module (c2-cuda feature `selftest`): the XYZZ formulas of
// ec/xyzz.cuh run on given points, and both field backends of ff/field.cuh
// side by side, for differential tests against blstrs and the throughput
// comparison of the backends. Test tooling only: a production binary does
// not carry these kernels.
#include "ff/fr.cuh"

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

#include "ec/xyzz.cuh"

// For each i, in affine form: out[4i] = a + b (mixed addition), out[4i+1] =
// a + b (xyzz + xyzz), out[4i+2] = 2a (xyzz doubling), out[4i+3] = 2a + b
// (a chain through all three formulas).
template <class O>
__device__ __forceinline__ void ec_selftest(const ec::affine<O>* a, const ec::affine<O>* b,
                                            ec::affine<O>* out, uint64_t n) {
    GRID_STRIDE(i, n) {
        ec::xyzz<O> p = ec::from_affine(a[i]);
        out[4 * i] = ec::to_affine(ec::add_mixed(p, b[i]));
        out[4 * i + 1] = ec::to_affine(ec::add(p, ec::from_affine(b[i])));
        ec::xyzz<O> d = ec::dbl(p);
        out[4 * i + 2] = ec::to_affine(d);
        out[4 * i + 3] = ec::to_affine(ec::add_mixed(d, b[i]));
    }
}

extern "C" __global__ void c2_g1_selftest(const ec::affine<fp_ops>* a, const ec::affine<fp_ops>* b,
                                          ec::affine<fp_ops>* out, uint64_t n) {
    ec_selftest(a, b, out, n);
}

extern "C" __global__ void c2_g2_selftest(const ec::affine<fp2_ops>* a, const ec::affine<fp2_ops>* b,
                                          ec::affine<fp2_ops>* out, uint64_t n) {
    ec_selftest(a, b, out, n);
}

// ---- the two field backends, named explicitly (not the one built for the
// production module) ----

// For each i: out[5i..5i+5] = a*b, a^2, a+b, a-b, 2a.
template <class O>
__device__ __forceinline__ void field_ops(const typename O::F* a, const typename O::F* b, typename O::F* out,
                                          uint64_t n) {
    GRID_STRIDE(i, n) {
        out[5 * i] = O::mul(a[i], b[i]);
        out[5 * i + 1] = O::sqr(a[i]);
        out[5 * i + 2] = O::add(a[i], b[i]);
        out[5 * i + 3] = O::sub(a[i], b[i]);
        out[5 * i + 4] = O::dbl(a[i]);
    }
}

// Throughput: thread i runs x <- x * y `iters` times from x = in[i], y =
// in[n + i] (one dependent chain; the other warps hide its latency) and
// writes x: the same values from either backend.
template <class O>
__device__ __forceinline__ void mul_chain(const typename O::F* in, typename O::F* out, uint64_t n, uint32_t iters) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    typename O::F x = in[i];
    const typename O::F y = in[n + i];
#pragma unroll 1
    for (uint32_t k = 0; k < iters; k++) x = O::mul(x, y);
    out[i] = x;
}

// Throughput of the MSM's inner step: acc <- acc + b (the bucket loop's
// inlined mixed addition) `iters` times from acc = a; writes a + iters * b.
template <class O>
__device__ __forceinline__ void add_chain(const ec::affine<O>* a, const ec::affine<O>* b, ec::affine<O>* out,
                                          uint64_t n, uint32_t iters) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    ec::xyzz<O> acc = ec::from_affine(a[i]);
    const ec::affine<O> q = b[i];
#pragma unroll 1
    for (uint32_t k = 0; k < iters; k++) acc = ec::add_mixed_inline(acc, q);
    out[i] = ec::to_affine(acc);
}

typedef fp_field<ecgpu_fp> ecgpu_g1;
typedef fp_field<sppark_fp> sppark_g1;
typedef fp2_field<ecgpu_fp> ecgpu_g2;
typedef fp2_field<sppark_fp> sppark_g2;

#define C2_FIELD_SELFTEST(NAME, FR, FP)                                                                      \
    extern "C" __global__ void c2_fr_ops_##NAME(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n) {       \
        field_ops<FR>(a, b, out, n);                                                                         \
    }                                                                                                        \
    extern "C" __global__ void c2_fp_ops_##NAME(const fp_t* a, const fp_t* b, fp_t* out, uint64_t n) {       \
        field_ops<FP>(a, b, out, n);                                                                         \
    }                                                                                                        \
    extern "C" __global__ void c2_fr_mul_chain_##NAME(const fr_t* in, fr_t* out, uint64_t n, uint32_t iters) { \
        mul_chain<FR>(in, out, n, iters);                                                                    \
    }                                                                                                        \
    extern "C" __global__ void c2_fp_mul_chain_##NAME(const fp_t* in, fp_t* out, uint64_t n, uint32_t iters) { \
        mul_chain<FP>(in, out, n, iters);                                                                    \
    }                                                                                                        \
    extern "C" __global__ void c2_g1_add_chain_##NAME(const ec::affine<NAME##_g1>* a,                        \
                                                      const ec::affine<NAME##_g1>* b,                        \
                                                      ec::affine<NAME##_g1>* out, uint64_t n, uint32_t iters) { \
        add_chain<NAME##_g1>(a, b, out, n, iters);                                                           \
    }                                                                                                        \
    extern "C" __global__ void c2_g2_add_chain_##NAME(const ec::affine<NAME##_g2>* a,                        \
                                                      const ec::affine<NAME##_g2>* b,                        \
                                                      ec::affine<NAME##_g2>* out, uint64_t n, uint32_t iters) { \
        add_chain<NAME##_g2>(a, b, out, n, iters);                                                           \
    }

C2_FIELD_SELFTEST(ecgpu, ecgpu_fr, ecgpu_fp)
C2_FIELD_SELFTEST(sppark, sppark_fr, sppark_fp)

// ---- Fr products on the FP64 pipe (ff/fr_fp64.cuh), beside the backends ----
#include "ff/fr_fp64.cuh"

// For each i: out[i] = a[i] * b[i] in blstrs' form by the FP64-pipe product
// (b times 16 first, as a table would store it).
extern "C" __global__ void c2_fr_mul_fp64(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n) {
    GRID_STRIDE(i, n) { out[i] = fp64::mul_by_table(a[i], fp64::times16(b[i])); }
}

// Throughput, as mul_chain: x <- x * y `iters` times (y times 16 once per
// thread; every product converts x to 52-bit limbs and back, as a drop-in
// fr_mul would).
extern "C" __global__ void c2_fr_mul_chain_fp64(const fr_t* in, fr_t* out, uint64_t n, uint32_t iters) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x = in[i];
    const fr_t y16 = fp64::times16(in[n + i]);
#pragma unroll 1
    for (uint32_t k = 0; k < iters; k++) x = fp64::mul_by_table(x, y16);
    out[i] = x;
}

// Two independent product chains per thread, to see whether the FP64 pipe
// adds throughput beside the integer one (the products of an NTT pass are
// independent in the same way): x <- x * y and z <- z * y, z starting at y,
// `iters` times each; out[i] = x * y^iters, out[n + i] = y^(iters + 1).
// `pair_sppark`: both chains by sppark's integer product (the baseline: two
// chains give the scheduler the same freedom); `pair_mixed`: z on the FP64
// pipe.
// Both chains of a pair kernel; `second(z)` is z * y by the second chain's
// product.
template <class Second>
__device__ __forceinline__ void mul_chain_pair(const fr_t* in, fr_t* out, uint64_t n, uint32_t iters, size_t i,
                                               const fr_t& y, Second second) {
    fr_t x = in[i], z = y;
#pragma unroll 1
    for (uint32_t k = 0; k < iters; k++) {
        x = sppark_fr::mul(x, y);
        z = second(z);
    }
    out[i] = x;
    out[n + i] = z;
}

extern "C" __global__ void c2_fr_mul_chain_pair_sppark(const fr_t* in, fr_t* out, uint64_t n, uint32_t iters) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t y = in[n + i];
    mul_chain_pair(in, out, n, iters, i, y, [&](const fr_t& z) { return sppark_fr::mul(z, y); });
}

extern "C" __global__ void c2_fr_mul_chain_pair_mixed(const fr_t* in, fr_t* out, uint64_t n, uint32_t iters) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t y = in[n + i];
    const fr_t y16 = fp64::times16(y);
    mul_chain_pair(in, out, n, iters, i, y, [&](const fr_t& z) { return fp64::mul_by_table(z, y16); });
}

// ---- fixed-base multiplication for the test kit's Groth16 set-up
// (c2-testkit setup::gpu: parameters from recorded constraint matrices) ----
//
// A comb over byte windows: table[w * 255 + d - 1] = d * 2^(8w) * g for the
// 32 windows w of a 255-bit scalar and the digits d in 1..=255 (built on the
// host, 8,160 affine points: 783 KB in G1, 1.6 MB in G2, read through L2).
// out[i] = s_i * g: at most 32 mixed additions, no doubling, then one
// inversion for the affine form (the identity as (0, 0), blst's encoding).
// scalars: 4 little-endian u64 limbs each, canonical (not Montgomery) form.
// The points are exact, so they are the host comb's and bellperson's wNAF
// points bit for bit.
template <class O>
__device__ __forceinline__ void comb_mul(const ec::affine<O>* table, const uint64_t* scalars, uint64_t n,
                                         ec::affine<O>* out) {
    GRID_STRIDE(i, n) {
        ec::xyzz<O> acc = ec::infinity<O>();
#pragma unroll 1
        for (uint32_t limb = 0; limb < 4; limb++) {
            const uint64_t word = scalars[4 * i + limb];
#pragma unroll 1
            for (uint32_t byte = 0; byte < 8; byte++) {
                const uint32_t digit = (uint32_t)(word >> (8 * byte)) & 0xff;
                if (digit != 0) acc = ec::add_mixed(acc, table[(8 * limb + byte) * 255 + digit - 1]);
            }
        }
        out[i] = ec::to_affine(acc);
    }
}

extern "C" __global__ void c2_g1_comb_mul(const ec::affine<fp_ops>* table, const uint64_t* scalars, uint64_t n,
                                          ec::affine<fp_ops>* out) {
    comb_mul(table, scalars, n, out);
}

extern "C" __global__ void c2_g2_comb_mul(const ec::affine<fp2_ops>* table, const uint64_t* scalars, uint64_t n,
                                          ec::affine<fp2_ops>* out) {
    comb_mul(table, scalars, n, out);
}
