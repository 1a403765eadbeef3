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

// out[r] = sum_k coeffs[coeff_index[k]] * z[cols[k]] for r < rows; zero for
// rows <= r < out_len (the domain's padding, written in the same pass).
__device__ __forceinline__ void rows_product(fr_t* out, const uint32_t* row_starts, const uint32_t* cols,
                                             const uint32_t* coeff_index, const fr_t* coeffs, const fr_t* z,
                                             uint64_t rows, uint32_t one_index, uint64_t out_len) {
    for (size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < out_len;
         r += (size_t)gridDim.x * blockDim.x) {
        fr_t acc = fr_zero();
        if (r < rows) {
            const uint32_t end = row_starts[r + 1];
            for (uint32_t k = row_starts[r]; k < end; k++) {
                const fr_t v = z[cols[k]];
                const uint32_t c = coeff_index[k];
                acc = fr_add(acc, c == one_index ? v : fr_mul(v, coeffs[c]));
            }
        }
        out[r] = acc;
    }
}

}  // namespace abc
