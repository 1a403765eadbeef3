// Radix-2 NTT over Fr: decimation-in-time forward passes, their exact
// inverses (decimation in frequency) for the inverse transforms.
//
// A forward transform is one in-place bit-reversal permutation, then log2(n)
// butterfly stages grouped into passes of up to 10 stages that run in shared
// memory (1024 elements = 32 KB per block), so a 2^27 transform reads and
// writes device memory 4 times (permutation + 3 passes) instead of 27.
// The inverse passes (stages_pass_inverse) take natural order to
// bit-reversed order, which the forward passes take as it is: compute_h's
// inverse -> coset-forward pairs need no permutation at all, and its seven
// transforms one bit reversal at the end.
//
// Stage s (1-based) pairs elements i and i + h, h = 2^(s-1), with twiddle
// omega^((i mod h) * n / 2h) = tw[(i mod h) << (log_n - s)], tw[k] = omega^k.
// A pass covering stages s0+1 .. s0+K sees index i as
//     i = hi * 2^(s0+K) + mid * 2^s0 + lo,   mid < 2^K, lo < 2^s0;
// a block holds all 2^K `mid` values for C consecutive `lo` values (C*2^K =
// 1024), so stages s0+1..s0+K never leave the block. Every transform runs in
// place. scripts/ntt_twist_model.py models these index computations (passes,
// transforms, compute_h's order) against the DFT.
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

// One element of a read-only table as two 16-byte loads through the
// read-only path. fr_t is a struct of eight 32-bit limbs, 4-byte aligned, so
// `tw[i]` compiles to eight 4-byte loads (PTX of session 16); every table
// and vector on the device starts 256-byte aligned (cuMemAlloc, and
// c2-cuda's DeviceArena::reserve) and elements are 32 bytes, so each
// element is 16-byte aligned.
__device__ __forceinline__ fr_t load_fr(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 a = __ldg(q), b = __ldg(q + 1);
    fr_t v;
    v.val[0] = a.x; v.val[1] = a.y; v.val[2] = a.z; v.val[3] = a.w;
    v.val[4] = b.x; v.val[5] = b.y; v.val[6] = b.z; v.val[7] = b.w;
    return v;
}

// omega_n^e for e < n from the table of omega^i, i < n/2 (omega^(n/2) = -1).
__device__ __forceinline__ fr_t root_power(const fr_t* tw, size_t e, size_t half) {
    return e < half ? load_fr(tw + e) : fr_sub(fr_zero(), load_fr(tw + (e - half)));
}

// out[i] = hi[i >> lo_bits] * lo[i & (2^lo_bits - 1)]: powers x^i from two
// small tables (x^(j * 2^lo_bits) and x^j), one multiplication per element.
__device__ __forceinline__ fr_t power_from_tables(const fr_t* hi, const fr_t* lo, size_t i,
                                                  uint32_t lo_bits) {
    return fr_mul(load_fr(hi + (i >> lo_bits)), load_fr(lo + (i & ((1u << lo_bits) - 1))));
}

// Where a pass's block sits: stages s0+1 .. s0+k of columns lo0 .. lo0+C-1
// (C = 2^c_bits) of row `hi`. Element e of the block (mid = e >> c_bits,
// l = e & (C-1)) is data[base + (mid << s0) + l].
struct PassBlock {
    uint32_t c_bits, k, s0, lo0;
    size_t base;
    __device__ __forceinline__ PassBlock(uint32_t s0_, uint32_t k_, uint32_t c_bits_)
        : c_bits(c_bits_), k(k_), s0(s0_) {
        const uint32_t lo_tiles = (1u << s0) >> c_bits;
        const uint32_t hi = blockIdx.x / lo_tiles;
        lo0 = (blockIdx.x % lo_tiles) << c_bits;
        base = ((size_t)hi << (s0 + k)) + lo0;
    }
    __device__ __forceinline__ uint32_t elems() const { return 1u << (c_bits + k); }
    __device__ __forceinline__ uint32_t mid(uint32_t e) const { return e >> c_bits; }
    __device__ __forceinline__ uint32_t col(uint32_t e) const { return e & ((1u << c_bits) - 1); }
    __device__ __forceinline__ size_t index(uint32_t e) const { return base + ((size_t)mid(e) << s0) + col(e); }
    // The twist exponent of element e over omega_n: j * rev_k(mid) * 2^(log_n
    // - s0 - k) with j = lo0 + l; j * rev_k(mid) < 2^(s0 + k), so below n.
    __device__ __forceinline__ size_t twist(uint32_t e, uint32_t log_n) const {
        const size_t jm = (size_t)(lo0 + col(e)) * bit_reverse(mid(e), k);
        return jm << (log_n - s0 - k);
    }
    // Butterfly t of stage r: the pair (e0, e1) and `low` = mid0 mod 2^r.
    __device__ __forceinline__ void pair(uint32_t t, uint32_t r, uint32_t& e0, uint32_t& e1, uint32_t& low) const {
        const uint32_t l = t & ((1u << c_bits) - 1);
        const uint32_t m = t >> c_bits;      // butterfly index in mid space
        low = m & ((1u << r) - 1);
        const uint32_t mid0 = ((m >> r) << (r + 1)) | low;
        e0 = (mid0 << c_bits) | l;
        e1 = e0 + (1u << (r + c_bits));
    }
};

// A block's elements in shared memory as 8 planes of 32-bit limbs: limb i
// of element e at w[i * plane + e]. Lanes touching consecutive elements then
// touch consecutive words (one wavefront per limb; at most 2-way conflicts
// for the first stages' stride-2 pairs). Stored as whole 32-byte elements,
// lanes 32 bytes apart hit 4 of the 32 banks: ncu measured 9.5-way
// conflicts and 58 % excess shared wavefronts (2^26). Measured gain small:
// the three passes of 2^27 59.7 -> 58.5 ms (BENCHMARKS.md session 16); the
// L1 was still busy with the global side, hence the 16-byte chunks below.
struct SharedPlanes {
    uint32_t* w;
    uint32_t plane;  // words per plane: E + PLANE_PAD in the passes, a padded tile in the bit reversal
    __device__ __forceinline__ fr_t load(uint32_t e) const {
        fr_t v;
#pragma unroll
        for (int i = 0; i < 8; i++) v.val[i] = w[i * plane + e];
        return v;
    }
    __device__ __forceinline__ void store(uint32_t e, const fr_t& v) const {
#pragma unroll
        for (int i = 0; i < 8; i++) w[i * plane + e] = v.val[i];
    }
    // Half h (limbs 4h .. 4h+3) of element e.
    __device__ __forceinline__ uint4 load_chunk(uint32_t e, uint32_t h) const {
        const uint32_t* p = w + 4 * h * plane + e;
        return make_uint4(p[0], p[plane], p[2 * plane], p[3 * plane]);
    }
    __device__ __forceinline__ void store_chunk(uint32_t e, uint32_t h, uint4 c) const {
        uint32_t* p = w + 4 * h * plane + e;
        p[0] = c.x;
        p[plane] = c.y;
        p[2 * plane] = c.z;
        p[3 * plane] = c.w;
    }
};

// Words of padding per plane in the passes: lane q of a warp moves chunk
// (e = q / 2, h = q % 2), so one chunk word goes to bank (4 h * plane + e)
// mod 32; with plane = E + 4 (E a multiple of 32) that is 16 h + e + const:
// 32 distinct banks per warp. Unpadded, both halves of an element hit the
// same bank (2-way conflicts on every chunk).
constexpr uint32_t PLANE_PAD = 4;

// The same permutation through shared memory, for log_n >= 8: index i =
// (a, m, b) with a, b of 4 bits and m of log_n - 8 reverses to (rev(b),
// rev(m), rev(a)), so the 16 x 16 tile of one m maps onto the tile of rev(m).
// Block m (256 threads) loads its tile and its partner's (rows of 16
// consecutive elements: 512-byte runs), then writes each transposed into the
// other; the block with m > rev(m) has nothing to do. The element-wise swap
// above reads and writes single 32-byte elements scattered over the vector:
// 14.8 ms at 2^27, 814 GB/s (ncu: 72 % of peak memory throughput busy with
// scattered sectors), a fifth of a forward transform (BENCHMARKS.md session
// 16); tiled: 5.84 ms. Rows padded to 17 words so the transposed accesses
// spread over the banks, planes by 4 more words for the chunks' halves (as
// PLANE_PAD); elements move as 16-byte chunks, as in the passes.
__device__ __forceinline__ void bit_reverse_tiles(fr_t* data, uint32_t log_n) {
    constexpr uint32_t ROW = 17, PLANE = 16 * ROW + PLANE_PAD;
    __shared__ uint32_t tiles[2][8 * PLANE];
    const SharedPlanes own{tiles[0], PLANE}, partner{tiles[1], PLANE};
    const uint32_t mid_bits = log_n - 8;
    const uint32_t m = blockIdx.x, m2 = bit_reverse(m, mid_bits);
    if (m > m2) return;
    uint4* chunks = reinterpret_cast<uint4*>(data);
    // Chunk h of element (hi, mid, lo).
    auto at = [&](uint32_t hi, uint32_t mid, uint32_t lo, uint32_t h) {
        return 2 * (((size_t)hi << (log_n - 4)) | ((size_t)mid << 4) | lo) + h;
    };
    for (uint32_t q = threadIdx.x; q < 512; q += blockDim.x) {
        const uint32_t a = q >> 5, b = (q >> 1) & 15, h = q & 1;
        own.store_chunk(a * ROW + b, h, chunks[at(a, m, b, h)]);
        if (m != m2) partner.store_chunk(a * ROW + b, h, chunks[at(a, m2, b, h)]);
    }
    __syncthreads();
    // Position (a, m2, b) receives element (rev(b), m, rev(a)).
    for (uint32_t q = threadIdx.x; q < 512; q += blockDim.x) {
        const uint32_t a = q >> 5, b = (q >> 1) & 15, h = q & 1;
        const uint32_t src = bit_reverse(b, 4) * ROW + bit_reverse(a, 4);
        chunks[at(a, m2, b, h)] = own.load_chunk(src, h);
        if (m != m2) chunks[at(a, m, b, h)] = partner.load_chunk(src, h);
    }
}

// The dynamic shared memory of the pass kernels (one declaration: both
// kernels live in one module): 8 * (E + PLANE_PAD) words.
extern __shared__ uint32_t ntt_shared[];

// A pass block between device memory and shared memory in 16-byte chunks:
// chunk q is half q % 2 of element q / 2, so a warp moves 512 contiguous
// bytes of each run of C = 2^c_bits adjacent columns (C >= 2: 64-byte runs
// or longer; the first pass reads 32 KB in one run). Element by element, a
// lane read its 32-byte element as eight 4-byte loads, 32 bytes apart
// across the warp: eight instructions each touching 32 sectors for 4 bytes
// of each, the L1 doing the gathering (ncu at 2^26: L1 88-96 % busy).
__device__ __forceinline__ void load_block(const PassBlock& b, const fr_t* data, const SharedPlanes& sh) {
    const uint4* src = reinterpret_cast<const uint4*>(data);
    for (uint32_t q = threadIdx.x; q < 2 * b.elems(); q += blockDim.x) {
        const uint32_t e = q >> 1, h = q & 1;
        sh.store_chunk(e, h, src[2 * b.index(e) + h]);
    }
}

__device__ __forceinline__ void store_block(const PassBlock& b, fr_t* data, const SharedPlanes& sh) {
    uint4* dst = reinterpret_cast<uint4*>(data);
    for (uint32_t q = threadIdx.x; q < 2 * b.elems(); q += blockDim.x) {
        const uint32_t e = q >> 1, h = q & 1;
        dst[2 * b.index(e) + h] = sh.load_chunk(e, h);
    }
}

// acc[i] *= v (zinv null) or acc[i] = (acc[i] - v) * zinv for each element
// v of the block at its index i. One element per thread, moved as two
// 16-byte halves (adjacent lanes: adjacent elements within a run of C
// columns).
__device__ __forceinline__ void combine_block(const PassBlock& b, fr_t* acc, const fr_t* zinv,
                                              const SharedPlanes& sh) {
    uint4* out = reinterpret_cast<uint4*>(acc);
    const fr_t z = zinv != nullptr ? load_fr(zinv) : fr_zero();
    for (uint32_t e = threadIdx.x; e < b.elems(); e += blockDim.x) {
        const size_t i = b.index(e);
        const uint4 lo = out[2 * i], hi = out[2 * i + 1];
        fr_t x;
        x.val[0] = lo.x; x.val[1] = lo.y; x.val[2] = lo.z; x.val[3] = lo.w;
        x.val[4] = hi.x; x.val[5] = hi.y; x.val[6] = hi.z; x.val[7] = hi.w;
        const fr_t v = sh.load(e);
        x = zinv != nullptr ? fr_mul(fr_sub(x, v), z) : fr_mul(x, v);
        out[2 * i] = make_uint4(x.val[0], x.val[1], x.val[2], x.val[3]);
        out[2 * i + 1] = make_uint4(x.val[4], x.val[5], x.val[6], x.val[7]);
    }
}

// One pass of `k` stages starting after stage `s0`, with `c_bits` = log2(C):
// bit-reversed order in (after the permutation or the inverse passes),
// natural order out once every pass has run.
//
// Twiddles. Stage s = s0 + r + 1 pairs mid0 and mid0 + 2^r (bit r of mid0
// clear) of column j = lo0 + l with twiddle omega_{2^s}^(low * 2^s0 + j),
// low = mid0 mod 2^r, which is omega_{2^(r+1)}^low * omega_{2^s}^j. Instead
// of reading that from the table for every butterfly of every stage (k/2
// scattered 32-byte reads per element per pass; dropping stage 1's alone made
// a 2^26 transform 9 % faster, BENCHMARKS.md session 15), each element is
// "twisted" once by omega_{2^(s0+k)}^(j * rev_k(mid)); then the pass's
// butterflies need only omega_{2^(r+1)}^low, the 2^(k-1) roots of order
// 2^k, which stay in cache. Same outputs (the pass computes, per column, a
// size-2^k transform of the twisted column). Products per element per pass:
// (k - 1)/2 butterflies (stage r = 0 has twiddle 1) + 1 twist, against k/2
// (2^27: 79.15 -> 74.56 ms, BENCHMARKS.md session 16). The twist happens in
// stage r = 0, which reads every element once: the block arrives in shared
// memory as chunks, and no thread holds a whole element before that stage.
//
// With `acc` not null (the transform's last pass only: its outputs are the
// final, natural-order values) the pass does not write `data` back: it
// folds each output v at index i into acc[i], acc[i] *= v when `zinv` is
// null, acc[i] = (acc[i] - v) * zinv otherwise. compute_h's a·b and
// (a·b - c)/Z then cost no pass of their own: an element-wise step read two
// vectors and wrote one (12.9 GB at 2^27) after a pass that had written the
// same values out.
__device__ __forceinline__ void stages_pass(fr_t* data, const fr_t* tw, uint32_t log_n,
                                            uint32_t s0, uint32_t k, uint32_t c_bits,
                                            fr_t* acc = nullptr, const fr_t* zinv = nullptr) {
    const PassBlock b(s0, k, c_bits);
    const uint32_t E = b.elems();
    const SharedPlanes sh{ntt_shared, E + PLANE_PAD};
    const size_t half = (size_t)1 << (log_n - 1);
    // Every twist exponent of the first pass (s0 = 0) is 0.
    auto twisted = [&](uint32_t e) {
        const fr_t v = sh.load(e);
        const size_t x = s0 == 0 ? 0 : b.twist(e, log_n);
        return x == 0 ? v : fr_mul(v, root_power(tw, x, half));
    };

    load_block(b, data, sh);
    __syncthreads();

    for (uint32_t r = 0; r < k; r++) {
        for (uint32_t t = threadIdx.x; t < E / 2; t += blockDim.x) {
            uint32_t e0, e1, low;
            b.pair(t, r, e0, e1, low);
            fr_t x, y;
            if (r == 0) {
                // Twiddle 1 (r is the same for the whole block: no divergence).
                x = twisted(e0);
                y = twisted(e1);
            } else {
                // omega_{2^(r+1)}^low = omega_n^(low * 2^(log_n - r - 1)).
                x = sh.load(e0);
                y = fr_mul(sh.load(e1), load_fr(tw + ((size_t)low << (log_n - r - 1))));
            }
            sh.store(e0, fr_add(x, y));
            sh.store(e1, fr_sub(x, y));
        }
        __syncthreads();
    }

    if (acc != nullptr) {
        combine_block(b, acc, zinv, sh);
    } else {
        store_block(b, data, sh);
    }
}

// The inverse of stages_pass up to the factor 2^k: its stages run backwards
// with the inverse butterfly (u, v) -> (u + v, (u - v) w^-1), then the
// untwist. Run over the passes in reverse order, natural-order
// evaluations become n times the coefficients in bit-reversed order, the
// order the forward passes take: compute_h goes evaluations -> coefficients
// -> coset evaluations with no permutation in between (one bit reversal per
// compute_h instead of seven). w^-1 = omega_n^(n - x) = -omega_n^(n/2 - x).
//
// If `scale_hi` is not null every element is also multiplied by c x^i,
// i = rev(position) (the coefficient index it holds once all passes have
// run), from the power tables (hi, lo) of c x^i: the host passes them with
// the last pass (s0 = 0) only, so that 1/n and a coset shift g^i cost no
// pass of their own. Untwist and scale happen in the last stage (r = 0),
// which writes every element once.
__device__ __forceinline__ void stages_pass_inverse(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0,
                                                    uint32_t k, uint32_t c_bits, const fr_t* scale_hi,
                                                    const fr_t* scale_lo, uint32_t lo_bits) {
    const PassBlock b(s0, k, c_bits);
    const uint32_t E = b.elems();
    const SharedPlanes sh{ntt_shared, E + PLANE_PAD};
    const size_t n = (size_t)1 << log_n, half = n >> 1;
    auto finish = [&](uint32_t e, fr_t v) {
        const size_t x = s0 == 0 ? 0 : b.twist(e, log_n);
        if (x != 0) v = fr_mul(v, root_power(tw, n - x, half));
        if (scale_hi != nullptr) {
            v = fr_mul(v, power_from_tables(scale_hi, scale_lo, bit_reverse((uint32_t)b.index(e), log_n), lo_bits));
        }
        sh.store(e, v);
    };

    load_block(b, data, sh);
    __syncthreads();

    for (uint32_t r = k; r-- > 0;) {
        for (uint32_t t = threadIdx.x; t < E / 2; t += blockDim.x) {
            uint32_t e0, e1, low;
            b.pair(t, r, e0, e1, low);
            const fr_t u = sh.load(e0), v = sh.load(e1);
            const fr_t d = fr_sub(u, v);
            if (r == 0) {
                // Twiddle 1 (low = 0 throughout stage 0).
                finish(e0, fr_add(u, v));
                finish(e1, d);
            } else {
                sh.store(e0, fr_add(u, v));
                // Twiddle 1 when low = 0: no product.
                sh.store(e1, low == 0 ? d : fr_mul(d, root_power(tw, n - ((size_t)low << (log_n - r - 1)), half)));
            }
        }
        __syncthreads();
    }

    store_block(b, data, sh);
}

}  // namespace ntt
