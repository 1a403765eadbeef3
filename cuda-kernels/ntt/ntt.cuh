// Radix-2 decimation-in-time NTT over Fr.
//
// The transform is: one in-place bit-reversal permutation, then log2(n)
// butterfly stages grouped into passes of up to 10 stages that run in shared
// memory (1024 elements = 32 KB per block), so a 2^27 transform reads and
// writes device memory 4 times (permutation + 3 passes) instead of 27.
//
// Stage s (1-based) pairs elements i and i + h, h = 2^(s-1), with twiddle
// omega^((i mod h) * n / 2h) = tw[(i mod h) << (log_n - s)], tw[k] = omega^k.
// A pass covering stages s0+1 .. s0+K sees index i as
//     i = hi * 2^(s0+K) + mid * 2^s0 + lo,   mid < 2^K, lo < 2^s0;
// a block holds all 2^K `mid` values for C consecutive `lo` values (C*2^K =
// 1024), so stages s0+1..s0+K never leave the block. Inverse transforms
// are forward ones followed by an index negation fused with their scaling
// (negate_index_scale), so every transform runs in place.
#pragma once
#include "ff/fr.cuh"

namespace ntt {

__device__ __forceinline__ uint32_t bit_reverse(uint32_t x, uint32_t bits) {
    return bits == 0 ? 0 : (__brev(x) >> (32 - bits));
}

// In place: data[i] <-> data[rev(i)]. The forward permutation is an
// involution, so swapping each pair once (from its smaller index) permutes
// without a second buffer: the transforms run in the vector they start in
// (one full vector less per NTT than out of place: 4 GiB at 2^27).
__device__ __forceinline__ void bit_reverse_in_place(fr_t* data, uint32_t log_n) {
    const uint32_t n = 1u << log_n;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint32_t j = bit_reverse(i, log_n);
        if (i < j) {
            const fr_t t = data[i];
            data[i] = data[j];
            data[j] = t;
        }
    }
}

// omega_n^e for e < n from the table of omega^i, i < n/2 (omega^(n/2) = -1).
__device__ __forceinline__ fr_t root_power(const fr_t* tw, size_t e, size_t half) {
    return e < half ? tw[e] : fr_sub(fr_zero(), tw[e - half]);
}

// One pass of `k` stages starting after stage `s0`, with `c_bits` = log2(C).
//
// Twiddles. Stage s = s0 + r + 1 pairs mid0 and mid0 + 2^r (bit r of mid0
// clear) of column j = lo0 + l with twiddle omega_{2^s}^(low * 2^s0 + j),
// low = mid0 mod 2^r, which is omega_{2^(r+1)}^low * omega_{2^s}^j. Instead
// of reading that from the table for every butterfly of every stage (k/2
// scattered 32-byte reads per element per pass; dropping stage 1's alone made
// a 2^26 transform 9 % faster, BENCHMARKS.md session 15), each element is
// "twisted" once on load by omega_{2^(s0+k)}^(j * rev_k(mid)); then the pass's
// butterflies need only omega_{2^(r+1)}^low, the 2^(k-1) roots of order
// 2^k, which stay in cache. Same outputs (the pass computes, per column, a
// size-2^k transform of the twisted column). Products per element per pass:
// (k - 1)/2 butterflies (stage r = 0 has twiddle 1) + 1 twist, against k/2.
__device__ __forceinline__ void stages_pass(fr_t* data, const fr_t* tw, uint32_t log_n,
                                            uint32_t s0, uint32_t k, uint32_t c_bits) {
    extern __shared__ fr_t sh[];
    const uint32_t C = 1u << c_bits;
    const uint32_t E = C << k;                 // elements in this block
    const uint32_t lo_tiles = (1u << s0) >> c_bits;
    const uint32_t hi = blockIdx.x / lo_tiles;
    const uint32_t lo0 = (blockIdx.x % lo_tiles) << c_bits;
    const size_t base = ((size_t)hi << (s0 + k)) + lo0;
    const size_t half = (size_t)1 << (log_n - 1);

    // Element e of the block: mid = e >> c_bits, l = e & (C-1).
    for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
        const uint32_t mid = e >> c_bits, l = e & (C - 1);
        fr_t v = data[base + ((size_t)mid << s0) + l];
        // The twist (j = 0 in the first pass, s0 = 0: nothing to do there).
        // j * rev_k(mid) < 2^(s0 + k), so the exponent is below n.
        const size_t jm = (size_t)(lo0 + l) * bit_reverse(mid, k);
        if (jm != 0) v = fr_mul(v, root_power(tw, jm << (log_n - s0 - k), half));
        sh[e] = v;
    }
    __syncthreads();

    for (uint32_t r = 0; r < k; r++) {
        for (uint32_t t = threadIdx.x; t < E / 2; t += blockDim.x) {
            const uint32_t l = t & (C - 1);
            const uint32_t m = t >> c_bits;      // butterfly index in mid space
            const uint32_t low = m & ((1u << r) - 1);
            const uint32_t mid0 = ((m >> r) << (r + 1)) | low;
            const uint32_t e0 = (mid0 << c_bits) | l;
            const uint32_t e1 = e0 + (1u << (r + c_bits));
            const fr_t x = sh[e0];
            // omega_{2^(r+1)}^low = omega_n^(low * 2^(log_n - r - 1)); stage
            // r = 0 has only the twiddle 1 (r is the same for the whole
            // block, so no divergence).
            const fr_t y = r == 0 ? sh[e1] : fr_mul(sh[e1], tw[(size_t)low << (log_n - r - 1)]);
            sh[e0] = fr_add(x, y);
            sh[e1] = fr_sub(x, y);
        }
        __syncthreads();
    }

    for (uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
        const uint32_t mid = e >> c_bits, l = e & (C - 1);
        data[base + ((size_t)mid << s0) + l] = sh[e];
    }
}

// out[i] = hi[i >> lo_bits] * lo[i & (2^lo_bits - 1)]: powers x^i from two
// small tables (x^(j * 2^lo_bits) and x^j), one multiplication per element.
__device__ __forceinline__ fr_t power_from_tables(const fr_t* hi, const fr_t* lo, size_t i,
                                                  uint32_t lo_bits) {
    return fr_mul(hi[i >> lo_bits], lo[i & ((1u << lo_bits) - 1)]);
}

// In place, k <= n / 2: data[k] <- data[-k] * p(k) and data[-k] <- data[k] *
// p(-k) (indices mod n, p(i) = hi[i >> lo_bits] * lo[i & mask]). A forward
// transform followed by this is the inverse transform of the same input
// (ifft(x)[k] = fft(x)[-k] / n), the 1/n and any coset factor folded into p:
// the scaling pass the inverse needs anyway, with the index negation in it.
__device__ __forceinline__ void negate_index_scale(fr_t* data, const fr_t* hi, const fr_t* lo, size_t n,
                                                   uint32_t lo_bits) {
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k <= n / 2;
         k += (size_t)gridDim.x * blockDim.x) {
        const size_t j = (n - k) & (n - 1);
        if (j == k) {
            data[k] = fr_mul(data[k], power_from_tables(hi, lo, k, lo_bits));
        } else {
            const fr_t at_k = data[j], at_j = data[k];
            data[k] = fr_mul(at_k, power_from_tables(hi, lo, k, lo_bits));
            data[j] = fr_mul(at_j, power_from_tables(hi, lo, j, lo_bits));
        }
    }
}

}  // namespace ntt
