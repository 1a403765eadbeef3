// a, b, c = A·z, B·z, C·z: one row of a constraint matrix per thread.
//
// The matrices are CSR over z = (inputs, aux): row r's entries are
// [row_starts[r], row_starts[r + 1]), each a column of z and an index into a
// small table of distinct coefficients (1,526 for the 2 KiB circuit, so the
// table stays in L1/L2). Rows are short (a 32 GiB partition averages 2.4
// entries per row of A, 1.0 of B, 2.2 of C), so a thread per row keeps the
// warp's loads of row_starts and cols coalesced and leaves z's gathers as the
// only scattered traffic. A coefficient equal to one (most entries) costs an
// addition, not a Montgomery product.
#pragma once
#include <cstdint>
#include "../ff/fr.cuh"

namespace abc {

// Rows longer than this are summed by a whole warp (`long_rows_product`):
// A's packing rows (2 KiB: 2,584 rows of 513-1,024 entries, 37 % of A's
// entries; 83 % of A's coefficients are not one) would otherwise keep 31
// lanes of their warp idle for every entry (measured: A 113 ms for 309 M
// entries at 32 GiB against B's 3.2 ms for 130 M).
constexpr uint32_t LONG_ROW = 32;

// Where a row's columns point in a repeated block (c2-abc's repeat
// module): block `block` of a run reads block 0's rows with input columns
// from input_from (below inputs) moved by block * input_step and aux
// columns from aux_from moved by block * aux_step. Block 0 (every
// unrepeated row) reads its columns as they are. A 32 GiB partition's 18
// challenges are one such run: 1/18 of the matrices stays resident.
struct col_shift {
    uint32_t inputs, input_from, input_step, aux_from, aux_step, block;
};

// Unpacked from three kernel arguments: (input_from | input_step << 32),
// (aux_from | aux_step << 32), (inputs | block << 32).
__device__ __forceinline__ col_shift make_shift(uint64_t input_rule, uint64_t aux_rule, uint64_t inputs_block) {
    return col_shift{(uint32_t)inputs_block, (uint32_t)input_rule, (uint32_t)(input_rule >> 32), (uint32_t)aux_rule,
                     (uint32_t)(aux_rule >> 32), (uint32_t)(inputs_block >> 32)};
}

__device__ __forceinline__ uint32_t shifted(uint32_t col, const col_shift& s) {
    if (s.block == 0) return col;
    if (col >= s.aux_from) return col + s.block * s.aux_step;
    if (col >= s.input_from && col < s.inputs) return col + s.block * s.input_step;
    return col;
}

__device__ __forceinline__ fr_t entry(const uint32_t* cols, const uint32_t* coeff_index, const fr_t* coeffs,
                                      const fr_t* z, uint32_t k, uint32_t one_index, const col_shift& s) {
    const fr_t v = z[shifted(cols[k], s)];
    const uint32_t c = coeff_index[k];
    return c == one_index ? v : fr_mul(v, coeffs[c]);
}

// out[r] = sum_k coeffs[coeff_index[k]] * z[cols[k]] for r < rows whose
// length is at most LONG_ROW (longer rows are left to long_rows_product,
// queued after this kernel); zero for rows <= r < out_len (the domain's
// padding, written in the same pass).
__device__ __forceinline__ void rows_product(fr_t* out, const uint32_t* row_starts, const uint32_t* cols,
                                             const uint32_t* coeff_index, const fr_t* coeffs, const fr_t* z,
                                             uint64_t rows, uint32_t one_index, uint64_t out_len,
                                             const col_shift s) {
    for (size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < out_len;
         r += (size_t)gridDim.x * blockDim.x) {
        fr_t acc = fr_zero();
        if (r < rows) {
            const uint32_t begin = row_starts[r], end = row_starts[r + 1];
            if (end - begin > LONG_ROW) continue;
            for (uint32_t k = begin; k < end; k++) acc = fr_add(acc, entry(cols, coeff_index, coeffs, z, k, one_index, s));
        }
        out[r] = acc;
    }
}

// The rows listed in long_rows (those longer than LONG_ROW), one warp each:
// lane l sums entries l, l + 32, ...; the lanes' sums are added by a
// shuffle tree. Field addition is exact, so any order gives the row's value.
__device__ __forceinline__ void long_rows_product(fr_t* out, const uint32_t* row_starts, const uint32_t* cols,
                                                  const uint32_t* coeff_index, const fr_t* coeffs, const fr_t* z,
                                                  const uint32_t* long_rows, uint64_t n_long, uint32_t one_index,
                                                  const col_shift s) {
    const uint32_t lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    for (size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; w < n_long; w += warps) {
        const uint32_t r = long_rows[w];
        const uint32_t begin = row_starts[r], end = row_starts[r + 1];
        fr_t acc = fr_zero();
        for (uint32_t k = begin + lane; k < end; k += 32) acc = fr_add(acc, entry(cols, coeff_index, coeffs, z, k, one_index, s));
        for (int offset = 16; offset > 0; offset >>= 1) {
            fr_t other;
            for (int i = 0; i < (int)(sizeof(acc.val) / sizeof(acc.val[0])); i++)
                other.val[i] = __shfl_down_sync(0xffffffffu, acc.val[i], offset);
            acc = fr_add(acc, other);
        }
        if (lane == 0) out[r] = acc;
    }
}

// The satisfaction check: the smallest i < n with a_i * b_i != c_i, by
// atomicMin into *first (left as is, the host's n, when every constraint
// holds). One product and a compare per constraint: at 32 GiB 130.3 M of
// them, a pass over 12.5 GB of a, b, c.
__device__ __forceinline__ void first_unsatisfied(const fr_t* a, const fr_t* b, const fr_t* c, uint64_t n,
                                                  unsigned long long* first) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (!fr_eq(fr_mul(a[i], b[i]), c[i])) atomicMin(first, (unsigned long long)i);
    }
}

// The compact witness expanded into z (offset applied by the caller's
// pointer): z[i] = 1 or 0 from bit i, then the values other than 0 and 1
// written at their indices (a second kernel on the same stream). A 32 GiB
// partition's aux: 16 MB of bits and a few M values instead of 4.2 GB.
__device__ __forceinline__ void witness_bits(fr_t* z, const uint64_t* bits, uint64_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        z[i] = ((bits[i >> 6] >> (i & 63)) & 1) ? fr_one() : fr_zero();
    }
}

__device__ __forceinline__ void witness_scatter(fr_t* z, const uint32_t* index, const fr_t* value, uint64_t m) {
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += (size_t)gridDim.x * blockDim.x) {
        z[index[k]] = value[k];
    }
}

}  // namespace abc
