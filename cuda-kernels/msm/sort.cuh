// Counting sort of (bucket, base) entries by bucket, one pass of windows at a
// time: steps 2-4 of pippenger.cuh (histogram, scan, scatter). Two ways:
//
// - Two levels (the default; windows of at most 2^19 buckets): a counting
//   sort by coarse bin (window, bucket >> F, F = 8: <= 2048 bins per pass,
//   so one window per pass at c = 20)
//   whose blocks count in shared memory and take positions from scanned
//   per-block counts (no global atomics), placing a tile of scalars'
//   entries grouped by bin in shared memory first so that each bin's run
//   goes out in consecutive lanes; then one block per bin sorts it by the
//   bucket's low F bits, tiled the same way. The cost: a temporary copy (5
//   bytes per entry: base word, fine index) and a second pass. H200, G1
//   2^27: count 4.9, place 41.3, fine 14.5 ms (60.7 vs 120.8 for the global
//   counters, session 20; the fine level untiled took 38.3). Without the
//   tile the placement stored entries one by one and took 15.8 ms at 2^24
//   (the sort 21 ms, slower than the global counters); so did a one-level
//   sort with 2^15 counters per block (165 ms at 2^27).
// - Global counters (any window width; where the two-level sort's window
//   width or scratch does not fit): one atomic on a global counter per
//   (scalar, window) in the histogram and another, with return, in the
//   scatter, which also stores each entry alone. At G1 2^24 (H200, ncu,
//   session 19) the histogram took 2.6 ms, the scatter 12.2 (2^27: 120.5 ms
//   in all): a warp's 32 scattered requests, atomics or stores, are what
//   costs (~35-45 G requests/s), not the counting.
#pragma once
#include "ff/fr.cuh"
#include "util/scan.cuh"

namespace msm {

/// Top bit of a sorted entry: subtract the base instead of adding it.
constexpr uint32_t NEG = 1u << 31;

/// Bits [lo, lo + c) of a canonical scalar (c <= 24, lo < 256: two limbs).
__device__ __forceinline__ uint32_t window_bits(const fr_t& s, uint32_t lo, uint32_t c) {
    const uint32_t li = lo >> 5, sh = lo & 31;
    uint64_t w = s.val[li];
    if (li < 7) w |= (uint64_t)s.val[li + 1] << 32;
    return (uint32_t)(w >> sh) & ((1u << c) - 1);
}

/// The windows one pass sorts: windows w0 <= w < w0 + wn of c bits. With
/// precomputed copies of the bases (copy j of base i = 2^(j k c) * base i,
/// stored at index i + j * stride), the scalar's windows split into copies
/// of k windows: window v of the pass gathers the scalar's windows j k + v
/// of every copy j into the same buckets, with base i + j * stride. Without
/// copies k = floor(255 / c) + 1 (every window) and stride = 0.
struct PassWindows {
    uint32_t c, w0, wn, k, stride;
};

/// Signed-digit recoding, one window at a time from the bottom: calls
/// `f(wl, d, offset)` for the pass's windows w0 <= wl + w0 < w0 + wn in
/// every copy (`offset`: the copy's first base index). Windows below `top`
/// fold digits above 2^(c-1) into a carry; window `top` = floor(255 / c)
/// holds fewer than c bits of a scalar below 2^255 plus the carry, so its
/// digit stays <= 2^(c-1).
template <class F>
__device__ __forceinline__ void for_each_digit(const fr_t& s, const PassWindows& p, F f) {
    const uint32_t c = p.c, top = 255 / c, half = 1u << (c - 1);
    // The last copy's windows of the pass end the walk (no copies: w0 + wn).
    const uint32_t w_end = min(top / p.k * p.k + p.w0 + p.wn, top + 1);
    uint32_t carry = 0, v = 0, offset = 0;
    for (uint32_t w = 0; w < w_end; w++) {
        uint32_t x = window_bits(s, w * c, c) + carry;
        int32_t d = (int32_t)x;
        carry = 0;
        if (x > half && w < top) {
            d = (int32_t)x - (int32_t)(1u << c);
            carry = 1;
        }
        if (v >= p.w0 && v < p.w0 + p.wn) f(v - p.w0, d, offset);
        if (++v == p.k) {
            v = 0;
            offset += p.stride;
        }
    }
}

/// Most entries one scalar gives a pass: a digit per window of the pass in
/// every copy.
__device__ __forceinline__ uint32_t entries_per_scalar(const PassWindows& p) {
    return p.wn * (255 / p.c / p.k + 1);
}

/// Global counters, step 2: counts[wl * buckets + |d| - 1] += 1 for
/// every nonzero digit.
__device__ __forceinline__ void histogram(const fr_t* others, uint64_t m, PassWindows p, uint32_t* counts) {
    const uint32_t buckets = 1u << (p.c - 1);
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (uint64_t)gridDim.x * blockDim.x) {
        for_each_digit(others[i], p, [&](uint32_t wl, int32_t d, uint32_t) {
            if (d != 0) atomicAdd(&counts[wl * buckets + (uint32_t)abs(d) - 1], 1u);
        });
    }
}

/// Global counters, step 4: entries[cursor[bucket]++] = base index | sign.
__device__ __forceinline__ void scatter(const fr_t* others, const uint32_t* others_base, uint64_t m,
                                        PassWindows p, uint32_t* cursor, uint32_t* entries) {
    const uint32_t buckets = 1u << (p.c - 1);
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t base = others_base[i];
        for_each_digit(others[i], p, [&](uint32_t wl, int32_t d, uint32_t offset) {
            if (d == 0) return;
            const uint32_t pos = atomicAdd(&cursor[wl * buckets + (uint32_t)abs(d) - 1], 1u);
            entries[pos] = (base + offset) | (d < 0 ? NEG : 0u);
        });
    }
}

/// Most coarse bins of one pass of the two-level sort: 16 windows x 2^7
/// (c = 16, F = 8) = 2048 counters, 8 KB of shared memory.
constexpr uint32_t COARSE_MAX = 2048;
/// Most fine buckets per coarse bin: 2^8 (the fine index is one byte).
constexpr uint32_t FINE_MAX = 256;

/// The coarse bin of digit d != 0 of the pass's window wl: wl * K + (|d| - 1) >> F.
__device__ __forceinline__ uint32_t coarse_bin(uint32_t wl, int32_t d, uint32_t K, uint32_t fine_bits) {
    return wl * K + (((uint32_t)abs(d) - 1) >> fine_bits);
}

/// Scalars [lo, hi) of job j of `jobs` over m scalars.
__device__ __forceinline__ void job_range(uint64_t m, uint32_t j, uint32_t jobs, uint64_t& lo, uint64_t& hi) {
    lo = m * j / jobs;
    hi = m * (j + 1) / jobs;
}

/// Two-level sort, level 1 counts: coarse bin g = wl * K + (b >> F),
/// K = 2^(c-1-F) bins per window; table[g * jobs + j] = entries of job j's
/// scalars in bin g. Launch any grid of blocks (jobs loop).
__device__ __forceinline__ void coarse_count(const fr_t* others, uint64_t m, PassWindows p, uint32_t fine_bits,
                                             uint32_t jobs, uint32_t* table) {
    __shared__ uint32_t count[COARSE_MAX];
    const uint32_t K = (1u << (p.c - 1)) >> fine_bits, G = p.wn * K;
    for (uint32_t j = blockIdx.x; j < jobs; j += gridDim.x) {
        for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) count[g] = 0;
        __syncthreads();
        uint64_t lo, hi;
        job_range(m, j, jobs, lo, hi);
        for (uint64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            for_each_digit(others[i], p, [&](uint32_t wl, int32_t d, uint32_t) {
                if (d != 0) atomicAdd(&count[coarse_bin(wl, d, K, fine_bits)], 1u);
            });
        }
        __syncthreads();
        for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) table[(uint64_t)g * jobs + j] = count[g];
        __syncthreads();
    }
}

/// Shared memory of `coarse_place` besides its tile of staged entries (7
/// bytes each: base word, fine index, bin; the host picks the tile from
/// the blocks per SM it launches for): three counters per coarse bin and
/// 32 words of scan scratch.
constexpr uint32_t PLACE_FIXED_BYTES = 3 * 4 * COARSE_MAX + 4 * 32;

/// Exclusive scan of v[0..n) in shared memory (n <= 2 * blockDim.x,
/// blockDim.x a multiple of 32, <= 1024); `warp_sums` holds 32 words.
/// Every thread of the block calls it.
__device__ __forceinline__ void block_exclusive_scan(uint32_t* v, uint32_t n, uint32_t* warp_sums) {
    const uint32_t t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const uint32_t a = 2 * t < n ? v[2 * t] : 0, b = 2 * t + 1 < n ? v[2 * t + 1] : 0;
    const uint32_t x = scan::warp_inclusive(a + b);
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) warp_sums[lane] = scan::warp_inclusive(lane < (blockDim.x >> 5) ? warp_sums[lane] : 0);
    __syncthreads();
    const uint32_t before = x - a - b + (warp ? warp_sums[warp - 1] : 0);
    if (2 * t < n) v[2 * t] = before;
    if (2 * t + 1 < n) v[2 * t + 1] = before + a;
    __syncthreads();
}

/// Two-level sort, level 1 places, after the exclusive scan of `table`:
/// each entry's base word (index | sign) and fine index (b & (2^F - 1)) at
/// its coarse bin's next position of this job.
///
/// A warp writing 32 entries to 32 unrelated places costs 32 memory
/// requests, and the H200 served ~35-45 G such requests/s (ncu, session
/// 19: an untiled version of this kernel took 15.8 ms at G1 2^24 for its
/// 2^29 one-entry stores while the same digits counted in 0.6 ms). So a
/// tile of scalars is first sorted by bin in shared memory, then each bin's
/// run goes out in consecutive lanes (~8 entries per bin and tile at 16
/// windows of 128 bins: 4-8x fewer requests). Launch with
/// PLACE_FIXED_BYTES + 7 * tile bytes of dynamic shared memory, tile >=
/// entries_per_scalar(p).
__device__ __forceinline__ void coarse_place(const fr_t* others, const uint32_t* others_base, uint64_t m,
                                             PassWindows p, uint32_t fine_bits, uint32_t jobs,
                                             const uint32_t* table, uint32_t* tmp_entry, uint8_t* tmp_fine,
                                             uint32_t tile) {
    extern __shared__ uint32_t smem[];
    uint32_t* out_pos = smem;                       // the job's next position per bin
    uint32_t* tile_start = smem + COARSE_MAX;       // the bin's first staged slot
    uint32_t* tile_fill = smem + 2 * COARSE_MAX;    // counts, then staging cursors
    uint32_t* warp_sums = smem + 3 * COARSE_MAX;    // scan scratch
    uint32_t* stage_entry = warp_sums + 32;
    uint16_t* stage_bin = (uint16_t*)(stage_entry + tile);
    uint8_t* stage_fine = (uint8_t*)(stage_bin + tile);
    const uint32_t K = (1u << (p.c - 1)) >> fine_bits, G = p.wn * K, fine_mask = (1u << fine_bits) - 1;
    // Scalars per tile: as many as the tile holds entries for, threads
    // looping. One per thread left the tile 1/16 full at one window per
    // pass (c = 20: G1 2^27 placement 166 ms against 41 at c = 16, ~1
    // entry per bin and tile; H200, session 22).
    const uint32_t T = max(1u, tile / entries_per_scalar(p));
    for (uint32_t j = blockIdx.x; j < jobs; j += gridDim.x) {
        for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) out_pos[g] = table[(uint64_t)g * jobs + j];
        uint64_t lo, hi;
        job_range(m, j, jobs, lo, hi);
        for (uint64_t t0 = lo; t0 < hi; t0 += T) {
            const uint64_t t_end = min(t0 + T, hi);
            for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) tile_fill[g] = 0;
            __syncthreads();
            // Count the tile's entries per bin.
            for (uint64_t i = t0 + threadIdx.x; i < t_end; i += blockDim.x)
                for_each_digit(others[i], p, [&](uint32_t wl, int32_t d, uint32_t) {
                    if (d != 0) atomicAdd(&tile_fill[coarse_bin(wl, d, K, fine_bits)], 1u);
                });
            __syncthreads();
            for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) tile_start[g] = tile_fill[g];
            __syncthreads();
            block_exclusive_scan(tile_start, G, warp_sums);
            for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) tile_fill[g] = tile_start[g];
            __syncthreads();
            // Stage them grouped by bin (the digits walked again: holding a
            // thread's up to 16 entries in registers would spill).
            for (uint64_t i = t0 + threadIdx.x; i < t_end; i += blockDim.x) {
                const uint32_t base = others_base[i];
                for_each_digit(others[i], p, [&](uint32_t wl, int32_t d, uint32_t offset) {
                    if (d == 0) return;
                    const uint32_t b = (uint32_t)abs(d) - 1, g = coarse_bin(wl, d, K, fine_bits);
                    const uint32_t k = atomicAdd(&tile_fill[g], 1u);
                    stage_entry[k] = (base + offset) | (d < 0 ? NEG : 0u);
                    stage_bin[k] = (uint16_t)g;
                    stage_fine[k] = (uint8_t)(b & fine_mask);
                });
            }
            __syncthreads();
            // Each bin's run to consecutive positions (tile_fill[G - 1] is
            // the tile's entry count: the last bin's end).
            const uint32_t staged = G ? tile_fill[G - 1] : 0;
            for (uint32_t k = threadIdx.x; k < staged; k += blockDim.x) {
                const uint32_t g = stage_bin[k];
                const uint32_t dst = out_pos[g] + (k - tile_start[g]);
                tmp_entry[dst] = stage_entry[k];
                tmp_fine[dst] = stage_fine[k];
            }
            __syncthreads();
            for (uint32_t g = threadIdx.x; g < G; g += blockDim.x) out_pos[g] += tile_fill[g] - tile_start[g];
            __syncthreads();
        }
    }
}

/// Entries per thread of one tile of the second level.
constexpr uint32_t FINE_ITEMS = 8;
/// Entries one tile of the second level stages in shared memory (5 bytes
/// each: base word, fine index) with 1024 threads: 40 KB, static.
constexpr uint32_t FINE_TILE = 1024 * FINE_ITEMS;

/// Two-level sort, level 2: block per coarse bin g (G = nbk / 2^F bins,
/// bin g spanning [table[g * jobs], table[(g + 1) * jobs])): counts its
/// fine buckets, writes their offsets off[g * 2^F + f] (bucket index
/// (w - w0) * 2^(c-1) + b, since b = (b >> F) * 2^F + f), and places its
/// entries. off[nbk] = the total. Launch with 1024 threads per block.
///
/// Tiled like the first level's placement: storing each entry alone cost
/// 38.3 ms at G1 2^27 (H200, session 19), one request per entry into 256
/// runs; a tile of 8192 entries grouped by fine bucket in shared memory
/// leaves ~32 consecutive entries (128 bytes) per bucket and tile.
__device__ __forceinline__ void fine_sort(const uint32_t* tmp_entry, const uint8_t* tmp_fine, const uint32_t* table,
                                          uint32_t jobs, uint32_t G, uint32_t fine_bits, uint32_t* entries,
                                          uint32_t* off) {
    __shared__ uint32_t cursor[FINE_MAX];      // the bucket's next position in `entries`
    __shared__ uint32_t tile_start[FINE_MAX];  // the bucket's first staged slot
    __shared__ uint32_t tile_fill[FINE_MAX];   // counts, then staging cursors
    __shared__ uint32_t warp_sums[32];
    __shared__ uint32_t stage_entry[FINE_TILE];
    __shared__ uint8_t stage_fine[FINE_TILE];
    const uint32_t nf = 1u << fine_bits, t = threadIdx.x;
    for (uint32_t g = blockIdx.x; g < G; g += gridDim.x) {
        const uint32_t s = table[(uint64_t)g * jobs], e = table[(uint64_t)(g + 1) * jobs];
        for (uint32_t f = t; f < nf; f += blockDim.x) cursor[f] = 0;
        __syncthreads();
        for (uint32_t q = s + t; q < e; q += blockDim.x) atomicAdd(&cursor[tmp_fine[q]], 1u);
        __syncthreads();
        block_exclusive_scan(cursor, nf, warp_sums);
        for (uint32_t f = t; f < nf; f += blockDim.x) {
            cursor[f] += s;
            off[(uint64_t)g * nf + f] = cursor[f];
        }
        __syncthreads();
        for (uint32_t q0 = s; q0 < e; q0 += FINE_ITEMS * blockDim.x) {
            // Item k of this thread: q0 + k * blockDim.x + t (coalesced).
            uint32_t entry[FINE_ITEMS];
            uint32_t fine[FINE_ITEMS];
#pragma unroll
            for (uint32_t k = 0; k < FINE_ITEMS; k++) {
                const uint32_t q = q0 + k * blockDim.x + t;
                fine[k] = q < e ? tmp_fine[q] : FINE_MAX;
                entry[k] = q < e ? tmp_entry[q] : 0;
            }
            for (uint32_t f = t; f < nf; f += blockDim.x) tile_fill[f] = 0;
            __syncthreads();
#pragma unroll
            for (uint32_t k = 0; k < FINE_ITEMS; k++)
                if (fine[k] < FINE_MAX) atomicAdd(&tile_fill[fine[k]], 1u);
            __syncthreads();
            for (uint32_t f = t; f < nf; f += blockDim.x) tile_start[f] = tile_fill[f];
            __syncthreads();
            block_exclusive_scan(tile_start, nf, warp_sums);
            for (uint32_t f = t; f < nf; f += blockDim.x) tile_fill[f] = tile_start[f];
            __syncthreads();
#pragma unroll
            for (uint32_t k = 0; k < FINE_ITEMS; k++) {
                if (fine[k] == FINE_MAX) continue;
                const uint32_t slot = atomicAdd(&tile_fill[fine[k]], 1u);
                stage_entry[slot] = entry[k];
                stage_fine[slot] = (uint8_t)fine[k];
            }
            __syncthreads();
            const uint32_t staged = min(e - q0, FINE_ITEMS * blockDim.x);
            for (uint32_t k = t; k < staged; k += blockDim.x) {
                const uint32_t f = stage_fine[k];
                entries[cursor[f] + (k - tile_start[f])] = stage_entry[k];
            }
            __syncthreads();
            for (uint32_t f = t; f < nf; f += blockDim.x) cursor[f] += tile_fill[f] - tile_start[f];
            __syncthreads();
        }
    }
    if (blockIdx.x == 0 && t == 0) off[(uint64_t)G * nf] = table[(uint64_t)G * jobs];
}

}  // namespace msm
