// Fr products on the FP64 pipe (issue 16, deliverable 1's second half): the
// algorithm of scripts/fp64_fr_model.py, which checks every double operation
// below exact under emulated IEEE rounding and counts the instructions
// (155 FP64, 170-295 integer per product; predicted at best ~98 G/s beside
// sppark's integer product at 58.7 G/s, BENCHMARKS.md session 17).
//
// An element is 5 limbs of 52 bits held as exact doubles. A limb product
// a * b < 2^104 splits with no rounding error:
//     hi = fma_rz(a, b, 2^104)               = 2^104 + H 2^52, H = floor(ab / 2^52)
//     lo = fma_rn(a, b, (2^104 + 2^52) - hi) = 2^52 + (ab mod 2^52)
// Both stay in one binade, where a double's bit pattern is its value plus a
// fixed offset: the schoolbook columns are sums of bit patterns in 64-bit
// integer registers (wrapping), the offsets (compile-time constants) taken
// off once per column. Montgomery reduction by 52-bit digits, R = 2^260: a
// product of x R256 (blstrs' form) and 16 t R256 is x t R256, so a caller
// whose second factor is a table constant stores the table times 16.
//
// Test tooling for now (the self-test module): measured beside sppark's
// product before any production kernel uses it.
#pragma once
#include <cstdint>
// scripts/fp64_fr_model.py also compiles this header on the host (g++, the
// CUDA intrinsics emulated with the C library's fma under the matching
// rounding mode) and checks it against big integers: it defines
// C2_FP64_HOST_CHECK and brings its own fr_t and fr_add.
#ifndef C2_FP64_HOST_CHECK
#include "ff/fr.cuh"
#endif

namespace fp64 {

constexpr int LIMBS = 5;
constexpr uint64_t MASK52 = (1ull << 52) - 1;
// Bit patterns of 2^104, 2^104 + 2^52 and 2^52.
constexpr uint64_t BITS_C1 = 0x4670000000000000ull;
constexpr uint64_t BITS_C2 = 0x4670000000000001ull;
constexpr uint64_t BITS_2_52 = 0x4330000000000000ull;
// -r^-1 mod 2^52.
constexpr uint64_t MP = 0xffffeffffffffull;

// r in 52-bit limbs (exact doubles) and in 64-bit words.
__device__ __forceinline__ double r_limb(int j) {
    constexpr uint64_t R52[LIMBS] = {0xfffff00000001ull, 0x2fffe5bfefffull, 0x9a1d80553bda4ull, 0x7d483339d8080ull,
                                     0x73eda753299dull};
    return (double)R52[j];
}
__device__ __forceinline__ uint64_t r_word(int k) {
    constexpr uint64_t R64[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull,
                                 0x73eda753299d7d48ull};
    return R64[k];
}

// x < 2^52 as a double: its bits or-ed into 2^52's pattern, minus 2^52 (one
// logic and one FP64 instruction, no conversion unit).
__device__ __forceinline__ double limb_double(uint64_t x) {
    return __dadd_rn(__longlong_as_double((long long)(BITS_2_52 | x)), -__longlong_as_double((long long)BITS_2_52));
}

// The 8 x 32-bit limbs of an element (< 2^256) as 5 limbs of 52 bits.
__device__ __forceinline__ void to_limbs(const fr_t& v, double (&l)[LIMBS]) {
    uint64_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = (uint64_t)v.val[2 * i] | ((uint64_t)v.val[2 * i + 1] << 32);
    l[0] = limb_double(w[0] & MASK52);
    l[1] = limb_double(((w[0] >> 52) | (w[1] << 12)) & MASK52);
    l[2] = limb_double(((w[1] >> 40) | (w[2] << 24)) & MASK52);
    l[3] = limb_double(((w[2] >> 28) | (w[3] << 36)) & MASK52);
    l[4] = limb_double(w[3] >> 16);
}

// a * b as the bit patterns of its two halves (see the header).
__device__ __forceinline__ void split(double a, double b, uint64_t& hi, uint64_t& lo) {
    const double h = __fma_rz(a, b, __longlong_as_double((long long)BITS_C1));
    const double l = __fma_rn(a, b, __dadd_rn(__longlong_as_double((long long)BITS_C2), -h));
    hi = (uint64_t)__double_as_longlong(h);
    lo = (uint64_t)__double_as_longlong(l);
}

// a * b * 2^-260 mod r, fully reduced, for a, b < r in 52-bit limbs.
__device__ __forceinline__ fr_t mont_mul(const double (&a)[LIMBS], const double (&b)[LIMBS]) {
    // Columns as wrapping sums of bit patterns; off[k] is what the patterns
    // added to column k carry beyond their values (constant-folded).
    uint64_t t[2 * LIMBS] = {}, off[2 * LIMBS] = {};
#pragma unroll
    for (int i = 0; i < LIMBS; i++) {
#pragma unroll
        for (int j = 0; j < LIMBS; j++) {
            uint64_t h, l;
            split(a[i], b[j], h, l);
            t[i + j + 1] += h;
            off[i + j + 1] += BITS_C1;
            t[i + j] += l;
            off[i + j] += BITS_2_52;
        }
    }
    uint64_t carry = 0;
#pragma unroll
    for (int i = 0; i < LIMBS; i++) {
        uint64_t ti = t[i] - off[i] + carry;
        const double q = limb_double((ti * MP) & MASK52);
#pragma unroll
        for (int j = 0; j < LIMBS; j++) {
            uint64_t h, l;
            split(q, r_limb(j), h, l);
            if (j == 0) {
                ti += l - BITS_2_52;  // now a multiple of 2^52
            } else {
                t[i + j] += l;
                off[i + j] += BITS_2_52;
            }
            t[i + j + 1] += h;
            off[i + j + 1] += BITS_C1;
        }
        carry = ti >> 52;
    }
    uint64_t l[LIMBS];
#pragma unroll
    for (int k = 0; k < LIMBS; k++) {
        const uint64_t v = t[LIMBS + k] - off[LIMBS + k] + carry;
        l[k] = v & MASK52;
        carry = v >> 52;
    }
    // < 2r < 2^256: four 64-bit words, then one conditional subtraction of r.
    uint64_t w[4] = {l[0] | (l[1] << 52), (l[1] >> 12) | (l[2] << 40), (l[2] >> 24) | (l[3] << 28),
                     (l[3] >> 36) | (l[4] << 16)};
    uint64_t d[4], borrow = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint64_t s = w[k] - r_word(k);
        const uint64_t b1 = w[k] < r_word(k);
        d[k] = s - borrow;
        borrow = b1 | (s < borrow);
    }
    fr_t out;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint64_t v = borrow ? w[k] : d[k];
        out.val[2 * k] = (uint32_t)v;
        out.val[2 * k + 1] = (uint32_t)(v >> 32);
    }
    return out;
}

// x * y for x in blstrs' form and y16 = 16 y in blstrs' form: x * y in
// blstrs' form; the conversions to and from limbs included (a drop-in
// fr_mul where the second factor comes from a table stored times 16).
__device__ __forceinline__ fr_t mul_by_table(const fr_t& x, const fr_t& y16) {
    double a[LIMBS], b[LIMBS];
    to_limbs(x, a);
    to_limbs(y16, b);
    return mont_mul(a, b);
}

// 16 y (four modular doublings): what a table stores for mul_by_table.
__device__ __forceinline__ fr_t times16(fr_t y) {
#pragma unroll
    for (int k = 0; k < 4; k++) y = fr_add(y, y);
    return y;
}

}  // namespace fp64
