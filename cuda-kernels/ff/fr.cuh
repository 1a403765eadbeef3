// BLS12-381 scalar field Fr, Montgomery form, 8 x 32-bit limbs: the same
// bytes as blstrs::Scalar in host memory, so vectors upload without
// conversion. The arithmetic is ff/field.cuh's (one of two backends); this
// header adds the few helpers our kernels share.
#pragma once
#include <cstdint>
#include "ff/field.cuh"

// x^e for a small exponent (square and multiply).
__device__ __forceinline__ fr_t fr_pow_u32(fr_t x, uint32_t e) {
    fr_t r = fr_one();
    while (e) {
        if (e & 1) r = fr_mul(r, x);
        x = fr_sqr(x);
        e >>= 1;
    }
    return r;
}
