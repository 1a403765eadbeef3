// Exclusive prefix sums of u32 counts (bucket offsets, density-mask ranks).
// Three launches per level: scan_blocks (each block scans SCAN_BLOCK values
// and writes its total), the same on the block totals (recursively, by the
// host), then scan_add. Totals must fit in 32 bits (the host checks).
#pragma once
#include <cstdint>

namespace scan {

/// Threads per block of scan_blocks (a launch must use exactly this).
constexpr uint32_t THREADS = 1024;
/// Values per block: 4 per thread.
constexpr uint32_t BLOCK = 4 * THREADS;

__device__ __forceinline__ uint32_t warp_inclusive(uint32_t x) {
    const uint32_t lane = threadIdx.x & 31;
#pragma unroll
    for (uint32_t d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

/// In place: data[i] = sum of data[j], j < i, within block i / BLOCK;
/// block_sums[blk] = that block's total.
__device__ __forceinline__ void scan_blocks(uint32_t* data, uint64_t n, uint32_t* block_sums) {
    __shared__ uint32_t warp_sums[THREADS / 32];
    const uint64_t base = (uint64_t)blockIdx.x * BLOCK + threadIdx.x * 4;
    uint32_t v[4], local = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        v[k] = base + k < n ? data[base + k] : 0;
        local += v[k];
    }
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t incl = warp_inclusive(local);
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) warp_sums[lane] = warp_inclusive(warp_sums[lane]);
    __syncthreads();
    uint32_t run = incl - local + (warp ? warp_sums[warp - 1] : 0);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (base + k < n) data[base + k] = run;
        run += v[k];
    }
    if (threadIdx.x == THREADS - 1) block_sums[blockIdx.x] = run;
}

/// data[i] += block_offsets[i / BLOCK] (the scanned block totals).
__device__ __forceinline__ void scan_add(uint32_t* data, uint64_t n, const uint32_t* block_offsets) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        data[i] += block_offsets[i / BLOCK];
}

}  // namespace scan
